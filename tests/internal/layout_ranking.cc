#include "tests/internal/layout_ranking.h"

#include <algorithm>
#include <map>

namespace moetune::tests {

RankingSummary RankLayouts(const std::vector<RankedRow>& rows, double decisive_margin) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (members.find(rows[i].job) == members.end()) order.push_back(rows[i].job);
    members[rows[i].job].push_back(i);
  }
  RankingSummary s;
  for (const std::string& job : order) {
    RankingGroup g;
    g.job = job;
    g.rows = members[job];
    for (size_t x = 0; x < g.rows.size(); ++x) {
      for (size_t y = x + 1; y < g.rows.size(); ++y) {
        const RankedRow& a = rows[g.rows[x]];
        const RankedRow& b = rows[g.rows[y]];
        if (a.layout == b.layout || a.measured == b.measured) continue;
        RankedPair p;
        p.a = g.rows[x];
        p.b = g.rows[y];
        const bool measured_a_faster = a.measured > b.measured;
        p.right = a.predicted != b.predicted && (a.predicted > b.predicted) == measured_a_faster;
        p.measured_ratio =
            std::max(a.measured, b.measured) / std::min(a.measured, b.measured);
        g.right += p.right ? 1 : 0;
        if (p.measured_ratio > 1.0 + decisive_margin) {
          ++g.decisive;
          g.decisive_right += p.right ? 1 : 0;
        }
        g.pairs.push_back(p);
      }
    }
    if (g.pairs.empty()) continue;
    s.pairs += int(g.pairs.size());
    s.right += g.right;
    s.decisive += g.decisive;
    s.decisive_right += g.decisive_right;
    s.groups.push_back(std::move(g));
  }
  return s;
}

}  // namespace moetune::tests
