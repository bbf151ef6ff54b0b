// Does the model get the speedup of one GPU generation over another? Rows
// measured on both generations with the same job (model, GPUs, sequence,
// batch, precision, objective), the same software (container) and the same
// system family (e.g. NVL72 racks, or 8-GPU HGX nodes) form pairs; each
// pair compares the measured ratio newer / older with the predicted one:
//   ratio error = (predicted_newer / predicted_older) /
//                 (measured_newer / measured_older) - 1.
// A pair at the same layout isolates the hardware; a pair whose recipes
// chose different layouts (the newer GPU's larger memory lets it use
// shallower pipelines, less recompute) also tests what the layouts do.
#pragma once

#include <string>
#include <vector>

namespace moetune::tests {

struct GenerationRow {
  std::string id;
  std::string job;        // model, GPUs, sequence, batch, precision, objective
  std::string container;  // the software; "" = unknown (never paired)
  std::string family;     // e.g. "nvl72", "hgx8"
  std::string generation; // e.g. "blackwell", "blackwell_ultra"
  std::string layout;
  double measured = 0;
  double predicted = 0;
};

struct GenerationPair {
  size_t older = 0, newer = 0;  // row indices
  bool same_layout = false;
  double measured_ratio = 0;   // measured newer / older
  double predicted_ratio = 0;  // predicted newer / older
  double ratio_error = 0;      // predicted_ratio / measured_ratio - 1
};

struct GenerationPairSummary {
  std::vector<GenerationPair> pairs;  // in order of the older row, then the newer
  int same_layout = 0;
  double mean_abs_error_same = 0, mean_signed_error_same = 0;  // same-layout pairs
  double mean_abs_error_own = 0, mean_signed_error_own = 0;    // different layouts
};

// Every (older, newer) pair of rows with equal job, container and family,
// generation `older` and `newer`. Rows without a container or with a
// non-positive measurement or prediction are skipped.
GenerationPairSummary PairGenerations(const std::vector<GenerationRow>& rows,
                                      const std::string& older, const std::string& newer);

}  // namespace moetune::tests
