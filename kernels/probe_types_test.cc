#include "kernels/probe_types.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::kernels {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ExpertTokenCounts, BalancedSpreadsRemainderToFirstExperts) {
  GroupedGemmParams p;
  p.num_experts = 4;
  p.total_tokens = 10;  // 10 = 3 + 3 + 2 + 2
  EXPECT_THAT(ExpertTokenCounts(p), ElementsAre(3, 3, 2, 2));
}

TEST(ExpertTokenCounts, ZipfUsesExpectedSharesAndSumsToTotal) {
  GroupedGemmParams p;
  p.num_experts = 4;
  p.total_tokens = 100;
  p.distribution = TokenDistribution::Zipf(1.0);
  // Shares 1, 1/2, 1/3, 1/4 of 25/12: 48.0, 24.0, 16.0, 12.0 tokens.
  EXPECT_THAT(ExpertTokenCounts(p), ElementsAre(48, 24, 16, 12));
  p.total_tokens = 101;  // 48.48, 24.24, 16.16, 12.12: the extra token goes to expert 0
  EXPECT_THAT(ExpertTokenCounts(p), ElementsAre(49, 24, 16, 12));
}

TEST(ExpertTokenCounts, HistogramIsReturnedAsIs) {
  GroupedGemmParams p;
  p.num_experts = 3;
  p.distribution = TokenDistribution::Histogram({5, 0, 7});
  EXPECT_THAT(ExpertTokenCounts(p), ElementsAre(5, 0, 7));
  EXPECT_TRUE(Validate(p, 0).ok());
}

TEST(Validate, GroupedGemmRefusesZeroExperts) {
  GroupedGemmParams p;
  p.num_experts = 0;
  EXPECT_THAT(Validate(p, 0),
              StatusIs(ProbeCode::kInvalidArgument, HasSubstr("num_experts must be > 0, got 0")));
}

TEST(Validate, GroupedGemmRefusesNegativeHidden) {
  GroupedGemmParams p;
  p.hidden = -5;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument, HasSubstr("hidden must be > 0, got -5")));
}

TEST(Validate, GroupedGemmRefusesHistogramOfWrongLength) {
  GroupedGemmParams p;
  p.num_experts = 4;
  p.distribution = TokenDistribution::Histogram({1, 2});
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("histogram has 2 entries, expected num_experts = 4")));
}

TEST(Validate, GroupedGemmRefusesSizesThatOverflow) {
  GroupedGemmParams p;
  p.num_experts = 1 << 20;
  p.hidden = 1 << 22;
  p.ffn_hidden = 1 << 22;  // E*K*N = 2^64 elements
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument, HasSubstr("overflows int64")));
}

TEST(Validate, GroupedGemmRefusesSizesOverTheMemoryBudget) {
  GroupedGemmParams p;
  p.num_experts = 1;
  p.total_tokens = 1000;
  p.hidden = 1000;
  p.ffn_hidden = 1000;
  // 2*(1000*1000) X/dX + 2*(1000*1000) Y/dY + 2*(1000*1000) W/dW = 6e6 elements x 4 B.
  EXPECT_TRUE(Validate(p, 24'000'000).ok());
  EXPECT_THAT(Validate(p, 23'999'999),
              StatusIs(ProbeCode::kInvalidArgument,
                       HasSubstr("needs 24000000 bytes, more than the memory budget of 23999999")));
}

TEST(Validate, DispatchRefusesTopKAboveExperts) {
  DispatchCombineParams p;
  p.num_experts = 8;
  p.top_k = 9;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("top_k (9) must be <= num_experts (8)")));
}

TEST(Validate, DispatchRefusesExpertsNotDivisibleByRanks) {
  DispatchCombineParams p;
  p.num_experts = 6;
  p.ep_size = 4;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("num_experts (6) must be a multiple of ep_size (4)")));
}

TEST(Validate, DispatchRefusesTopKBeyondNodeLimit) {
  DispatchCombineParams p;
  p.num_experts = 16;
  p.ep_size = 4;
  p.ranks_per_node = 2;  // 8 experts per node
  p.max_nodes_per_token = 1;
  p.top_k = 9;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("top_k (9) exceeds max_nodes_per_token (1)")));
  p.top_k = 8;
  EXPECT_TRUE(Validate(p, 0).ok());
}

TEST(Validate, DispatchRefusesNegativeTokens) {
  DispatchCombineParams p;
  p.tokens_per_rank = -1;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("tokens_per_rank must be > 0, got -1")));
}

TEST(Validate, CollectiveRefusesSizesNotDivisibleByGroup) {
  CollectiveParams p;
  p.op = CollectiveOp::kAllGather;
  p.group_size = 4;
  p.sizes_bytes = {1024, 1000};
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("sizes_bytes[1] (1000) must be a multiple of 16")));
}

TEST(Validate, CollectiveRefusesNegativeSize) {
  CollectiveParams p;
  p.sizes_bytes = {-4};
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("sizes_bytes[0] must be > 0, got -4")));
}

TEST(Validate, OffloadAndOverlapRefuseBadSizes) {
  OffloadParams o;
  o.sizes_bytes = {0};
  EXPECT_THAT(Validate(o, 0), StatusIs(ProbeCode::kInvalidArgument, HasSubstr("sizes_bytes[0]")));
  OverlapParams v;
  v.gemm_k = 0;
  EXPECT_THAT(Validate(v, 0), StatusIs(ProbeCode::kInvalidArgument, HasSubstr("gemm_k must be > 0, got 0")));
}

TEST(Validate, TimingNeedsOneSample) {
  ProbeParams p = GroupedGemmParams{};
  std::get<GroupedGemmParams>(p).timing.timed_iters = 0;
  EXPECT_THAT(Validate(p, 0), StatusIs(ProbeCode::kInvalidArgument,
                                       HasSubstr("timed_iters must be >= 1, got 0")));
}

TEST(ValidateGroup, RefusesMismatchedWorld) {
  GroupSpec g;
  g.world_size = 2;
  EXPECT_THAT(ValidateGroup(g, 4), StatusIs(ProbeCode::kInvalidArgument,
                                            HasSubstr("world_size (2) must equal the probe's group size (4)")));
  g.world_size = 4;
  g.rank = 4;
  EXPECT_THAT(ValidateGroup(g, 4), StatusIs(ProbeCode::kInvalidArgument, HasSubstr("rank (4)")));
}

TEST(ParamsToJson, NamesKindAndFields) {
  DispatchCombineParams p;
  p.mode = DispatchMode::kDedupNode;
  const std::string json = ParamsToJson(p);
  EXPECT_THAT(json, HasSubstr("\"kind\":\"dispatch_combine\""));
  EXPECT_THAT(json, HasSubstr("\"mode\":\"dedup_node\""));
  EXPECT_THAT(json, HasSubstr("\"timed_iters\":10"));
}

TEST(DTypes, BytesAndNames) {
  EXPECT_EQ(DTypeBytes(DType::kBf16), 2);
  EXPECT_EQ(DTypeBytes(DType::kFp8E4M3), 1);
  EXPECT_STREQ(DTypeName(DType::kMxfp8), "mxfp8");
}

}  // namespace
}  // namespace moetune::kernels
