#include "planner/routing.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

TEST(RoutingTest, NamesRoundTrip) {
  EXPECT_EQ(RoutingName(Routing::kBalanced), "balanced");
  EXPECT_EQ(RoutingName(Routing::kNatural), "natural");
  MOETUNE_ASSERT_OK_AND_ASSIGN(const Routing natural, ParseRouting("Natural"));
  EXPECT_EQ(natural, Routing::kNatural);
  MOETUNE_ASSERT_OK_AND_ASSIGN(const Routing balanced, ParseRouting("balanced"));
  EXPECT_EQ(balanced, Routing::kBalanced);
  EXPECT_THAT(ParseRouting("forced"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'forced'")));
}

// Gini 0.24 -> sigma = 2 erfinv(0.24) = 2 x 0.2160 = 0.4320 (erf(0.2160) =
// 1.12838 x (0.2160 - 0.2160^3 / 3 + 0.2160^5 / 10) = 0.2400);
// CV = sqrt(exp(0.4320^2) - 1) = sqrt(0.2052) = 0.4530.
TEST(RoutingTest, ExpertLoadCvFromGini) {
  EXPECT_NEAR(ExpertLoadCv(0.24), 0.4530, 1e-3);
  EXPECT_EQ(ExpertLoadCv(0.0), 0.0);
  EXPECT_EQ(ExpertLoadCv(1.0), 0.0);  // no finite log-normal
  EXPECT_LT(ExpertLoadCv(0.105), ExpertLoadCv(0.24));
}

// Blom: n = 32 -> Phi^-1(31.625 / 32.25 = 0.98062) = 2.067 (exact 2.070);
// n = 64 -> Phi^-1(0.99027) = 2.337 (exact 2.344).
TEST(RoutingTest, ExpectedMaxOfNormals) {
  EXPECT_EQ(ExpectedMaxOfNormals(1), 0.0);
  EXPECT_NEAR(ExpectedMaxOfNormals(2), 0.5895, 1e-3);
  EXPECT_NEAR(ExpectedMaxOfNormals(32), 2.067, 2e-3);
  EXPECT_NEAR(ExpectedMaxOfNormals(64), 2.337, 2e-3);
  // Gumbel sd: pi / (sqrt 6 x sqrt(2 ln 64)) = 3.1416 / (2.4495 x 2.8841).
  EXPECT_NEAR(StdDevOfMaxOfNormals(64), 0.4447, 1e-3);
  EXPECT_EQ(StdDevOfMaxOfNormals(1), 1.0);
  // The values kept after the first call (n below 4,096) and the ones
  // computed each time (n from 4,096) are the same function: the same
  // answer twice, and increasing across the table's edge (n = 4096: 3.611).
  for (int n : {8, 4095, 4096, 5000}) EXPECT_EQ(ExpectedMaxOfNormals(n), ExpectedMaxOfNormals(n));
  EXPECT_LT(ExpectedMaxOfNormals(4095), ExpectedMaxOfNormals(4096));
  EXPECT_NEAR(ExpectedMaxOfNormals(4096), 3.611, 2e-3);
}

// DeepSeek-V3 (256 experts, top-8) at micro-batch 1 x 4,096 tokens, TP 1:
// EP 32 -> 8 experts per rank:
//   CV_rank^2 = (31/32) x (0.4530^2 / 8 + 1 / (4096 x 8)) = 0.02488,
//   CV_rank = 0.1577; imbalance = 1 + 0.1577 x 2.067 = 1.326.
// EP 64 -> 4 per rank: CV_rank = sqrt((63/64) x (0.2052 / 4 + 3.05e-5))
//   = 0.2248; imbalance = 1 + 0.2248 x 2.337 = 1.525.
TEST(RoutingTest, DeepSeekV3ByHand) {
  const double cv = ExpertLoadCv(kNaturalRoutingExpertLoadGini);
  RoutingShape s;
  s.tokens_per_rank = 4096;
  s.top_k = 8;
  s.experts_per_rank = 8;
  s.ep = 32;
  EXPECT_NEAR(NaturalRoutingImbalance(s, cv), 1.326, 2e-3);
  s.experts_per_rank = 4;
  s.ep = 64;
  EXPECT_NEAR(NaturalRoutingImbalance(s, cv), 1.525, 2e-3);
}

// 32 groups of EP 32 that each run 16 MoE layer passes per step: the
// slowest group adds CV_rank x sd(max of 32) x E[max of 32] / sqrt(16)
// = 0.1577 x 0.4871 x 2.067 / 4 = 0.0397: 1.326 -> 1.366.
TEST(RoutingTest, SlowestGroupByHand) {
  const double cv = ExpertLoadCv(kNaturalRoutingExpertLoadGini);
  RoutingShape s;
  s.tokens_per_rank = 4096;
  s.top_k = 8;
  s.experts_per_rank = 8;
  s.ep = 32;
  s.ep_groups = 32;
  s.layer_passes_per_step = 16;
  EXPECT_NEAR(NaturalRoutingImbalance(s, cv), 1.366, 2e-3);
}

// Qwen3-30B-A3B (128 experts, top-8), the Megatron-Bridge card's natural-
// routing runs, one EP group each (ep_groups 1: E[max of 1] = 0):
// 8 GB200, EP 8, MBS 4 x 4,096 tokens -> 16 experts per rank:
//   CV_rank^2 = (7/8) x (0.2052 / 16 + 1 / (16384 x 8)) = 0.01123,
//   CV_rank = 0.1060; Blom n = 8: Phi^-1(7.625 / 8.25 = 0.92424) = 1.434;
//   imbalance = 1 + 0.1060 x 1.434 = 1.152.
// 16 H100, EP 16, MBS 1 x 4,096 -> 8 per rank:
//   CV_rank^2 = (15/16) x (0.2052 / 8 + 1 / 32768) = 0.02408, CV_rank =
//   0.1552; n = 16: Phi^-1(15.625 / 16.25 = 0.96154) = 1.768;
//   imbalance = 1 + 0.1552 x 1.768 = 1.274.
TEST(RoutingTest, Qwen3SmallExpertsByHand) {
  const double cv = ExpertLoadCv(kNaturalRoutingExpertLoadGini);
  RoutingShape s;
  s.tokens_per_rank = 16384;
  s.top_k = 8;
  s.experts_per_rank = 16;
  s.ep = 8;
  EXPECT_NEAR(NaturalRoutingImbalance(s, cv), 1.152, 2e-3);
  s.tokens_per_rank = 4096;
  s.experts_per_rank = 8;
  s.ep = 16;
  EXPECT_NEAR(NaturalRoutingImbalance(s, cv), 1.274, 2e-3);
}

TEST(RoutingTest, NoSpreadWithoutExpertParallelism) {
  RoutingShape s;
  s.tokens_per_rank = 4096;
  s.top_k = 8;
  s.experts_per_rank = 256;
  s.ep = 1;
  s.ep_groups = 512;
  EXPECT_EQ(NaturalRoutingImbalance(s, 0.45), 1.0);
  s.ep = 8;
  EXPECT_EQ(NaturalRoutingImbalance(s, 0.0), 1.0);
  s.tokens_per_rank = 0;
  EXPECT_EQ(NaturalRoutingImbalance(s, 0.45), 1.0);
}

// Relative properties: more ranks to wait for, more groups, fewer experts
// per rank or fewer tokens never make the busiest rank less busy; more
// layer passes per step average the groups out.
TEST(RoutingTest, Monotone) {
  const double cv = ExpertLoadCv(kNaturalRoutingExpertLoadGini);
  RoutingShape base;
  base.tokens_per_rank = 4096;
  base.top_k = 8;
  base.experts_per_rank = 8;
  base.ep = 32;
  base.ep_groups = 4;
  base.layer_passes_per_step = 64;
  const double b = NaturalRoutingImbalance(base, cv);
  EXPECT_GT(b, 1.0);
  RoutingShape s = base;
  s.ep_groups = 64;
  EXPECT_GT(NaturalRoutingImbalance(s, cv), b);
  s = base;
  s.layer_passes_per_step = 8;
  EXPECT_GT(NaturalRoutingImbalance(s, cv), b);
  s = base;
  s.experts_per_rank = 4;
  s.ep = 64;
  EXPECT_GT(NaturalRoutingImbalance(s, cv), b);
  s = base;
  s.tokens_per_rank = 64;
  EXPECT_GT(NaturalRoutingImbalance(s, cv), b);
}

}  // namespace
}  // namespace moetune::planner
