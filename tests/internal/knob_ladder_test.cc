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

// Knobs as text with the one knob a step is meant to change reset, so two
// steps compare equal when nothing else differs.
std::string WithoutEpOverlap(planner::Knobs k) {
  k.overlap.ep_comm = false;
  return planner::ToString(k);
}

TEST(KnobLadderTest, EveryStandaloneLadderAligns) {
  const std::vector<StandaloneLadder> all = StandaloneLadders();
  ASSERT_EQ(all.size(), 32u);
  EXPECT_EQ(all[0].title, Qwen3H100EpOverlapLadder().title);
  for (const StandaloneLadder& l : all) {
    SCOPED_TRACE(l.title);
    EXPECT_FALSE(l.source.empty());
    // One measured figure per step, in one unit.
    EXPECT_NE(l.measured_tflops.empty(), l.measured_step_s.empty());
    // Memory, where published, one figure per step.
    EXPECT_TRUE(l.measured_allocated_gb.empty() ||
                l.measured_allocated_gb.size() == l.steps.size());
    EXPECT_EQ(MeasuredThroughput(l).size(), l.steps.size());
    EXPECT_GE(l.steps.size(), 2u);
    // The layout tiles the GPUs: tp x cp x pp divides them.
    const planner::ParallelConfig& p = l.parallel;
    EXPECT_EQ(l.shape.gpus % (p.tp * p.cp * p.pp), 0);
    for (const LadderStep& step : l.steps) {
      EXPECT_EQ(step.has_knob, step.mapping.find("no knob") == std::string::npos) << step.id;
      const planner::ParallelConfig& q = step.parallel.value_or(p);
      EXPECT_EQ(l.shape.gpus % (q.tp * q.cp * q.pp), 0) << step.id;
    }
  }
}

// The Moonlight recompute study: five control -> variant pairs; each
// variant changes only the recompute (the rest of the knobs and the
// features equal the control's), and the measured gain is control time /
// variant time: 457.18 / 506.53 = 0.90257 for layernorm + moe_act (the
// source's "+10.79%" step time).
TEST(KnobLadderTest, MoonlightRecomputePairs) {
  const std::vector<StandaloneLadder> ladders = MoonlightH100RecomputeLadders();
  ASSERT_EQ(ladders.size(), 5u);
  for (const StandaloneLadder& l : ladders) {
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    EXPECT_EQ(l.model_preset, "moonlight-16b-a3b");
    EXPECT_EQ(l.shape.gpus, 8);
    EXPECT_EQ(l.shape.global_batch, 4);
    EXPECT_EQ(l.parallel.tp, 2);
    EXPECT_EQ(l.parallel.ep, 8);
    EXPECT_EQ(l.steps[0].knobs.recompute.mode, planner::RecomputeMode::kNone);
    EXPECT_EQ(l.steps[1].knobs.recompute.mode, planner::RecomputeMode::kSelective);
    planner::Knobs variant = l.steps[1].knobs;
    variant.recompute = l.steps[0].knobs.recompute;
    EXPECT_EQ(planner::ToString(variant), planner::ToString(l.steps[0].knobs));
    ASSERT_EQ(l.measured_step_s.size(), 2u);
    EXPECT_DOUBLE_EQ(l.measured_step_s[0], 0.45718);
  }
  EXPECT_EQ(ladders[4].steps[1].knobs.recompute.modules,
            planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct);
  EXPECT_NEAR(StepGains(MeasuredThroughput(ladders[4]))[1], 0.90257, 1e-5);
}

TEST(KnobLadderTest, Qwen3A3bHybridEpOverlapPair) {
  const StandaloneLadder l = Qwen3A3bH100HybridEpOverlapLadder();
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_EQ(l.shape.gpus, 16);
  EXPECT_EQ(l.parallel.ep, 16);
  EXPECT_FALSE(l.steps[0].knobs.overlap.ep_comm);
  EXPECT_TRUE(l.steps[1].knobs.overlap.ep_comm);
  EXPECT_EQ(WithoutEpOverlap(l.steps[0].knobs), WithoutEpOverlap(l.steps[1].knobs));
  EXPECT_EQ(l.steps[0].features.flex_backend,
            planner::MegatronFeatures::FlexBackend::kHybridEp);
  EXPECT_FALSE(l.steps[0].features.graph_attn);  // scopes moe_router + moe_preprocess
  EXPECT_FALSE(l.steps[0].features.graph_full_iteration);
  EXPECT_FALSE(l.steps[1].features.graph_full_iteration);
  // 287.305 / 244.039 = 1.17729: the source's "+17.729%".
  const std::vector<double> g = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(g[1], 1.17729, 1e-5);
}

TEST(KnobLadderTest, Qwen3A3bAllToAllOverlapFromStepTimes) {
  const StandaloneLadder l = Qwen3A3bH100AllToAllOverlapLadder();
  ASSERT_EQ(l.steps.size(), 3u);
  EXPECT_TRUE(l.measured_tflops.empty());
  EXPECT_EQ(l.steps[0].knobs.dispatcher, planner::Dispatcher::kAllToAll);
  EXPECT_FALSE(l.steps[0].knobs.cuda_graphs);
  EXPECT_FALSE(l.steps[0].features.permute_fusion);
  EXPECT_EQ(WithoutEpOverlap(l.steps[0].knobs), WithoutEpOverlap(l.steps[1].knobs));
  EXPECT_TRUE(l.steps[1].knobs.overlap.ep_comm);
  // delay_wgrad_compute is a software feature: same knobs, the feature off
  // in the plain-overlap steps (as the card runs them), on in the last.
  EXPECT_TRUE(l.steps[2].has_knob);
  EXPECT_EQ(planner::ToString(l.steps[2].knobs), planner::ToString(l.steps[1].knobs));
  EXPECT_FALSE(l.steps[0].features.delay_wgrad_compute);
  EXPECT_FALSE(l.steps[1].features.delay_wgrad_compute);
  EXPECT_TRUE(l.steps[2].features.delay_wgrad_compute);
  // From step times: 41.25 / 31.31 = 1.3175 (the source's 1.317x), then
  // 31.31 / 31.20 = 1.0035; cumulative 41.25 / 31.20 = 1.3221 (1.322x).
  const std::vector<double> g = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(g[1], 1.3175, 1e-4);
  EXPECT_NEAR(g[2], 1.0035, 1e-4);
  EXPECT_NEAR(g[1] * g[2], 1.3221, 1e-4);
}

TEST(KnobLadderTest, Qwen3A3bCudaGraphsMeasuredSlower) {
  const StandaloneLadder l = Qwen3A3bH100CudaGraphLadder();
  ASSERT_EQ(l.steps.size(), 2u);
  EXPECT_FALSE(l.steps[0].knobs.cuda_graphs);
  EXPECT_TRUE(l.steps[1].knobs.cuda_graphs);
  planner::Knobs a = l.steps[0].knobs;
  a.cuda_graphs = true;
  EXPECT_EQ(planner::ToString(a), planner::ToString(l.steps[1].knobs));
  // 41.36 s eager, 42.00 s with graphs: gain 41.36 / 42.00 = 0.98476.
  const std::vector<double> g = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(g[1], 0.98476, 1e-5);
}

TEST(KnobLadderTest, Qwen3LongContextBalancePairs) {
  const std::vector<StandaloneLadder> ls = Qwen3H100LongContextBalanceLadders();
  ASSERT_EQ(ls.size(), 4u);
  const int seq[] = {16384, 32768, 65536, 131072};
  const double dropless[] = {237, 277, 320, 357}, forced[] = {295, 335, 368, 389};
  for (size_t i = 0; i < ls.size(); ++i) {
    const StandaloneLadder& l = ls[i];
    EXPECT_EQ(l.shape.seq_len, seq[i]);
    EXPECT_EQ(l.parallel.cp, 1 << i);  // CP 1, 2, 4, 8
    // 256 GPUs = tp 4 x cp x pp 8 x dp: dp = 8 / cp.
    EXPECT_EQ(l.parallel.tp * l.parallel.cp * l.parallel.pp * (8 >> i), 256);
    EXPECT_THAT(l.measured_tflops, ElementsAre(dropless[i], forced[i]));
    // Dropless: the model's natural routing (no pinned imbalance); forced:
    // balanced; nothing else differs.
    EXPECT_EQ(l.steps[0].knobs.routing, planner::Routing::kNatural);
    EXPECT_EQ(l.steps[0].knobs.moe_load_imbalance, 1.0);
    EXPECT_EQ(l.steps[1].knobs.routing, planner::Routing::kBalanced);
    EXPECT_EQ(l.steps[1].knobs.moe_load_imbalance, 1.0);
    planner::Knobs a = l.steps[0].knobs;
    a.routing = planner::Routing::kBalanced;
    EXPECT_EQ(planner::ToString(a), planner::ToString(l.steps[1].knobs));
  }
  // 295 / 237 = 1.2447 at 16k, 389 / 357 = 1.0896 at 128k.
  EXPECT_NEAR(StepGains(ls[0].measured_tflops)[1], 1.2447, 1e-4);
  EXPECT_NEAR(StepGains(ls[3].measured_tflops)[1], 1.0896, 1e-4);
}

TEST(KnobLadderTest, RecipeIndexLadders) {
  // Qwen3-30B-A3B on 16 GB200: 514 / 528 = 0.97348 (MXFP8 with scoped
  // graphs measured slower than BF16 eager), 646.8 / 514 = 1.25837.
  const StandaloneLadder a3b = Qwen3A3bGb200RecipeLadder();
  ASSERT_EQ(a3b.steps.size(), 3u);
  EXPECT_EQ(a3b.shape.gpus, 16);
  EXPECT_EQ(a3b.parallel.ep, 16);
  EXPECT_EQ(a3b.parallel.mbs, 4);
  EXPECT_EQ(a3b.steps[0].knobs.precision, planner::Precision::kBf16);
  EXPECT_FALSE(a3b.steps[0].knobs.cuda_graphs);
  EXPECT_EQ(a3b.steps[1].knobs.precision, planner::Precision::kMxfp8);
  EXPECT_TRUE(a3b.steps[1].knobs.cuda_graphs);
  EXPECT_FALSE(a3b.steps[1].features.graph_full_iteration);
  EXPECT_TRUE(a3b.steps[2].features.graph_full_iteration);
  EXPECT_EQ(planner::ToString(a3b.steps[1].knobs), planner::ToString(a3b.steps[2].knobs));
  for (const LadderStep& s : a3b.steps) EXPECT_FALSE(s.knobs.overlap.ep_comm) << s.id;
  std::vector<double> g = StepGains(MeasuredThroughput(a3b));
  EXPECT_NEAR(g[1], 0.97348, 1e-5);
  EXPECT_NEAR(g[2], 1.25837, 1e-5);
  // Qwen3-235B-A22B on 128 GB200: 1159.5 / 1018 = 1.13900; one feature.
  const StandaloneLadder a22b = Qwen3A22bGb200RecipeLadder();
  ASSERT_EQ(a22b.steps.size(), 2u);
  EXPECT_EQ(a22b.parallel.ep, 64);
  EXPECT_EQ(planner::ToString(a22b.steps[0].knobs), planner::ToString(a22b.steps[1].knobs));
  EXPECT_TRUE(a22b.steps[0].knobs.overlap.ep_comm);
  EXPECT_FALSE(a22b.steps[0].features.graph_full_iteration);
  EXPECT_TRUE(a22b.steps[1].features.graph_full_iteration);
  g = StepGains(MeasuredThroughput(a22b));
  EXPECT_NEAR(g[1], 1.13900, 1e-5);
  // Qwen3-30B-A3B on 32 H100: 232.4 / 234.1 = 0.99274.
  const StandaloneLadder h100 = Qwen3A3bH100RecipeLadder();
  ASSERT_EQ(h100.steps.size(), 2u);
  EXPECT_EQ(h100.shape.gpus, 32);
  EXPECT_EQ(h100.parallel.ep, 8);
  EXPECT_EQ(h100.steps[1].knobs.precision, planner::Precision::kFp8);
  g = StepGains(MeasuredThroughput(h100));
  EXPECT_NEAR(g[1], 0.99274, 1e-5);
}

TEST(KnobLadderTest, SummaryByHand) {
  // Ladder A: measured 1.1 then 0.9, predicted 1.2 then 1.0 (no gain):
  // both signs right. Ladder B: measured 1.05, predicted 1.0: wrong.
  // Errors |1.2/1.1 - 1| = 0.0909, |1.0/0.9 - 1| = 0.1111,
  // |1.0/1.05 - 1| = 0.0476: median 0.0909. A one-step ladder counts for
  // nothing.
  const LadderSummary s = SummarizeLadders(
      {{{1, 1.1, 0.9}, {1, 1.2, 1.0}}, {{1, 1.05}, {1, 1.0}}, {{1}, {1}}});
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.ladders, 2);
  EXPECT_EQ(s.signs_right, 2);
  EXPECT_NEAR(s.median_abs_gain_error, 1.2 / 1.1 - 1, 1e-12);
  // Even count: the mean of the middle two.
  const LadderSummary e = SummarizeLadders({{{1, 1.1, 1.1}, {1, 1.1, 1.21}}});
  EXPECT_NEAR(e.median_abs_gain_error, 0.05, 1e-12);
}

TEST(KnobLadderTest, GainsByHand) {
  // 494 -> 529 -> 566: 1, 529/494 = 1.0709, 566/529 = 1.0699.
  const std::vector<double> g = StepGains({494, 529, 566});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[1], 529.0 / 494);
  EXPECT_DOUBLE_EQ(g[2], 566.0 / 529);
}

// Bridge pull request 4226: the two full-graph rows differ only in offload
// and recompute; the measured gains are step-time ratios, 13.89 / 15.10 =
// 0.91987 (offloading core_attn + attn_proj loses) and 15.10 / 12.94 =
// 1.16692.
// Bridge pull request 4458: per precision the layout goes from PP8 at MBS 2
// to PP8 x VP2 (MBS 1 for BF16 and MXFP8, 2 for NVFP4), with Bridge's
// stage splits (8 + 6 x 8 + 5 and 4 + 14 x 4 + 1 of the 61 layers); only
// the MXFP8 step changes knobs (full-iteration graphs, EP overlap).
TEST(KnobLadderTest, Dsv3B300RecipeUpdate) {
  const std::vector<StandaloneLadder> v = Dsv3B300RecipeUpdateLadders();
  ASSERT_EQ(v.size(), 3u);
  const int mbs_after[] = {1, 1, 2};
  for (size_t i = 0; i < v.size(); ++i) {
    const StandaloneLadder& l = v[i];
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    EXPECT_FALSE(l.steps[0].parallel.has_value());
    ASSERT_TRUE(l.steps[1].parallel.has_value());
    const planner::ParallelConfig& a = l.parallel;
    const planner::ParallelConfig& b = *l.steps[1].parallel;
    EXPECT_EQ(a.pp, 8);
    EXPECT_EQ(a.vp, 1);
    EXPECT_EQ(a.mbs, 2);
    EXPECT_EQ(a.first_stage_layers.value_or(0) + 6 * 8 + a.last_stage_layers.value_or(0), 61);
    EXPECT_EQ(b.vp, 2);
    EXPECT_EQ(b.mbs, mbs_after[i]);
    EXPECT_EQ(b.first_stage_layers.value_or(0) + 14 * 4 + b.last_stage_layers.value_or(0), 61);
    EXPECT_EQ(l.steps[1].features.graph_full_iteration, i == 1);
    EXPECT_EQ(l.steps[1].knobs.overlap.ep_comm, i == 1);
    EXPECT_EQ(l.steps[0].knobs.precision, l.steps[1].knobs.precision);
  }
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[1]))[1], 1161.4 / 894.1, 1e-12);
}

// Bridge pull request 1869: per precision PP16 at EP 8 with NCCL's
// all-to-all, then EP 16 with DeepEP (the flex dispatcher), nothing else
// changed; Bridge's (16, 1) split 4 + 14 x 4 + 1 of the 61 layers.
TEST(KnobLadderTest, Dsv3B200EpUpdate) {
  const std::vector<StandaloneLadder> v = Dsv3B200EpUpdateLadders();
  ASSERT_EQ(v.size(), 2u);
  const planner::Precision precision[] = {planner::Precision::kBf16,
                                          planner::Precision::kMxfp8};
  for (size_t i = 0; i < v.size(); ++i) {
    const StandaloneLadder& l = v[i];
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    const planner::ParallelConfig& a = l.parallel;
    ASSERT_TRUE(l.steps[1].parallel.has_value());
    const planner::ParallelConfig& b = *l.steps[1].parallel;
    EXPECT_EQ(a.pp, 16);
    EXPECT_EQ(a.vp, 1);
    EXPECT_EQ(a.first_stage_layers.value_or(0) + 14 * 4 + a.last_stage_layers.value_or(0), 61);
    EXPECT_EQ(a.ep, 8);
    EXPECT_EQ(b.ep, 16);
    EXPECT_EQ(b.pp, a.pp);
    EXPECT_EQ(b.first_stage_layers, a.first_stage_layers);
    EXPECT_EQ(l.steps[0].knobs.dispatcher, planner::Dispatcher::kAllToAll);
    EXPECT_EQ(l.steps[1].knobs.dispatcher, planner::Dispatcher::kFusedDedup);
    EXPECT_EQ(l.steps[1].features.flex_backend, planner::MegatronFeatures::FlexBackend::kDeepEp);
    for (const LadderStep& step : l.steps) {
      EXPECT_EQ(step.knobs.precision, precision[i]);
      EXPECT_FALSE(step.knobs.cuda_graphs);
      EXPECT_FALSE(step.knobs.overlap.ep_comm);
      EXPECT_EQ(step.knobs.recompute.modules, planner::kRecomputeMlaUpProj);
    }
  }
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[0]))[1], 575.0 / 532.0, 1e-12);
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[1]))[1], 635.0 / 557.0, 1e-12);
}

// Bridge pull request 1760: PP8 VP4 EP8 on 64 B200 with the EP A2A overlap
// (and delayed wgrad, which Bridge turns on with it), then without; at
// MXFP8 also without interleaving (96 / 8 = 12 layers a stage, 11 on the
// first and the last). Step times only: gains 17.2 / 16.0 and 20.1 / 16.9.
TEST(KnobLadderTest, Qwen3A22bB200OverlapOff) {
  const std::vector<StandaloneLadder> v = Qwen3A22bB200OverlapOffLadders();
  ASSERT_EQ(v.size(), 2u);
  for (size_t i = 0; i < v.size(); ++i) {
    const StandaloneLadder& l = v[i];
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    EXPECT_EQ(l.shape.gpus, 64);
    EXPECT_EQ(l.parallel.pp * l.parallel.vp, 32);
    EXPECT_EQ(*l.parallel.first_stage_layers + 30 * 3 + *l.parallel.last_stage_layers, 94);
    EXPECT_TRUE(l.steps[0].knobs.overlap.ep_comm);
    EXPECT_TRUE(l.steps[0].features.delay_wgrad_compute);
    EXPECT_FALSE(l.steps[1].knobs.overlap.ep_comm);
    EXPECT_FALSE(l.steps[1].features.delay_wgrad_compute);
    for (const LadderStep& step : l.steps) {
      EXPECT_EQ(step.knobs.dispatcher, planner::Dispatcher::kAllToAll);
      EXPECT_FALSE(step.knobs.cuda_graphs);
    }
    EXPECT_TRUE(l.measured_tflops.empty());
  }
  EXPECT_FALSE(v[0].steps[1].parallel.has_value());
  ASSERT_TRUE(v[1].steps[1].parallel.has_value());
  const planner::ParallelConfig& flat = *v[1].steps[1].parallel;
  EXPECT_EQ(flat.vp, 1);
  EXPECT_EQ(*flat.first_stage_layers + 6 * 12 + *flat.last_stage_layers, 94);
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[0]))[1], 17.2 / 16.0, 1e-12);
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[1]))[1], 20.1 / 16.9, 1e-12);
}

// Bridge pull request 3561: the GPT-OSS-120B GB200 V2 recipe (EP64 in one
// NVL72 domain, MBS4, eager, EP overlap, layernorm + moe_act recompute)
// with HybridEP, then the NCCL all-to-all; nothing else changes. Gains
// 423.6 / 406.6 (BF16) and 438.5 / 431.0 (MXFP8).
TEST(KnobLadderTest, GptOssGb200Dispatcher) {
  const std::vector<StandaloneLadder> v = GptOssGb200DispatcherLadders();
  ASSERT_EQ(v.size(), 2u);
  const planner::Precision precision[] = {planner::Precision::kBf16,
                                          planner::Precision::kMxfp8};
  for (size_t i = 0; i < v.size(); ++i) {
    const StandaloneLadder& l = v[i];
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    EXPECT_EQ(l.shape.gpus, 64);
    EXPECT_EQ(l.shape.global_batch, 1280);
    EXPECT_EQ(l.parallel.ep, 64);
    EXPECT_EQ(l.parallel.mbs, 4);
    EXPECT_EQ(l.parallel.tp * l.parallel.pp, 1);
    EXPECT_EQ(l.steps[0].knobs.dispatcher, planner::Dispatcher::kFusedDedup);
    EXPECT_EQ(l.steps[1].knobs.dispatcher, planner::Dispatcher::kAllToAll);
    EXPECT_EQ(l.steps[0].features.flex_backend, planner::MegatronFeatures::FlexBackend::kHybridEp);
    for (const LadderStep& step : l.steps) {
      EXPECT_FALSE(step.parallel.has_value());
      EXPECT_EQ(step.knobs.precision, precision[i]);
      EXPECT_FALSE(step.knobs.cuda_graphs);
      EXPECT_TRUE(step.knobs.overlap.ep_comm);
      EXPECT_EQ(step.knobs.recompute.modules,
                planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct);
    }
  }
  // Step times at Bridge's 433 TFLOP/s per 15,938 tokens/s/GPU: 81,920
  // tokens per GPU and step, 406.6 TFLOP/s -> 5.474 s.
  ASSERT_EQ(v[0].measured_step_s.size(), 2u);
  EXPECT_NEAR(v[0].measured_step_s[0], 81920 / (406.6e12 * 15938 / 433e12), 1e-9);
  EXPECT_NEAR(v[0].measured_step_s[0], 5.474, 5e-4);
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[0]))[1], 423.6 / 406.6, 1e-12);
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[1]))[1], 438.5 / 431.0, 1e-12);
}

// Bridge pull request 3549: each precision's V2 recipe before (BF16 at PP8,
// FP8 / NVFP4 at PP16, MBS 1, no graphs) and after (PP8 MBS 2, TE graphs
// over attn, moe_router, moe_preprocess); Bridge's splits 4 + 14 x 4 + 1
// and 8 + 6 x 8 + 5 of the 61 layers.
TEST(KnobLadderTest, Dsv3B300GraphsMbs) {
  const std::vector<StandaloneLadder> v = Dsv3B300GraphsMbsLadders();
  ASSERT_EQ(v.size(), 3u);
  const int pp_before[] = {8, 16, 16};
  for (size_t i = 0; i < v.size(); ++i) {
    const StandaloneLadder& l = v[i];
    SCOPED_TRACE(l.title);
    ASSERT_EQ(l.steps.size(), 2u);
    const planner::ParallelConfig& a = l.parallel;
    ASSERT_TRUE(l.steps[1].parallel.has_value());
    const planner::ParallelConfig& b = *l.steps[1].parallel;
    EXPECT_EQ(a.pp, pp_before[i]);
    EXPECT_EQ(a.mbs, 1);
    EXPECT_EQ(b.pp, 8);
    EXPECT_EQ(b.mbs, 2);
    const int middle_a = (a.pp - 2) * (a.pp == 16 ? 4 : 8);
    EXPECT_EQ(*a.first_stage_layers + middle_a + *a.last_stage_layers, 61);
    EXPECT_EQ(*b.first_stage_layers + 6 * 8 + *b.last_stage_layers, 61);
    EXPECT_FALSE(l.steps[0].knobs.cuda_graphs);
    EXPECT_TRUE(l.steps[1].knobs.cuda_graphs);
    EXPECT_TRUE(l.steps[1].features.graph_attn);
    EXPECT_FALSE(l.steps[1].features.graph_full_iteration);
    EXPECT_FALSE(l.steps[1].knobs.overlap.ep_comm);
    EXPECT_EQ(l.steps[0].knobs.precision, l.steps[1].knobs.precision);
  }
  EXPECT_NEAR(StepGains(MeasuredThroughput(v[2]))[1], 982.35 / 754.593, 1e-12);
}

TEST(KnobLadderTest, Dsv3Gb200FullIterationRows) {
  const StandaloneLadder l = Dsv3Gb200FullIterationLadder();
  ASSERT_EQ(l.steps.size(), 3u);
  EXPECT_EQ(l.shape.gpus, l.parallel.pp * 64);  // tp 1 x pp 4 x dp 64
  EXPECT_FALSE(l.steps[0].features.graph_full_iteration);
  EXPECT_TRUE(l.steps[1].features.graph_full_iteration);
  EXPECT_EQ(l.steps[0].knobs.offload_modules, uint32_t{planner::kOffloadCoreAttn});
  EXPECT_EQ(l.steps[1].knobs.offload_modules,
            uint32_t{planner::kOffloadCoreAttn | planner::kOffloadAttnProj});
  EXPECT_FALSE(l.steps[0].knobs.overlap.ep_comm);
  EXPECT_TRUE(l.steps[1].knobs.overlap.ep_comm);
  planner::Knobs shipped = l.steps[2].knobs;
  shipped.offload_activations = l.steps[1].knobs.offload_activations;
  shipped.offload_modules = l.steps[1].knobs.offload_modules;
  shipped.recompute = l.steps[1].knobs.recompute;
  EXPECT_EQ(planner::ToString(shipped), planner::ToString(l.steps[1].knobs));
  EXPECT_EQ(l.steps[2].knobs.recompute.modules, uint32_t{planner::kRecomputeMlaUpProj});
  const std::vector<double> g = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(g[1], 0.91987, 1e-5);
  EXPECT_NEAR(g[2], 1.16692, 1e-5);
}

// Megatron-LM pull request 6311's proxy: DeepSeek-V3 cut to 14 layers
// (3 dense + 11 MoE, MTP kept), 8 virtual stages of 2 with the MTP and loss
// stage empty of decoder layers: 2 + 6 x 2 + 0 = 14; full recompute costs
// 225.1 / 184.2 = 1.2220x the step.
TEST(KnobLadderTest, Dsv3ProxyH100FullRecompute) {
  const StandaloneLadder l = Dsv3ProxyH100FullRecomputeLadder();
  absl::StatusOr<planner::ModelSpec> m = LadderModel(l);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_layers, 14);
  EXPECT_EQ(m->mtp_layers, 1);
  EXPECT_EQ(m->first_k_dense, 3);
  EXPECT_EQ(m->NumMoeLayers(), 11);
  const planner::ParallelConfig& p = l.parallel;
  EXPECT_EQ(p.pp * p.vp, 8);
  EXPECT_EQ(*p.first_stage_layers + 6 * 2 + *p.last_stage_layers, 14);
  EXPECT_EQ(l.steps[1].knobs.recompute.mode, planner::RecomputeMode::kFull);
  EXPECT_NEAR(1.0 / StepGains(MeasuredThroughput(l))[1], 1.22204, 1e-5);
  // A cut deeper than the preset is refused by name.
  StandaloneLadder deeper = l;
  deeper.proxy_layers = 62;
  EXPECT_THAT(LadderModel(deeper).status().message(), ::testing::HasSubstr("only 61 layers"));
}

// The Bridge cpu-offloading card: six step times, the five offload steps
// 996 / 1,871 = 0.53234x and so on down to 996 / 4,189 = 0.23777x; the
// overlap step 4,189 / 3,877 = 1.08047x. Each step changes one knob.
TEST(KnobLadderTest, Qwen3A3bH100OptimizerOffload) {
  const StandaloneLadder l = Qwen3A3bH100OptimizerOffloadLadder();
  ASSERT_EQ(l.steps.size(), 6u);
  const std::vector<double> gains = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(gains[1], 0.996 / 1.871, 1e-9);
  EXPECT_NEAR(gains[5], 4.189 / 3.877, 1e-9);
  for (int i = 1; i <= 4; ++i) {
    EXPECT_DOUBLE_EQ(l.steps[i].knobs.optimizer_offload_fraction, 0.25 * i);
    EXPECT_FALSE(l.steps[i].knobs.optimizer_offload_overlap);
  }
  EXPECT_EQ(l.steps[0].knobs.optimizer_offload_fraction, 0.0);
  EXPECT_TRUE(l.steps[5].knobs.optimizer_offload_overlap);
  EXPECT_EQ(l.steps[5].knobs.optimizer_offload_fraction, 1.0);
  const std::vector<StandaloneLadder> all = StandaloneLadders();
  EXPECT_EQ(all[all.size() - 2].title, l.title);
}

// NeMo RL's single-GPU microbenchmark: the overlap measured slower at 50%
// (1.187 / 1.216 = 0.97615x), then 100% with the overlap 1.216 / 1.678 =
// 0.72467x.
TEST(KnobLadderTest, Qwen3SmallH100OptimizerOffload) {
  const StandaloneLadder l = Qwen3SmallH100OptimizerOffloadLadder();
  ASSERT_EQ(l.steps.size(), 4u);
  const std::vector<double> gains = StepGains(MeasuredThroughput(l));
  EXPECT_NEAR(gains[2], 1.187 / 1.216, 1e-9);
  EXPECT_NEAR(gains[3], 1.216 / 1.678, 1e-9);
  EXPECT_EQ(l.steps[1].knobs.optimizer_offload_fraction, 0.5);
  EXPECT_FALSE(l.steps[1].knobs.optimizer_offload_overlap);
  EXPECT_TRUE(l.steps[2].knobs.optimizer_offload_overlap);
  EXPECT_EQ(l.steps[3].knobs.optimizer_offload_fraction, 1.0);
  EXPECT_EQ(StandaloneLadders().back().title, l.title);
  absl::StatusOr<planner::ModelSpec> m = LadderModel(l);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->tie_word_embeddings);
}

}  // namespace
}  // namespace moetune::tests
