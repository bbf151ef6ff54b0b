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
  // The baseline stack has none of the guide's section-2 optimizations
  // (it had the permute fusion, guide section 1).
  const planner::MegatronFeatures& f0 = s[0].features;
  EXPECT_TRUE(f0.permute_fusion);
  EXPECT_FALSE(f0.mxfp8_fused_allocation);
  EXPECT_FALSE(f0.router_fusion);
  EXPECT_FALSE(f0.cpu_numa_binding);
  EXPECT_FALSE(f0.fused_swizzle_pdl);
  EXPECT_FALSE(f0.graph_shared_experts);
  EXPECT_FALSE(f0.quant_fused_norm);
  EXPECT_EQ(f0.flex_backend, planner::MegatronFeatures::FlexBackend::kDeepEp);
  // What each step changes.
  EXPECT_TRUE(s[1].features.mxfp8_fused_allocation);
  EXPECT_TRUE(s[2].features.router_fusion);
  EXPECT_EQ(s[3].name, "Enable DeepEP");
  EXPECT_EQ(s[3].knobs.dispatcher, planner::Dispatcher::kFusedDedup);
  EXPECT_EQ(s[4].knobs.recompute.modules, planner::kRecomputeMlp | planner::kRecomputeMoeAct);
  EXPECT_TRUE(s[5].knobs.cuda_graphs);
  EXPECT_TRUE(s[7].features.cpu_numa_binding);
  EXPECT_TRUE(s[8].features.fused_swizzle_pdl);
  EXPECT_TRUE(s[9].features.graph_shared_experts);
  EXPECT_EQ(s[10].features.flex_backend, planner::MegatronFeatures::FlexBackend::kHybridEp);
  EXPECT_TRUE(s[12].features.quant_fused_norm);
  std::vector<int> without_mechanism;
  for (size_t i = 1; i < s.size(); ++i) {
    if (!s[i].has_knob) without_mechanism.push_back(int(i));
  }
  EXPECT_THAT(without_mechanism, ElementsAre(11));
  // Tune DeepEP: DeepEP's SMs 24 -> 32, nothing else.
  EXPECT_EQ(s[5].features.deepep_num_sms, 24);
  EXPECT_EQ(s[6].features.deepep_num_sms, 32);
  EXPECT_EQ(s[6].knobs.dispatcher, s[5].knobs.dispatcher);
  EXPECT_EQ(s[6].features.cpu_numa_binding, s[5].features.cpu_numa_binding);
  // A step without a mechanism leaves knobs and features as the step before.
  EXPECT_EQ(s[11].features.deepep_num_sms, s[10].features.deepep_num_sms);
  EXPECT_EQ(s[11].features.flex_backend, s[10].features.flex_backend);
  EXPECT_THAT(s[11].mapping, ::testing::HasSubstr("no knob"));
  // The last step's features are the latest stack's.
  const planner::MegatronFeatures latest;
  const planner::MegatronFeatures& f12 = s[12].features;
  EXPECT_EQ(f12.mxfp8_fused_allocation, latest.mxfp8_fused_allocation);
  EXPECT_EQ(f12.permute_fusion, latest.permute_fusion);
  EXPECT_EQ(f12.router_fusion, latest.router_fusion);
  EXPECT_EQ(f12.flex_backend, latest.flex_backend);
  EXPECT_EQ(f12.graph_attn, latest.graph_attn);
  EXPECT_EQ(f12.graph_shared_experts, latest.graph_shared_experts);
  EXPECT_EQ(f12.cpu_numa_binding, latest.cpu_numa_binding);
  EXPECT_EQ(f12.fused_swizzle_pdl, latest.fused_swizzle_pdl);
  EXPECT_EQ(f12.quant_fused_norm, latest.quant_fused_norm);
}

TEST(KnobLadderTest, Qwen3H100EpOverlapPair) {
  const StandaloneLadder l = Qwen3H100EpOverlapLadder();
  ASSERT_EQ(l.steps.size(), 2u);
  ASSERT_EQ(l.measured_tflops.size(), 2u);
  EXPECT_EQ(l.measured_tflops[0], 245);
  EXPECT_EQ(l.measured_tflops[1], 276);
  // 256 GPUs = tp 2 x pp 8 x dp 16; the two steps differ in EP overlap only.
  EXPECT_EQ(l.parallel.tp * l.parallel.pp * 16, l.shape.gpus);
  EXPECT_FALSE(l.steps[0].knobs.overlap.ep_comm);
  EXPECT_TRUE(l.steps[1].knobs.overlap.ep_comm);
  planner::Knobs a = l.steps[0].knobs, b = l.steps[1].knobs;
  b.overlap.ep_comm = false;
  EXPECT_EQ(planner::ToString(a), planner::ToString(b));
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
