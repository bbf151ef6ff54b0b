#include "tests/internal/generation_pairs.h"

#include <cmath>

namespace moetune::tests {

GenerationPairSummary PairGenerations(const std::vector<GenerationRow>& rows,
                                      const std::string& older, const std::string& newer) {
  GenerationPairSummary s;
  auto usable = [](const GenerationRow& r) {
    return !r.container.empty() && r.measured > 0 && r.predicted > 0;
  };
  int own = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const GenerationRow& o = rows[i];
    if (o.generation != older || !usable(o)) continue;
    for (size_t j = 0; j < rows.size(); ++j) {
      const GenerationRow& n = rows[j];
      if (n.generation != newer || !usable(n)) continue;
      if (n.job != o.job || n.container != o.container || n.family != o.family) continue;
      GenerationPair p;
      p.older = i;
      p.newer = j;
      p.same_layout = n.layout == o.layout;
      p.measured_ratio = n.measured / o.measured;
      p.predicted_ratio = n.predicted / o.predicted;
      p.ratio_error = p.predicted_ratio / p.measured_ratio - 1;
      if (p.same_layout) {
        ++s.same_layout;
        s.mean_abs_error_same += std::abs(p.ratio_error);
        s.mean_signed_error_same += p.ratio_error;
      } else {
        ++own;
        s.mean_abs_error_own += std::abs(p.ratio_error);
        s.mean_signed_error_own += p.ratio_error;
      }
      s.pairs.push_back(p);
    }
  }
  if (s.same_layout > 0) {
    s.mean_abs_error_same /= s.same_layout;
    s.mean_signed_error_same /= s.same_layout;
  }
  if (own > 0) {
    s.mean_abs_error_own /= own;
    s.mean_signed_error_own /= own;
  }
  return s;
}

}  // namespace moetune::tests
