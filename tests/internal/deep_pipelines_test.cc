#include "tests/internal/deep_pipelines.h"

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(DeepPipelines, LayoutsFillTheirGpus) {
  for (const LayoutGroup& g : HopperDeepPipelineGroups()) {
    ASSERT_FALSE(g.cases.empty()) << g.title;
    for (const LayoutCase& c : g.cases) {
      const planner::ParallelConfig& p = c.parallel;
      EXPECT_EQ(p.tp * p.pp * p.dp * p.cp, g.shape.gpus) << g.title << " " << c.name;
      // Expert parallelism spans the data-parallel x tensor ranks of a stage.
      EXPECT_EQ((p.dp * p.tp) % p.ep, 0) << g.title << " " << c.name;
    }
  }
}

TEST(DeepPipelines, TokensPerSecondFromStepTime) {
  planner::TrainingShape s;
  s.gpus = 256, s.seq_len = 4096, s.global_batch = 2048;
  // 2048 x 4096 / (19.7 s x 256) = 1663.35 (the ModelZoo 245 TF row:
  // x 147.9 GFLOP/token = 246 TFLOPS).
  EXPECT_NEAR(TokensPerSecPerGpu(s, 19.7), 1663.35, 0.01);
}

TEST(DeepPipelines, MeasuredStepFromTflops) {
  // A source that publishes TFLOP/s: step = model FLOPs per step per GPU /
  // (TFLOP/s x 1e12). 1.774e15 FLOP / 704e12 FLOP/s = 2.5199 s.
  LayoutCase c;
  c.measured_tflops = 704.0;
  ASSERT_TRUE(MeasuredCaseStepSeconds(c, 1.774e15).has_value());
  EXPECT_NEAR(*MeasuredCaseStepSeconds(c, 1.774e15), 2.5199, 1e-4);
  // A published step time is taken as it is.
  c.measured_step_s = 3.0;
  EXPECT_DOUBLE_EQ(*MeasuredCaseStepSeconds(c, 1.774e15), 3.0);
  // Neither: no measurement.
  EXPECT_FALSE(MeasuredCaseStepSeconds(LayoutCase{}, 1.774e15).has_value());
}

TEST(DeepPipelines, Llama70bSftGroupIsOneJob) {
  // The three layouts of the memory-tuning experiment differ only in TP and
  // PP (and so DP): same knobs, VP 5, MBS 1, each with a measured TFLOP/s.
  bool found = false;
  for (const LayoutGroup& g : HopperDeepPipelineGroups()) {
    if (g.model_preset != "llama3-70b") continue;
    found = true;
    ASSERT_EQ(g.cases.size(), 3u);
    EXPECT_EQ(g.shape.objective, planner::Objective::kFinetune);
    for (const LayoutCase& c : g.cases) {
      EXPECT_TRUE(c.measured_tflops.has_value()) << c.name;
      EXPECT_EQ(c.parallel.vp, 5) << c.name;
      EXPECT_EQ(c.parallel.mbs, 1) << c.name;
      EXPECT_EQ(c.parallel.tp * c.parallel.pp * c.parallel.dp, 32) << c.name;
      EXPECT_EQ(c.knobs.precision, planner::Precision::kFp8) << c.name;
      EXPECT_EQ(c.knobs.recompute.modules, planner::kRecomputeCoreAttn) << c.name;
    }
  }
  EXPECT_TRUE(found);
}

TEST(DeepPipelines, PaiH800GroupsAreTheIssuesLayouts) {
  // Pai-Megatron-Patch issue 658: PP32 VP3 EP8 on 256 H800, NCCL
  // all-to-all, no CUDA graphs, no permute / router fusion; MBS 4 with full
  // recompute at GBS 4096 (42.537 / 43.495 s at TP1 / TP2), MBS 1 with
  // selective recompute at GBS 2048 (22.42 / 22.946 s at TP2 / TP1).
  const std::vector<LayoutGroup> groups = HopperDeepPipelineGroups();
  std::vector<const LayoutGroup*> h800;
  for (const LayoutGroup& g : groups) {
    if (g.cluster_preset == "h800") h800.push_back(&g);
  }
  ASSERT_EQ(h800.size(), 2u);
  const int gbs[] = {4096, 2048};
  const int mbs[] = {4, 1};
  const double step_s[2][2] = {{42.537, 43.495}, {22.42, 22.946}};
  for (size_t i = 0; i < 2; ++i) {
    const LayoutGroup& g = *h800[i];
    SCOPED_TRACE(g.title);
    EXPECT_EQ(g.shape.global_batch, gbs[i]);
    EXPECT_FALSE(g.features.permute_fusion);
    EXPECT_FALSE(g.features.router_fusion);
    ASSERT_EQ(g.cases.size(), 2u);
    for (size_t j = 0; j < 2; ++j) {
      const LayoutCase& c = g.cases[j];
      EXPECT_EQ(c.parallel.pp, 32) << c.name;
      EXPECT_EQ(c.parallel.vp, 3) << c.name;
      EXPECT_EQ(c.parallel.ep, 8) << c.name;
      EXPECT_EQ(c.parallel.mbs, mbs[i]) << c.name;
      EXPECT_EQ(c.knobs.dispatcher, planner::Dispatcher::kAllToAll) << c.name;
      EXPECT_FALSE(c.knobs.cuda_graphs) << c.name;
      EXPECT_FALSE(c.knobs.overlap.ep_comm) << c.name;
      EXPECT_EQ(c.knobs.recompute.mode,
                i == 0 ? planner::RecomputeMode::kFull : planner::RecomputeMode::kSelective)
          << c.name;
      ASSERT_TRUE(c.measured_step_s.has_value()) << c.name;
      EXPECT_DOUBLE_EQ(*c.measured_step_s, step_s[i][j]) << c.name;
    }
  }
  // 2048 x 4096 / (22.42 s x 256) = 1,461.55 tokens/s/GPU, as the issue's
  // table (1,461.56).
  EXPECT_NEAR(TokensPerSecPerGpu(h800[1]->shape, 22.42), 1461.56, 0.02);
}

}  // namespace
}  // namespace moetune::tests
