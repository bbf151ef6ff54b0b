#include "tests/internal/intervals.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(IntervalsTest, QuantilesByHand) {
  // 1..5: q = 0.1 -> position 0.4 -> 1.4; q = 0.9 -> position 3.6 -> 4.6.
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3, 2, 4}, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3, 2, 4}, 0.9), 4.6);
  const ErrorQuantiles q = QuantilesOf({5, 1, 3, 2, 4}, 0.8);
  EXPECT_DOUBLE_EQ(q.q_lo, 1.4);
  EXPECT_DOUBLE_EQ(q.q_hi, 4.6);
  EXPECT_EQ(q.rows, 5);
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
  // A +0.25, -0.1667; B +0.1111, 0; C 0, -0.5. 50% intervals:
  //  hold out A: errors of B, C sorted -0.5, 0, 0, 0.1111: q25 -0.125, q75
  //   0.0278 -> [9.73, 11.43]: 8 and 12 outside (0 / 2);
  //  hold out B: A, C -0.5, -0.1667, 0, 0.25: q25 -0.25, q75 0.0625 ->
  //   [9.41, 13.33]: 10 inside, 9 outside (1 / 2);
  //  hold out C: A, B -0.1667, 0, 0.1111, 0.25: q25 -0.125, q75 0.1458 ->
  //   [8.73, 11.43]: 10 inside, 20 outside (1 / 2). In all 2 / 6.
  const std::vector<FitParameter> params = {{"a", 10, {10}}};
  const RowPredictor predict = [](const std::vector<double>& v,
                                  size_t) -> std::optional<double> { return v[0]; };
  const Coverage c = NestedIntervalCoverage(params, predict, {8, 12, 9, 10, 10, 20},
                                            {"A", "A", "B", "B", "C", "C"},
                                            {0, 0, 0, 0, 0, 0}, 1, 0.5, 1);
  ASSERT_EQ(c.folds.size(), 3u);
  EXPECT_EQ(c.folds[0].covered, 0);
  EXPECT_EQ(c.folds[1].covered, 1);
  EXPECT_EQ(c.folds[2].covered, 1);
  EXPECT_EQ(c.rows, 6);
  EXPECT_EQ(c.covered, 2);
}

}  // namespace
}  // namespace moetune::tests
