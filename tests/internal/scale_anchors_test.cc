// The MLPerf anchors' arithmetic, by hand: each figure below is the
// per-file medians of scale_anchors.cc worked through on paper.
#include "tests/internal/scale_anchors.h"

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(ScaleAnchorsTest, FourRunsWithTheirPublishedLayouts) {
  const std::vector<ScaleAnchor> a = MlperfLlama405bAnchors();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].id, "mlperf-v5.1-nvidia-llama31-405b-tyche_ngpu512");
  EXPECT_EQ(a[1].id, "mlperf-v5.1-nvidia-llama31-405b-hsg_ngpu2560");
  EXPECT_EQ(a[2].id, "mlperf-v5.1-nvidia-llama31-405b-hsg_ngpu5120");
  EXPECT_EQ(a[3].id, "mlperf-v5.1-nvidia-llama31-405b-theia_ngpu512");
  for (const ScaleAnchor& s : a) {
    EXPECT_EQ(s.shape.seq_len, 8192);
    EXPECT_EQ(s.parallel.pp, 8);
    EXPECT_EQ(s.parallel.vp, 8);
    EXPECT_EQ(s.parallel.cp, 2);
    EXPECT_EQ(s.parallel.mbs, 1);
    // 126 layers = 1 + 62 x 2 + 1 over pp x vp = 64 virtual stages.
    EXPECT_EQ(s.parallel.first_stage_layers, 1);
    EXPECT_EQ(s.parallel.last_stage_layers, 1);
    EXPECT_EQ(s.knobs.precision, planner::Precision::kNvfp4);
    EXPECT_FALSE(s.knobs.overlap.tp_comm);
    EXPECT_TRUE(s.knobs.cuda_graphs);
    EXPECT_EQ(s.knobs.recompute.mode, planner::RecomputeMode::kNone);
  }
  EXPECT_EQ(a[0].parallel.tp, 4);
  EXPECT_EQ(a[3].parallel.tp, 2);
  EXPECT_EQ(a[3].cluster_preset, "gb300-nvl72");
}

TEST(ScaleAnchorsTest, MedianOfThreeIsTheMiddleValue) {
  EXPECT_DOUBLE_EQ(MedianStepSeconds({17.236673, 17.371391, 17.259342}), 17.259342);
  EXPECT_DOUBLE_EQ(MedianStepSeconds({3.193958, 3.189833, 3.178533}), 3.189833);
  EXPECT_DOUBLE_EQ(MedianStepSeconds({2.227329, 2.232120, 2.221999}), 2.227329);
  EXPECT_DOUBLE_EQ(MedianStepSeconds({13.139969, 13.170620, 13.144703}), 13.144703);
}

TEST(ScaleAnchorsTest, TokensAndMicroBatchesByHand) {
  const std::vector<ScaleAnchor> a = MlperfLlama405bAnchors();
  // 1152 x 8192 = 9,437,184 tokens; / 512 GPUs = 18,432 per GPU.
  EXPECT_DOUBLE_EQ(TokensPerStep(a[0].shape), 9437184.0);
  // 18,432 / 17.259342 s = 1,067.94 tokens/s/GPU.
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[0].shape, 17.259342), 1067.94, 0.01);
  // 960 x 8192 / 2560 = 3,072 per GPU; / 3.189833 s = 963.06.
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[1].shape, 3.189833), 963.06, 0.01);
  // 1280 x 8192 / 5120 = 2,048 per GPU; / 2.227329 s = 919.49.
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[2].shape, 2.227329), 919.49, 0.01);
  // 18,432 / 13.144703 s = 1,402.24.
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[3].shape, 13.144703), 1402.24, 0.01);
  // dp = 512 / (4 x 8 x 2) = 8 -> 1152 / 8 = 144; 2560 / 64 = 40 -> 24;
  // 5120 / 64 = 80 -> 16; GB300 TP2: 512 / 32 = 16 -> 72.
  EXPECT_EQ(MicroBatchesPerReplica(a[0].shape, a[0].parallel), 144);
  EXPECT_EQ(MicroBatchesPerReplica(a[1].shape, a[1].parallel), 24);
  EXPECT_EQ(MicroBatchesPerReplica(a[2].shape, a[2].parallel), 16);
  EXPECT_EQ(MicroBatchesPerReplica(a[3].shape, a[3].parallel), 72);
}

TEST(ScaleAnchorsTest, RatiosAndStepSplitByHand) {
  // 963.06 / 1067.94 = 0.9018 (2,560 / 512); 919.49 / 1067.94 = 0.8610;
  // 1402.24 / 1067.94 = 1.3130 (GB300 / GB200 at 512).
  const std::vector<ScaleAnchor> a = MlperfLlama405bAnchors();
  const double t512 = StepTokensPerSecPerGpu(a[0].shape, MedianStepSeconds(a[0].file_median_step_s));
  const double t2560 = StepTokensPerSecPerGpu(a[1].shape, MedianStepSeconds(a[1].file_median_step_s));
  const double t5120 = StepTokensPerSecPerGpu(a[2].shape, MedianStepSeconds(a[2].file_median_step_s));
  const double g512 = StepTokensPerSecPerGpu(a[3].shape, MedianStepSeconds(a[3].file_median_step_s));
  EXPECT_NEAR(t2560 / t512, 0.9018, 1e-4);
  EXPECT_NEAR(t5120 / t512, 0.8610, 1e-4);
  EXPECT_NEAR(g512 / t512, 1.3130, 1e-4);
  // 512 vs 2,560: t = (17.259342 - 3.189833) / (144 - 24) = 0.117246 s per
  // micro-batch; K = 3.189833 - 24 x 0.117246 = 0.375931 s per step.
  const StepSplit s = SplitStep(144, 17.259342, 24, 3.189833);
  EXPECT_NEAR(s.per_micro_batch_s, 0.117246, 1e-6);
  EXPECT_NEAR(s.per_step_s, 0.375931, 1e-6);
  // 512 vs 5,120: t = 15.032013 / 128 = 0.117438; K = 2.227329 - 16 t = 0.348327.
  const StepSplit u = SplitStep(144, 17.259342, 16, 2.227329);
  EXPECT_NEAR(u.per_micro_batch_s, 0.117438, 1e-6);
  EXPECT_NEAR(u.per_step_s, 0.348327, 1e-6);
}

}  // namespace
}  // namespace moetune::tests
