// The recipe facts checked by hand against Megatron-Bridge's presets (the
// file and preset each table entry names): which entry covers a row, by
// container range, precision and layout, and what each lookup returns at
// its edges.
#include "tests/internal/bridge_recipes.h"

#include <string>

#include "gtest/gtest.h"
#include "planner/precision.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {
namespace {

namespace mp = moetune::planner;

mp::ParallelConfig Layout(int pp, int vp, int ep) {
  mp::ParallelConfig p;
  p.pp = pp;
  p.vp = vp;
  p.ep = ep;
  return p;
}

// Whether any listed recipe covers the row.
bool Covered(const char* model, const char* cluster, const char* container,
             mp::StackGeneration generation, mp::Precision precision, const mp::ParallelConfig& p) {
  return RecipeMoeCommFor(model, cluster, container, generation, precision, p) != nullptr;
}

TEST(RecipeMoeCommTest, Qwen3235bOnH100RunsTheAllToAllWithTheOverlapFromTheFirstTag) {
  // qwen3_235b_a22b_pretrain_config_h100: alltoall, moe_a2a_overlap True,
  // tp_comm_overlap False, every precision and layout, 26.02 on.
  for (const char* container : {"26.02", "26.04.01", "26.08"}) {
    const RecipeKnobs* r =
        RecipeMoeCommFor("qwen3-235b-a22b", "h100-sxm", container, mp::StackGeneration::k2602,
                         mp::Precision::kFp8, Layout(8, 4, 32));
    ASSERT_NE(r, nullptr) << container;
    EXPECT_EQ(r->dispatcher, mp::Dispatcher::kAllToAll);
    EXPECT_TRUE(r->ep_a2a_overlap);
    EXPECT_FALSE(r->tp_comm_overlap);
  }
}

TEST(RecipeMoeCommTest, ContainerRangePrecisionAndLayoutEachExcludeARow) {
  // Qwen3-235B on GB200: the overlap only in the 26.06+ MXFP8 presets
  // (Megatron-Bridge 55443cbfb).
  const mp::ParallelConfig layout = Layout(8, 3, 32);
  const RecipeKnobs* on =
      RecipeMoeCommFor("qwen3-235b-a22b", "gb200-nvl72", "26.06", mp::StackGeneration::k2606,
                       mp::Precision::kMxfp8, layout);
  ASSERT_NE(on, nullptr);
  EXPECT_EQ(on->dispatcher, mp::Dispatcher::kFusedDedup);
  EXPECT_TRUE(on->ep_a2a_overlap);
  EXPECT_FALSE(Covered("qwen3-235b-a22b", "gb200-nvl72", "26.04.01", mp::StackGeneration::k2602,
                       mp::Precision::kMxfp8, layout));
  EXPECT_FALSE(Covered("qwen3-235b-a22b", "gb200-nvl72", "26.06", mp::StackGeneration::k2606,
                       mp::Precision::kBf16, layout));
  // GPT-OSS-120B on 64 GB200: the EP64 presets only; EP 8 is another preset.
  EXPECT_TRUE(Covered("gpt-oss-120b", "gb200-nvl72", "26.02", mp::StackGeneration::k2602,
                      mp::Precision::kBf16, Layout(1, 1, 64)));
  EXPECT_FALSE(Covered("gpt-oss-120b", "gb200-nvl72", "26.02", mp::StackGeneration::k2602,
                       mp::Precision::kBf16, Layout(1, 1, 8)));
}

TEST(RecipeMoeCommTest, ClosedRangesEndAtTheirLastTagAndARowWithoutContainerIsItsGeneration) {
  // GPT-OSS-120B GB200 at 26.04 ran HybridEP, at 26.04.01 the NCCL
  // all-to-all (PR 3561), both with the overlap.
  const mp::ParallelConfig ep64 = Layout(1, 1, 64);
  const RecipeKnobs* v2604 =
      RecipeMoeCommFor("gpt-oss-120b", "gb200-nvl72", "26.04", mp::StackGeneration::k2602,
                       mp::Precision::kBf16, ep64);
  const RecipeKnobs* v260401 =
      RecipeMoeCommFor("gpt-oss-120b", "gb200-nvl72", "26.04.01", mp::StackGeneration::k2602,
                       mp::Precision::kBf16, ep64);
  ASSERT_NE(v2604, nullptr);
  ASSERT_NE(v260401, nullptr);
  EXPECT_EQ(v2604->dispatcher, mp::Dispatcher::kFusedDedup);
  EXPECT_EQ(v260401->dispatcher, mp::Dispatcher::kAllToAll);
  // Qwen3-30B-A3B on 8 B200: the all-to-all at 26.02 only.
  EXPECT_TRUE(Covered("qwen3-30b-a3b", "b200", "26.02", mp::StackGeneration::k2602,
                      mp::Precision::kMxfp8, Layout(1, 1, 8)));
  EXPECT_FALSE(Covered("qwen3-30b-a3b", "b200", "26.02.01", mp::StackGeneration::k2602,
                       mp::Precision::kMxfp8, Layout(1, 1, 8)));
  // No container: the generation's first (26.06), inside "26.06 on".
  EXPECT_TRUE(Covered("deepseek-v3", "gb300-nvl72", "", mp::StackGeneration::k2606,
                      mp::Precision::kMxfp8, Layout(2, 8, 32)));
  EXPECT_FALSE(Covered("deepseek-v3", "gb300-nvl72", "", mp::StackGeneration::k2602,
                       mp::Precision::kMxfp8, Layout(2, 8, 32)));
}

TEST(RecipeRecomputeTest, DenseRecipesRecomputeNothingAndGptOssB200RecomputesNormsAndActivation) {
  std::optional<mp::Recompute> llama =
      RecipeRecomputeFor("llama3.1-405b", "gb200-nvl72", "26.04", mp::Precision::kFp8, 16);
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->mode, mp::RecomputeMode::kNone);
  std::optional<mp::Recompute> oss =
      RecipeRecomputeFor("gpt-oss-120b", "b200", "26.02", mp::Precision::kBf16, 1);
  ASSERT_TRUE(oss.has_value());
  EXPECT_EQ(oss->mode, mp::RecomputeMode::kSelective);
  EXPECT_EQ(oss->modules, mp::kRecomputeLayerNorm | mp::kRecomputeMoeAct);
  // The one row no preset has: 26.02.01 Llama3-70B NVFP4 on GB300 at PP 1.
  EXPECT_FALSE(RecipeRecomputeFor("llama3-70b", "gb300-nvl72", "26.02.01", mp::Precision::kNvfp4, 1)
                   .has_value());
  EXPECT_FALSE(
      RecipeRecomputeFor("mixtral-8x7b", "h100-sxm", "26.02", mp::Precision::kBf16, 1).has_value());
  for (const RecipeRecomputeFact& f : RecipeRecomputeFacts()) {
    EXPECT_NE(std::string(f.source), "") << f.model_preset;
  }
}

TEST(RecipeOffloadTest, Llama70bFp8FsdpPresetsOffloadFortyOrTwentyLayers) {
  mp::ParallelConfig fsdp = Layout(1, 1, 1);
  fsdp.shard_params = true;
  EXPECT_EQ(RecipeOffloadLayersFor("llama3-70b", "gb200-nvl72", mp::Precision::kFp8, fsdp), 40);
  EXPECT_EQ(RecipeOffloadLayersFor("llama3-70b", "gb300-nvl72", mp::Precision::kFp8, fsdp), 20);
  EXPECT_EQ(RecipeOffloadLayersFor("llama3-70b", "h100-sxm", mp::Precision::kFp8, fsdp), 0);
  EXPECT_EQ(RecipeOffloadLayersFor("llama3-70b", "gb200-nvl72", mp::Precision::kMxfp8, fsdp), 0);
  mp::ParallelConfig no_fsdp = Layout(1, 1, 1);
  EXPECT_EQ(RecipeOffloadLayersFor("llama3-70b", "gb200-nvl72", mp::Precision::kFp8, no_fsdp), 0);
}

TEST(RecipeGraphsTest, ScopesFollowTheTagAndTheGpu) {
  // DeepSeek-V3 GB300: full iteration from 26.06; before it the table is
  // silent (nullopt), B200 eager.
  std::optional<RecipeGraphs> dsv3 =
      RecipeGraphsFor("deepseek-v3", "gb300-nvl72", "26.06", mp::Objective::kPretrain);
  ASSERT_TRUE(dsv3.has_value());
  EXPECT_TRUE(dsv3->on && dsv3->full_iteration);
  EXPECT_FALSE(
      RecipeGraphsFor("deepseek-v3", "gb300-nvl72", "26.04", mp::Objective::kPretrain).has_value());
  std::optional<RecipeGraphs> b200 =
      RecipeGraphsFor("deepseek-v3", "b200", "26.04", mp::Objective::kPretrain);
  ASSERT_TRUE(b200.has_value());
  EXPECT_FALSE(b200->on);
  // Qwen3-30B-A3B on B200: TE scope without attention at 26.02, with it after.
  std::optional<RecipeGraphs> q2602 =
      RecipeGraphsFor("qwen3-30b-a3b", "b200", "26.02", mp::Objective::kPretrain);
  std::optional<RecipeGraphs> q2604 =
      RecipeGraphsFor("qwen3-30b-a3b", "b200", "26.04", mp::Objective::kPretrain);
  ASSERT_TRUE(q2602.has_value() && q2604.has_value());
  EXPECT_TRUE(q2602->on && q2602->moe_router && q2602->moe_preprocess && !q2602->attn);
  EXPECT_TRUE(q2604->attn && !q2604->full_iteration);
  // Llama3-70B: pre-training eager, SFT with the TE MLP scope, H100 LoRA eager.
  EXPECT_FALSE(RecipeGraphsFor("llama3-70b", "gb300-nvl72", "26.06", mp::Objective::kPretrain)->on);
  EXPECT_TRUE(RecipeGraphsFor("llama3-70b", "gb300-nvl72", "26.06", mp::Objective::kFinetune)->on);
  EXPECT_FALSE(RecipeGraphsFor("llama3-70b", "h100-sxm", "26.06", mp::Objective::kLora)->on);
}

TEST(RecipeOptimizerStatesTest, DeepSeekV3BridgeRecipesKeepBf16MomentsExceptUnderFsdp) {
  const std::string bridge = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md";
  EXPECT_EQ(RecipeOptimizerStatesFor("mbridge-26.04-x", bridge, "deepseek-v3", false),
            mp::OptimizerStates::kBf16Moments);
  EXPECT_EQ(RecipeOptimizerStatesFor("mbridge-26.04-x", bridge, "deepseek-v3", true),
            mp::OptimizerStates::kFp32);
  EXPECT_EQ(RecipeOptimizerStatesFor("mlm-dsv3-gb200-opt-step05", "Megatron-LM guide",
                                     "deepseek-v3", false),
            mp::OptimizerStates::kBf16Moments);
  EXPECT_EQ(RecipeOptimizerStatesFor("mbridge-26.04-x", bridge, "qwen3-235b-a22b", false),
            mp::OptimizerStates::kFp32);
}

}  // namespace
}  // namespace moetune::tests
