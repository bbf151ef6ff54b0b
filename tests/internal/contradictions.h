// Published runs whose inputs are identical but whose measured throughput
// differs by more than an error band can hold: no model, however good, can
// predict all of them within the band. tests/validate reports such groups so
// that the accuracy figures say which errors are forced by the data.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace moetune::tests {

struct MeasuredRow {
  std::string id;
  std::string inputs;  // everything the prediction depends on, as text
  double measured = 0;
};

struct Contradiction {
  std::string inputs;
  std::vector<size_t> rows;  // indices into the given rows, in input order
  double low = 0;            // smallest and largest measured value
  double high = 0;
  // The smallest worst-case relative error any single prediction p can
  // have over the group. The extremes bind: p / low - 1 = 1 - p / high at
  // p = 2 low high / (low + high), where both errors are
  // (high - low) / (high + low).
  double best_error = 0;
};

// (high - low) / (high + low) for positive low <= high.
double BestWorstCaseError(double low, double high);

// Groups rows with identical `inputs` and returns the groups whose
// best_error exceeds `band` (e.g. 0.25), largest best_error first. Rows with
// a non-positive measured value are ignored.
std::vector<Contradiction> FindContradictions(const std::vector<MeasuredRow>& rows,
                                              double band);

}  // namespace moetune::tests
