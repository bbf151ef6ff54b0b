#include "tests/internal/generation_pairs.h"

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

GenerationRow Row(std::string id, std::string job, std::string container, std::string family,
                  std::string generation, std::string layout, double measured, double predicted) {
  return {std::move(id), std::move(job), std::move(container), std::move(family),
          std::move(generation), std::move(layout), measured, predicted};
}

TEST(GenerationPairs, SameLayoutPairRatioError) {
  // Measured 1,000 -> 1,250 (x1.25), predicted 1,000 -> 1,150 (x1.15):
  // error 1.15 / 1.25 - 1 = -8%.
  const std::vector<GenerationRow> rows = {
      Row("a", "job", "26.02", "nvl72", "blackwell", "pp1", 1000, 1000),
      Row("b", "job", "26.02", "nvl72", "blackwell_ultra", "pp1", 1250, 1150)};
  const GenerationPairSummary s = PairGenerations(rows, "blackwell", "blackwell_ultra");
  ASSERT_EQ(s.pairs.size(), 1u);
  EXPECT_TRUE(s.pairs[0].same_layout);
  EXPECT_DOUBLE_EQ(s.pairs[0].measured_ratio, 1.25);
  EXPECT_DOUBLE_EQ(s.pairs[0].predicted_ratio, 1.15);
  EXPECT_NEAR(s.pairs[0].ratio_error, -0.08, 1e-12);
  EXPECT_EQ(s.same_layout, 1);
  EXPECT_NEAR(s.mean_abs_error_same, 0.08, 1e-12);
  EXPECT_NEAR(s.mean_signed_error_same, -0.08, 1e-12);
}

TEST(GenerationPairs, PairsOnlyEqualJobContainerAndFamily) {
  const std::vector<GenerationRow> rows = {
      Row("gb200", "job", "26.02", "nvl72", "blackwell", "pp8", 100, 100),
      Row("gb300-other-container", "job", "26.04", "nvl72", "blackwell_ultra", "pp8", 120, 110),
      Row("b300-other-family", "job", "26.02", "hgx8", "blackwell_ultra", "pp8", 120, 110),
      Row("gb300-other-job", "job2", "26.02", "nvl72", "blackwell_ultra", "pp8", 120, 110),
      Row("gb300-no-container", "job", "", "nvl72", "blackwell_ultra", "pp8", 120, 110),
      Row("gb300-own-layout", "job", "26.02", "nvl72", "blackwell_ultra", "pp2", 150, 120)};
  const GenerationPairSummary s = PairGenerations(rows, "blackwell", "blackwell_ultra");
  ASSERT_EQ(s.pairs.size(), 1u);
  EXPECT_EQ(s.pairs[0].older, 0u);
  EXPECT_EQ(s.pairs[0].newer, 5u);
  EXPECT_FALSE(s.pairs[0].same_layout);
  // 1.2 / 1.5 - 1 = -20%.
  EXPECT_NEAR(s.mean_signed_error_own, -0.2, 1e-12);
  EXPECT_EQ(s.same_layout, 0);
}

}  // namespace
}  // namespace moetune::tests
