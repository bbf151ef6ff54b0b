#include "kernels/measurement_roles.h"

#include "gtest/gtest.h"

namespace moetune::kernels::roles {
namespace {

TEST(MeasurementRoles, GroupedGemmNamesRoundTrip) {
  EXPECT_EQ(GroupedGemmName(GemmPass::kBwdData, GemmImpl::kGrouped), "bwd_data/grouped");
  GemmPass p;
  GemmImpl i;
  ASSERT_TRUE(ParseGroupedGemmName("fwd/dense_ref", &p, &i));
  EXPECT_EQ(p, GemmPass::kFwd);
  EXPECT_EQ(i, GemmImpl::kDenseRef);
  EXPECT_FALSE(ParseGroupedGemmName("fwd/grouped_ex", &p, &i));
}

TEST(MeasurementRoles, GemmShapePerPass) {
  // 8 experts, 4096 tokens (max 1024), hidden 7168, ffn 2048.
  GemmShapeLabels s = GroupedGemmShape(GemmPass::kFwd, GemmImpl::kGrouped, 8, 4096, 1024, 7168, 2048);
  EXPECT_EQ(s.m, 512);
  EXPECT_EQ(s.n, 2048);
  EXPECT_EQ(s.k, 7168);
  EXPECT_EQ(s.imbalance, 2.0);
  s = GroupedGemmShape(GemmPass::kBwdData, GemmImpl::kLoop, 8, 4096, 1024, 7168, 2048);
  EXPECT_EQ(s.n, 7168);
  EXPECT_EQ(s.k, 2048);
  s = GroupedGemmShape(GemmPass::kBwdWeight, GemmImpl::kDenseRef, 8, 4096, 1024, 7168, 2048);
  EXPECT_EQ(s.k, 4096);  // one dense GEMM over all tokens
  EXPECT_EQ(s.experts, 1);
  std::map<std::string, std::string> labels;
  SetGemmShapeLabels(s, &labels);
  const auto back = GetGemmShapeLabels(labels);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->k, 4096);
  labels.erase(kLabelGemmN);
  EXPECT_FALSE(GetGemmShapeLabels(labels).has_value());
}

TEST(MeasurementRoles, OffloadNamesRoundTrip) {
  const OffloadRole r{false, true, 1 << 20, true};
  EXPECT_EQ(OffloadName(r), "d2h/pinned/1048576/under_gemm");
  const auto back = ParseOffloadName("d2h/pinned/1048576/under_gemm");
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->h2d);
  EXPECT_TRUE(back->pinned);
  EXPECT_TRUE(back->under_gemm);
  EXPECT_EQ(back->bytes, 1 << 20);
  EXPECT_TRUE(ParseOffloadName("h2d/pageable/64").has_value());
  EXPECT_FALSE(ParseOffloadName("h2d/pinned/").has_value());
  EXPECT_FALSE(ParseOffloadName("h2d/pinned/12x").has_value());
}

TEST(MeasurementRoles, CollectiveNames) {
  EXPECT_EQ(CollectiveName(CollectiveOp::kAllToAll, 4096), "all_to_all/4096");
  EXPECT_EQ(ParseCollectiveOp("reduce_scatter"), CollectiveOp::kReduceScatter);
  EXPECT_FALSE(ParseCollectiveOp("broadcast").has_value());
}

}  // namespace
}  // namespace moetune::kernels::roles
