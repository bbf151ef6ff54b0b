#include "tests/internal/layout_ranking.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(LayoutRankingTest, PairsByHand) {
  // Job J, rows (layout, measured, predicted): 0 (x, 100, 110), 1 (y, 120,
  // 130), 2 (z, 90, 115), 3 (x, 104, 110: layout x again, another container).
  //   (0,1) meas y > x, pred y 130 > x 110: right; ratio 1.2 (decisive)
  //   (0,2) meas x > z, pred x 110 < z 115: wrong; ratio 1.111 (decisive)
  //   (0,3) same layout: no pair
  //   (1,2) meas y > z, pred 130 > 115: right; ratio 1.333
  //   (1,3) meas y > x, pred 130 > 110: right; ratio 1.154
  //   (2,3) meas x > z, pred x 110 < z 115: wrong; ratio 1.156
  // 5 pairs, 3 right; all decisive at a 5% margin. Job K: one row, no pair.
  const std::vector<RankedRow> rows = {
      {"0", "J", "x", 100, 110}, {"1", "J", "y", 120, 130}, {"2", "J", "z", 90, 115},
      {"3", "J", "x", 104, 110}, {"4", "K", "x", 50, 60},
  };
  const RankingSummary s = RankLayouts(rows, 0.05);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].job, "J");
  EXPECT_EQ(s.pairs, 5);
  EXPECT_EQ(s.right, 3);
  EXPECT_EQ(s.decisive, 5);
  EXPECT_EQ(s.decisive_right, 3);
  EXPECT_TRUE(s.groups[0].pairs[0].right);
  EXPECT_FALSE(s.groups[0].pairs[1].right);
  EXPECT_NEAR(s.groups[0].pairs[0].measured_ratio, 1.2, 1e-12);
}

TEST(LayoutRankingTest, MarginAndTies) {
  // 100 vs 103: 3% apart, not decisive at 5%; predicted equal: wrong.
  // 100 vs 100 measured: skipped.
  const std::vector<RankedRow> rows = {
      {"a", "J", "x", 100, 50}, {"b", "J", "y", 103, 50}, {"c", "J", "z", 100, 70}};
  const RankingSummary s = RankLayouts(rows, 0.05);
  // Pairs (a,b) tie in prediction -> wrong; (a,c) equal measured -> skipped;
  // (b,c) meas b > c, pred 50 < 70 -> wrong.
  EXPECT_EQ(s.pairs, 2);
  EXPECT_EQ(s.right, 0);
  EXPECT_EQ(s.decisive, 0);
}

}  // namespace
}  // namespace moetune::tests
