#include "planner/pareto.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::planner {
namespace {

std::vector<uint64_t> Ids(const ParetoFront& f) {
  std::vector<uint64_t> ids;
  for (const ParetoPoint& p : f.points()) ids.push_back(p.id);
  return ids;
}

// Points (memory GiB, throughput) by hand:
//   1: (40, 100)  2: (60, 150)  3: (50, 90)  -> 3 is beaten by 1 (less
//   memory, more throughput); 4: (60, 160) beats 2; 5: (30, 80) is new
//   at the low-memory end; 6: (80, 160) is beaten by 4.
TEST(ParetoFrontTest, KeepsOnlyUndominatedPointsSortedByMemory) {
  ParetoFront f;
  EXPECT_TRUE(f.Offer({40, 100, 1}));
  EXPECT_TRUE(f.Offer({60, 150, 2}));
  EXPECT_FALSE(f.Offer({50, 90, 3}));
  EXPECT_TRUE(f.Offer({60, 160, 4}));
  EXPECT_TRUE(f.Offer({30, 80, 5}));
  EXPECT_FALSE(f.Offer({80, 160, 6}));
  EXPECT_THAT(Ids(f), ::testing::ElementsAre(5, 1, 4));
}

TEST(ParetoFrontTest, NewPointCanRemoveSeveral) {
  ParetoFront f;
  f.Offer({10, 1, 1});
  f.Offer({20, 2, 2});
  f.Offer({30, 3, 3});
  EXPECT_TRUE(f.Offer({10, 5, 4}));  // less or equal memory, more throughput
  EXPECT_THAT(Ids(f), ::testing::ElementsAre(4));
}

TEST(ParetoFrontTest, ExactTieKeepsSmallerId) {
  ParetoFront f;
  EXPECT_TRUE(f.Offer({10, 5, 7}));
  EXPECT_TRUE(f.Offer({10, 5, 3}));
  EXPECT_FALSE(f.Offer({10, 5, 9}));
  EXPECT_THAT(Ids(f), ::testing::ElementsAre(3));
}

TEST(ParetoFrontTest, MergeEqualsOfferingEverything) {
  ParetoFront a, b, all;
  const std::vector<ParetoPoint> pts = {{40, 100, 1}, {60, 150, 2}, {50, 90, 3},
                                        {60, 160, 4}, {30, 80, 5}, {80, 160, 6}};
  for (size_t i = 0; i < pts.size(); ++i) {
    (i % 2 ? a : b).Offer(pts[i]);
    all.Offer(pts[i]);
  }
  a.Merge(b);
  EXPECT_EQ(Ids(a), Ids(all));
}

}  // namespace
}  // namespace moetune::planner
