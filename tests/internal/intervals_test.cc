#include "tests/internal/intervals.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(IntervalsTest, QuantilesByHand) {
  // Type 7: 1..5, q = 0.1 -> position 0.4 -> 1.4; q = 0.9 -> position 3.6 -> 4.6.
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3, 2, 4}, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3, 2, 4}, 0.9), 4.6);
}

TEST(IntervalsTest, ConformalRanksByHand) {
  // n = 45, 80%: (n + 1) x 0.1 = 4.6 -> 4th; (n + 1) x 0.9 = 41.4 -> 42nd.
  EXPECT_EQ(ConformalRanksFor(45, 0.8).lo, 4);
  EXPECT_EQ(ConformalRanksFor(45, 0.8).hi, 42);
  // n = 9: (n + 1) x 0.1 = 1 and x 0.9 = 9 exactly: the extremes.
  EXPECT_EQ(ConformalRanksFor(9, 0.8).lo, 1);
  EXPECT_EQ(ConformalRanksFor(9, 0.8).hi, 9);
  // n = 5: 0.6 -> rank 0 and 5.4 -> 6, clamped to the sample: 1 and 5.
  EXPECT_EQ(ConformalRanksFor(5, 0.8).lo, 1);
  EXPECT_EQ(ConformalRanksFor(5, 0.8).hi, 5);
  // 1..5 at 80%: the 1st and 5th smallest.
  const ErrorQuantiles q = QuantilesOf({5, 1, 3, 2, 4}, 0.8);
  EXPECT_DOUBLE_EQ(q.q_lo, 1);
  EXPECT_DOUBLE_EQ(q.q_hi, 5);
  EXPECT_EQ(q.rows, 5);
  // 1..19 at 80%: (20 x 0.1) = 2 -> 2nd, (20 x 0.9) = 18 -> 18th.
  std::vector<double> v;
  for (int i = 19; i >= 1; --i) v.push_back(i);
  const ErrorQuantiles q19 = QuantilesOf(v, 0.8);
  EXPECT_DOUBLE_EQ(q19.q_lo, 2);
  EXPECT_DOUBLE_EQ(q19.q_hi, 18);
}

TEST(IntervalsTest, MeasuredIntervalByHand) {
  // Errors from -20% to +25%: a prediction of 100 means the measurement is
  // 100 / 1.25 = 80 .. 100 / 0.8 = 125.
  ErrorQuantiles q;
  q.q_lo = -0.2;
  q.q_hi = 0.25;
  const auto [lo, hi] = MeasuredInterval(100, q);
  EXPECT_DOUBLE_EQ(lo, 80);
  EXPECT_DOUBLE_EQ(hi, 125);
}

TEST(IntervalsTest, SmallClassesFallBackToAllRows) {
  // Class 1 has one row (< min_rows 2): it gets the all-row quantiles.
  const std::vector<ErrorQuantiles> q =
      ClassQuantiles({0.0, 0.1, 0.2, 0.9}, {0, 0, 0, 1}, 2, 0.8, 2);
  EXPECT_EQ(q[0].rows, 3);
  EXPECT_EQ(q[1].rows, 4);
}

TEST(IntervalsTest, NestedCoverageByHand) {
  // The model predicts 10 for every row (one constant, nothing to fit).
  // Measured A: 8, 12; B: 9, 10; C: 10, 20 -> errors 10 / m - 1 =
  // A +0.25, -0.1667; B +0.1111, 0; C 0, -0.5. 50% intervals from the four
  // errors of the other two groups, conformal ranks floor(5 x 0.25) = 1 and
  // ceil(5 x 0.75) = 4 (the smallest and the largest):
  //  hold out A: B, C errors -0.5 .. 0.1111 -> [10 / 1.1111, 10 / 0.5] =
  //   [9, 20]: 12 inside, 8 outside (1 / 2);
  //  hold out B: A, C -0.5 .. 0.25 -> [8, 20]: 9 and 10 inside (2 / 2);
  //  hold out C: A, B -0.1667 .. 0.25 -> [8, 12]: 10 inside, 20 outside
  //   (1 / 2). In all 4 / 6.
  const std::vector<FitParameter> params = {{"a", 10, {10}}};
  const RowPredictor predict = [](const std::vector<double>& v,
                                  size_t) -> std::optional<double> { return v[0]; };
  const Coverage c = NestedIntervalCoverage(params, predict, {8, 12, 9, 10, 10, 20},
                                            {"A", "A", "B", "B", "C", "C"},
                                            {0, 0, 0, 0, 0, 0}, 1, 0.5, 1);
  ASSERT_EQ(c.folds.size(), 3u);
  EXPECT_EQ(c.folds[0].covered, 1);
  EXPECT_EQ(c.folds[1].covered, 2);
  EXPECT_EQ(c.folds[2].covered, 1);
  EXPECT_EQ(c.rows, 6);
  EXPECT_EQ(c.covered, 4);
}

}  // namespace
}  // namespace moetune::tests
