#include "tests/internal/contradictions.h"

#include <algorithm>
#include <map>

namespace moetune::tests {

double BestWorstCaseError(double low, double high) {
  return (high - low) / (high + low);
}

std::vector<Contradiction> FindContradictions(const std::vector<MeasuredRow>& rows,
                                              double band) {
  std::map<std::string, Contradiction> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!(rows[i].measured > 0)) continue;
    Contradiction& g = groups[rows[i].inputs];
    if (g.rows.empty()) {
      g.inputs = rows[i].inputs;
      g.low = g.high = rows[i].measured;
    }
    g.rows.push_back(i);
    g.low = std::min(g.low, rows[i].measured);
    g.high = std::max(g.high, rows[i].measured);
  }
  std::vector<Contradiction> out;
  for (auto& [inputs, g] : groups) {
    if (g.rows.size() < 2) continue;
    g.best_error = BestWorstCaseError(g.low, g.high);
    if (g.best_error > band) out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const Contradiction& a, const Contradiction& b) {
    return a.best_error > b.best_error;
  });
  return out;
}

}  // namespace moetune::tests
