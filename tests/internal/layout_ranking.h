// Does the model order alternative layouts of the same job the way the
// measurements do? Rows are grouped by job (same model, cluster, GPUs,
// sequence, batch, precision, objective: the `job` text); within a group,
// every pair of rows with different layouts (`layout` text) is a pair. A
// pair is right when the predicted order of the two matches the measured
// order. Pairs whose measurements are equal are skipped (no order to get);
// pairs whose predictions are equal count as wrong (the model gives no
// order). "Decisive" pairs are those whose measurements differ by more than
// a margin (e.g. 5%), beyond the container-to-container drift of one
// layout.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace moetune::tests {

struct RankedRow {
  std::string id;
  std::string job;     // everything but the layout
  std::string layout;  // tp/pp/vp/ep/etp/cp/mbs/FSDP as text
  double measured = 0;
  double predicted = 0;
};

struct RankedPair {
  size_t a = 0, b = 0;  // row indices, a < b
  bool right = false;
  double measured_ratio = 0;  // max / min of the two measurements
};

struct RankingGroup {
  std::string job;
  std::vector<size_t> rows;  // in input order
  std::vector<RankedPair> pairs;
  int right = 0;
  int decisive = 0;        // pairs with measured_ratio > 1 + margin
  int decisive_right = 0;
};

struct RankingSummary {
  std::vector<RankingGroup> groups;  // only groups with >= 1 pair
  int pairs = 0;
  int right = 0;
  int decisive = 0;
  int decisive_right = 0;
};

RankingSummary RankLayouts(const std::vector<RankedRow>& rows, double decisive_margin);

}  // namespace moetune::tests
