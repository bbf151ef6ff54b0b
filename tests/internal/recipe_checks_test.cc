#include "tests/internal/recipe_checks.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

namespace planner = ::moetune::planner;

std::map<std::string, RecipeCheck> ById() {
  std::map<std::string, RecipeCheck> m;
  for (const RecipeCheck& c : PublicRecipeChecks()) {
    EXPECT_TRUE(m.emplace(c.id, c).second) << "duplicate id " << c.id;
  }
  return m;
}

// The Megatron-Bridge Qwen3-30B-A3B verification card (067f987df0) and the
// recipes its runs name: the performance recipes on GB200/GB300 run
// full-iteration graphs with forced balancing and EP overlap
// (perf_recipes/qwen/common.py _enable_hybridep_full_iteration_mxfp8); the
// functional ones natural routing and graphs scoped to moe_router +
// moe_preprocess; the H100 functional recipe has no EP overlap
// (recipes/qwen/h100/qwen3_moe.py moe_a2a_overlap False), the H100
// performance one EP overlap without delayed wgrad.
TEST(RecipeChecksTest, Qwen3CardRunsAsTheirRecipes) {
  const std::map<std::string, RecipeCheck> m = ById();
  for (const char* id : {"qwen3-30b-gb200-card-performance", "qwen3-30b-gb300-card-performance"}) {
    ASSERT_TRUE(m.count(id)) << id;
    const RecipeCheck& c = m.at(id);
    EXPECT_TRUE(c.knobs.cuda_graphs) << id;
    EXPECT_TRUE(c.features.graph_full_iteration) << id;
    EXPECT_EQ(c.knobs.routing, planner::Routing::kBalanced) << id;
    EXPECT_TRUE(c.knobs.overlap.ep_comm) << id;
  }
  EXPECT_EQ(m.at("qwen3-30b-gb300-card-performance").parallel.mbs, 8);
  EXPECT_EQ(m.at("qwen3-30b-gb300-card-performance").cluster_preset, "gb300-nvl72");

  const RecipeCheck& gb200 = m.at("qwen3-30b-gb200-card-functional");
  EXPECT_EQ(gb200.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(gb200.features.graph_full_iteration);
  EXPECT_FALSE(gb200.features.graph_attn);
  EXPECT_TRUE(gb200.knobs.overlap.ep_comm);

  const RecipeCheck& h100_perf = m.at("qwen3-30b-h100-card-performance");
  EXPECT_EQ(h100_perf.knobs.routing, planner::Routing::kBalanced);
  EXPECT_FALSE(h100_perf.features.graph_full_iteration);
  EXPECT_TRUE(h100_perf.knobs.overlap.ep_comm);
  EXPECT_FALSE(h100_perf.features.delay_wgrad_compute);

  const RecipeCheck& h100_func = m.at("qwen3-30b-h100-card-functional");
  EXPECT_EQ(h100_func.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(h100_func.features.graph_full_iteration);
  EXPECT_FALSE(h100_func.knobs.overlap.ep_comm);

  const RecipeCheck& sft = m.at("qwen3-30b-h100-card-sft-no-graphs");
  EXPECT_EQ(sft.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(sft.knobs.cuda_graphs);
  EXPECT_EQ(sft.knobs.dispatcher, planner::Dispatcher::kAllToAll);
}

TEST(RecipeChecksTest, EveryCheckHasASourceAndAMeasurement) {
  for (const RecipeCheck& c : PublicRecipeChecks()) {
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_FALSE(c.recipe.empty()) << c.id;
    EXPECT_GT(c.measured_tokens_per_sec_per_gpu, 0) << c.id;
    EXPECT_GT(c.shape.gpus, 0) << c.id;
  }
}

}  // namespace
}  // namespace moetune::tests
