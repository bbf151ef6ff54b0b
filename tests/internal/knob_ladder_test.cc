#include "tests/internal/knob_ladder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

using ::testing::ElementsAre;
namespace planner = ::moetune::planner;

TEST(KnobLadderTest, DeepSeekV3Gb200Mapping) {
  const std::vector<LadderStep> s = DeepSeekV3Gb200Ladder();
  ASSERT_EQ(s.size(), 13u);
  EXPECT_EQ(s[0].id, "mlm-dsv3-gb200-opt-step00");
  EXPECT_EQ(s[12].id, "mlm-dsv3-gb200-opt-step12");
  // Baseline: all-to-all, no graphs, no EP overlap, recompute mlp + up_proj.
  EXPECT_EQ(s[0].knobs.dispatcher, planner::Dispatcher::kAllToAll);
  EXPECT_FALSE(s[0].knobs.cuda_graphs);
  EXPECT_FALSE(s[0].knobs.overlap.ep_comm);
  EXPECT_EQ(s[0].knobs.recompute.modules, planner::kRecomputeMlp | planner::kRecomputeMlaUpProj);
  // The three steps with a knob, and what each changes.
  EXPECT_EQ(s[3].name, "Enable DeepEP");
  EXPECT_EQ(s[3].knobs.dispatcher, planner::Dispatcher::kFusedDedup);
  EXPECT_EQ(s[4].knobs.recompute.modules, planner::kRecomputeMlp | planner::kRecomputeMoeAct);
  EXPECT_TRUE(s[5].knobs.cuda_graphs);
  std::vector<int> with_knob;
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i].has_knob) with_knob.push_back(int(i));
  }
  EXPECT_THAT(with_knob, ElementsAre(3, 4, 5));
  // A step without a knob leaves the knobs as the step before.
  EXPECT_EQ(s[10].knobs.dispatcher, s[9].knobs.dispatcher);
  EXPECT_EQ(s[10].knobs.cuda_graphs, s[9].knobs.cuda_graphs);
  EXPECT_THAT(s[10].mapping, ::testing::HasSubstr("no knob"));
}

TEST(KnobLadderTest, GainsByHand) {
  // 494 -> 529 -> 566: 1, 529/494 = 1.0709, 566/529 = 1.0699.
  const std::vector<double> g = StepGains({494, 529, 566});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[1], 529.0 / 494);
  EXPECT_DOUBLE_EQ(g[2], 566.0 / 529);
}

}  // namespace
}  // namespace moetune::tests
