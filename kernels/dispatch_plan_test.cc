#include "kernels/dispatch_plan.h"

#include <cmath>
#include <set>

#include "gtest/gtest.h"

namespace moetune::kernels {
namespace {

// Runs dispatch -> experts -> combine of every rank in memory, moving rows
// exactly as the plan's exchanges would, and returns each rank's output.
std::vector<std::vector<float>> RunInMemory(const DispatchCombineParams& p) {
  const int w = static_cast<int>(p.ep_size);
  const int64_t h = p.hidden;
  std::vector<Routing> routing;
  for (int r = 0; r < w; ++r) routing.push_back(MakeRouting(p, r));
  std::vector<DispatchPlan> plans;
  for (int r = 0; r < w; ++r) plans.push_back(BuildDispatchPlan(p, r, routing));
  const size_t n_stages = plans[0].stages.size();
  // bufs[stage][rank]
  std::vector<std::vector<std::vector<float>>> bufs(n_stages + 1, std::vector<std::vector<float>>(w));
  for (int r = 0; r < w; ++r) bufs[0][r] = MakeTokens(p, r);
  for (size_t s = 0; s < n_stages; ++s) {
    for (int d = 0; d < w; ++d) {
      for (int src = 0; src < w; ++src) {
        for (int64_t row : plans[src].stages[s].send_rows[d]) {
          bufs[s + 1][d].insert(bufs[s + 1][d].end(), bufs[s][src].begin() + row * h,
                                bufs[s][src].begin() + (row + 1) * h);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(bufs[s + 1][d].size()), plans[d].buffer_rows[s + 1] * h);
    }
  }
  // Experts: y = x * sum_j w_j * scale(e_j).
  for (int r = 0; r < w; ++r) {
    const DispatchPlan& pl = plans[r];
    auto& b = bufs[n_stages][r];
    for (int64_t row = 0; row + 1 < static_cast<int64_t>(pl.expert_offsets.size()); ++row) {
      float f = 0;
      for (int64_t j = pl.expert_offsets[row]; j < pl.expert_offsets[row + 1]; ++j) {
        f += pl.expert_weights[j] * ExpertScale(pl.expert_ids[j]);
      }
      for (int64_t c = 0; c < h; ++c) b[row * h + c] *= f;
    }
  }
  // Combine: each stage backwards; returned rows summed by reduce lists.
  for (size_t s = n_stages; s-- > 0;) {
    for (int r = 0; r < w; ++r) {
      // Returned rows of r in send order: for each destination d, the rows d
      // received from r, which sit in d's buffer after the rows from ranks < r.
      std::vector<float> returned;
      for (int d = 0; d < w; ++d) {
        int64_t offset = 0;
        for (int src = 0; src < r; ++src) offset += plans[d].stages[s].recv_counts[src];
        const int64_t n = plans[d].stages[s].recv_counts[r];
        returned.insert(returned.end(), bufs[s + 1][d].begin() + offset * h,
                        bufs[s + 1][d].begin() + (offset + n) * h);
      }
      const ExchangeStage& st = plans[r].stages[s];
      std::vector<float> out(plans[r].buffer_rows[s] * h, 0.0f);
      for (int64_t row = 0; row < plans[r].buffer_rows[s]; ++row) {
        for (int64_t j = st.reduce_offsets[row]; j < st.reduce_offsets[row + 1]; ++j) {
          for (int64_t c = 0; c < h; ++c) out[row * h + c] += returned[st.reduce_positions[j] * h + c];
        }
      }
      bufs[s][r] = out;  // stage s is done for every rank once all have read s+1
    }
  }
  return bufs[0];
}

DispatchCombineParams SmallProblem(DispatchMode mode) {
  DispatchCombineParams p;
  p.tokens_per_rank = 64;
  p.hidden = 8;
  p.top_k = 3;
  p.num_experts = 16;
  p.ep_size = 4;
  p.ranks_per_node = 2;
  p.mode = mode;
  p.routing = TokenDistribution::Zipf(1.0);
  return p;
}

class DispatchPlanModes : public ::testing::TestWithParam<DispatchMode> {};

TEST_P(DispatchPlanModes, RoundTripReproducesTheWeightedSum) {
  const DispatchCombineParams p = SmallProblem(GetParam());
  const auto outputs = RunInMemory(p);
  for (int r = 0; r < p.ep_size; ++r) {
    const auto expected = ExpectedCombine(p, MakeRouting(p, r), MakeTokens(p, r));
    ASSERT_EQ(outputs[r].size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(outputs[r][i], expected[i], 1e-5 * (1 + std::fabs(expected[i])))
          << "rank " << r << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, DispatchPlanModes,
                         ::testing::Values(DispatchMode::kPerExpert, DispatchMode::kDedupRank,
                                           DispatchMode::kDedupNode));

// Skewed histogram: rank 3's experts (12..15) are never chosen, so rank 3
// receives nothing; the round trip still reproduces every weighted sum.
TEST(DispatchPlan, ColdRankReceivesNothingAndRoundTripHolds) {
  for (DispatchMode mode : {DispatchMode::kPerExpert, DispatchMode::kDedupRank, DispatchMode::kDedupNode}) {
    DispatchCombineParams p = SmallProblem(mode);
    p.routing = TokenDistribution::Histogram({8, 1, 1, 1, 4, 4, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0});
    std::vector<Routing> routing;
    for (int r = 0; r < 4; ++r) routing.push_back(MakeRouting(p, r));
    EXPECT_EQ(BuildDispatchPlan(p, 3, routing).buffer_rows.back(), 0) << DispatchModeName(mode);
    const auto outputs = RunInMemory(p);
    for (int r = 0; r < 4; ++r) {
      const auto expected = ExpectedCombine(p, routing[r], MakeTokens(p, r));
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_NEAR(outputs[r][i], expected[i], 1e-5 * (1 + std::fabs(expected[i])))
            << DispatchModeName(mode) << " rank " << r << " element " << i;
      }
    }
  }
}

TEST(MakeRouting, DistinctExpertsWeightsSumToOneAndNodeLimitHolds) {
  DispatchCombineParams p = SmallProblem(DispatchMode::kDedupRank);
  p.max_nodes_per_token = 1;  // 8 experts per node >= top_k 3
  const Routing r = MakeRouting(p, 1);
  for (int64_t t = 0; t < p.tokens_per_rank; ++t) {
    std::set<int> experts, nodes;
    double sum = 0;
    for (int64_t k = 0; k < p.top_k; ++k) {
      experts.insert(r.experts[t * p.top_k + k]);
      nodes.insert(r.experts[t * p.top_k + k] / 8);
      sum += r.weights[t * p.top_k + k];
    }
    EXPECT_EQ(experts.size(), 3u);
    EXPECT_EQ(nodes.size(), 1u);
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(MakeRouting, SameSeedSameRoutingOtherSeedOtherRouting) {
  DispatchCombineParams p = SmallProblem(DispatchMode::kDedupRank);
  EXPECT_EQ(MakeRouting(p, 0).experts, MakeRouting(p, 0).experts);
  EXPECT_NE(MakeRouting(p, 0).experts, MakeRouting(p, 1).experts);
  p.timing.seed = 2;
  EXPECT_NE(MakeRouting(p, 0).experts, MakeRouting(SmallProblem(DispatchMode::kDedupRank), 0).experts);
}

TEST(BuildDispatchPlan, PerExpertSendsTopKRowsPerTokenAndDedupSendsFewer) {
  // Per expert: exactly tokens * top_k = 64 * 3 = 192 rows leave each rank.
  const DispatchCombineParams pe = SmallProblem(DispatchMode::kPerExpert);
  const DispatchCombineParams dr = SmallProblem(DispatchMode::kDedupRank);
  const DispatchCombineParams dn = SmallProblem(DispatchMode::kDedupNode);
  std::vector<Routing> routing;
  for (int r = 0; r < 4; ++r) routing.push_back(MakeRouting(pe, r));
  for (int r = 0; r < 4; ++r) {
    const DispatchPlan a = BuildDispatchPlan(pe, r, routing);
    const DispatchPlan b = BuildDispatchPlan(dr, r, routing);
    const DispatchPlan c = BuildDispatchPlan(dn, r, routing);
    EXPECT_EQ(a.stages[0].RowsSent(), 192);
    EXPECT_LE(b.stages[0].RowsSent(), a.stages[0].RowsSent());
    // Rows that leave the node: at most one per (token, other node) = 64.
    int64_t cross_node = 0;
    for (int d = 0; d < 4; ++d) {
      if (d / 2 != r / 2) cross_node += c.stages[0].send_rows[d].size();
    }
    EXPECT_LE(cross_node, 64);
    ASSERT_EQ(c.stages.size(), 2u);
    // Second stage stays inside the node.
    for (int d = 0; d < 4; ++d) {
      if (d / 2 != r / 2) {
        EXPECT_TRUE(c.stages[1].send_rows[d].empty());
      }
    }
  }
}

}  // namespace
}  // namespace moetune::kernels
