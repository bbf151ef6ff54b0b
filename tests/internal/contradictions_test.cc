#include "tests/internal/contradictions.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

using ::testing::ElementsAre;

TEST(ContradictionsTest, BestWorstCaseErrorByHand) {
  // 100 and 300: p = 2 x 100 x 300 / 400 = 150, 50% above one and 50% below
  // the other: (300 - 100) / (300 + 100) = 0.5.
  EXPECT_DOUBLE_EQ(BestWorstCaseError(100, 300), 0.5);
  EXPECT_DOUBLE_EQ(BestWorstCaseError(100, 100), 0.0);
}

TEST(ContradictionsTest, IdenticalInputsBeyondTheBand) {
  // The Qwen3-30B-A3B 16 x H100 pair of runs.json: 5,113 and 9,058 with the
  // same inputs: 3,945 / 14,171 = 27.84% > 25%. 100 vs 160 with other
  // inputs: 60 / 260 = 23.1%, within 25% but not 10%. A lone row never
  // contradicts.
  const std::vector<MeasuredRow> rows = {
      {"a", "qwen h100", 5113}, {"b", "llama", 100},   {"c", "qwen h100", 9058},
      {"d", "llama", 160},      {"e", "alone", 1000},
  };
  const std::vector<Contradiction> at25 = FindContradictions(rows, 0.25);
  ASSERT_EQ(at25.size(), 1u);
  EXPECT_EQ(at25[0].inputs, "qwen h100");
  EXPECT_THAT(at25[0].rows, ElementsAre(0u, 2u));
  EXPECT_DOUBLE_EQ(at25[0].low, 5113);
  EXPECT_DOUBLE_EQ(at25[0].high, 9058);
  EXPECT_NEAR(at25[0].best_error, 3945.0 / 14171.0, 1e-12);

  const std::vector<Contradiction> at10 = FindContradictions(rows, 0.10);
  ASSERT_EQ(at10.size(), 2u);
  EXPECT_EQ(at10[0].inputs, "qwen h100");  // largest best_error first
  EXPECT_EQ(at10[1].inputs, "llama");
  EXPECT_NEAR(at10[1].best_error, 60.0 / 260.0, 1e-12);
}

TEST(ContradictionsTest, ThreeRowsUseTheExtremes) {
  // 90, 100, 110: only 90 and 110 bind: 20 / 200 = 0.1, not beyond 0.1.
  const std::vector<MeasuredRow> rows = {{"a", "x", 100}, {"b", "x", 90}, {"c", "x", 110}};
  EXPECT_TRUE(FindContradictions(rows, 0.10).empty());
  const std::vector<Contradiction> c = FindContradictions(rows, 0.05);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_THAT(c[0].rows, ElementsAre(0u, 1u, 2u));
  EXPECT_NEAR(c[0].best_error, 0.1, 1e-12);
}

TEST(ContradictionsTest, NonPositiveMeasurementsIgnored) {
  const std::vector<MeasuredRow> rows = {{"a", "x", 0}, {"b", "x", 100}, {"c", "x", -5}};
  EXPECT_TRUE(FindContradictions(rows, 0.0).empty());
}

}  // namespace
}  // namespace moetune::tests
