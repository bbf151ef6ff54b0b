// The recipes' splits by hand: layers + embedding + loss over the virtual
// stages, the first and last one layer short; DeepSeek-V3's table.
#include "tests/internal/recipe_splits.h"

#include "gtest/gtest.h"
#include "planner/model_spec.h"

namespace moetune::tests {
namespace {

planner::ParallelConfig Pipeline(int pp, int vp) {
  planner::ParallelConfig p;
  p.pp = pp;
  p.vp = vp;
  return p;
}

planner::ModelSpec Layers(int n) {
  planner::ModelSpec m;
  m.num_layers = n;
  return m;
}

using Split = std::optional<std::pair<int, int>>;

TEST(RecipeSplitsTest, EmbeddingAndLossCountAsLayers) {
  const planner::ModelSpec l405 = Layers(126);
  // (126 + 2) / (16 x 4) = 2 per virtual stage: 1 | 2 ... 2 | 1.
  EXPECT_EQ(RecipeStageSplit(l405, "llama3.1-405b", Pipeline(16, 4)), Split({1, 1}));
  // (126 + 2) / (16 x 8) = 1: the embedding and the loss alone.
  EXPECT_EQ(RecipeStageSplit(l405, "llama3.1-405b", Pipeline(16, 8)), Split({0, 0}));
  // (126 + 2) / (8 x 4) = 4: 3 | 4 ... 4 | 3.
  EXPECT_EQ(RecipeStageSplit(l405, "llama3.1-405b", Pipeline(8, 4)), Split({3, 3}));
  const planner::ModelSpec q235 = Layers(94);
  // (94 + 2) / (8 x 3) = 4; / 8 = 12.
  EXPECT_EQ(RecipeStageSplit(q235, "qwen3-235b-a22b", Pipeline(8, 3)), Split({3, 3}));
  EXPECT_EQ(RecipeStageSplit(q235, "qwen3-235b-a22b", Pipeline(8, 1)), Split({11, 11}));
  // 96 over 5 stages does not divide: Megatron would refuse the layout.
  EXPECT_EQ(RecipeStageSplit(q235, "qwen3-235b-a22b", Pipeline(5, 1)), std::nullopt);
  // No pipeline, or a model whose recipe keeps the even split.
  EXPECT_EQ(RecipeStageSplit(l405, "llama3.1-405b", Pipeline(1, 1)), std::nullopt);
  EXPECT_EQ(RecipeStageSplit(Layers(80), "llama3-70b", Pipeline(4, 5)), std::nullopt);
}

TEST(RecipeSplitsTest, DeepSeekV3LayoutTable) {
  const planner::ModelSpec dsv3 = Layers(61);
  // 4 + 14 x 4 + 1 = 61 over 16 stages.
  EXPECT_EQ(RecipeStageSplit(dsv3, "deepseek-v3", Pipeline(16, 1)), Split({4, 1}));
  EXPECT_EQ(RecipeStageSplit(dsv3, "deepseek-v3", Pipeline(4, 4)), Split({4, 1}));
  // 8 + 6 x 8 + 5 = 61 over 8 stages.
  EXPECT_EQ(RecipeStageSplit(dsv3, "deepseek-v3", Pipeline(8, 1)), Split({8, 5}));
  // 16 + 2 x 16 + 13 = 61 over 4 stages.
  EXPECT_EQ(RecipeStageSplit(dsv3, "deepseek-v3", Pipeline(4, 1)), Split({16, 13}));
  // Not in the table (the 26.06 GB300 recipe's pp 2 x vp 8 gives its own).
  EXPECT_EQ(RecipeStageSplit(dsv3, "deepseek-v3", Pipeline(2, 8)), std::nullopt);
}

}  // namespace
}  // namespace moetune::tests
