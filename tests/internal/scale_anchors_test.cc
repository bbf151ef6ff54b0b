// The MLPerf anchors' arithmetic, by hand: each figure below is the
// per-file medians of scale_anchors.cc worked through on paper.
#include "tests/internal/scale_anchors.h"

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

// A run's measured tokens/s/GPU: its measured step over its shape.
double MeasuredTokensPerSecPerGpu(const ScaleAnchor& a) {
  return StepTokensPerSecPerGpu(a.shape, MeasuredStepSeconds(a));
}

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
  const double t512 =
      StepTokensPerSecPerGpu(a[0].shape, MedianStepSeconds(a[0].file_median_step_s));
  const double t2560 =
      StepTokensPerSecPerGpu(a[1].shape, MedianStepSeconds(a[1].file_median_step_s));
  const double t5120 =
      StepTokensPerSecPerGpu(a[2].shape, MedianStepSeconds(a[2].file_median_step_s));
  const double g512 =
      StepTokensPerSecPerGpu(a[3].shape, MedianStepSeconds(a[3].file_median_step_s));
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

TEST(ScaleAnchorsTest, V50Fp8SeriesWithItsPublishedLayouts) {
  const std::vector<ScaleAnchor> a = MlperfV50Llama405bAnchors();
  ASSERT_EQ(a.size(), 12u);
  const int gpus[12] = {256, 512, 512, 1024, 1536, 2048, 2496, 512, 2048, 2432, 2560, 8192};
  // MINIBS of each config = micro-batches per replica (mbs 1): gbs / dp.
  const int minibs[12] = {112, 112, 112, 48, 48, 40, 32, 288, 72, 64, 56, 24};
  for (int i = 0; i < 12; ++i) {
    const ScaleAnchor& s = a[i];
    SCOPED_TRACE(s.id);
    const bool gb200 = i < 7;
    EXPECT_EQ(s.shape.gpus, gpus[i]);
    EXPECT_EQ(s.shape.seq_len, 8192);
    EXPECT_EQ(s.cluster_preset, gb200 ? "gb200-nvl72" : "h100-sxm");
    EXPECT_EQ(s.parallel.tp, gb200 ? 4 : 8);
    EXPECT_EQ(s.parallel.pp, 8);
    EXPECT_EQ(s.parallel.vp, 8);
    EXPECT_EQ(s.parallel.cp, 2);
    EXPECT_EQ(s.parallel.first_stage_layers, 1);
    EXPECT_EQ(s.parallel.last_stage_layers, 1);
    // TP_PP_DP_MAPPING=True on every GB200 config but tyche 256's.
    EXPECT_EQ(s.parallel.dp_outermost, gb200 && i != 0);
    EXPECT_EQ(s.knobs.precision, planner::Precision::kFp8);
    EXPECT_TRUE(s.knobs.overlap.tp_comm);
    EXPECT_EQ(s.knobs.recompute.mode, planner::RecomputeMode::kNone);
    EXPECT_EQ(s.knobs.cuda_graphs, gb200);  // FULL_CUDA_GRAPH on GB200, eager H100
    EXPECT_EQ(s.graph_full_iteration, gb200);
    EXPECT_EQ(MicroBatchesPerReplica(s.shape, s.parallel), minibs[i]);
  }
}

TEST(ScaleAnchorsTest, V50Fp8MeasuredFiguresByHand) {
  const std::vector<ScaleAnchor> a = MlperfV50Llama405bAnchors();
  const auto tps = [&](int i) { return MeasuredTokensPerSecPerGpu(a[i]); };
  // tyche 512: middle of 19.600581, 19.432199, 19.428184 = 19.432199; 896 x
  // 8,192 / 512 = 14,336 tokens per GPU -> 737.74 tokens/s/GPU.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[1]), 19.432199);
  EXPECT_NEAR(tps(1), 737.74, 0.01);
  // carina 512: 19.277966 -> 743.65; carina 2,496: 5.822275, 1,248 x 8,192
  // / 2,496 = 4,096 -> 703.51; ratio 0.9460.
  EXPECT_NEAR(tps(2), 743.65, 0.01);
  EXPECT_NEAR(tps(6), 703.51, 0.01);
  EXPECT_NEAR(tps(6) / tps(2), 0.9460, 1e-4);
  // eos 512 (H100): 55.143326, 18,432 / 55.143326 = 334.26; eos 8,192:
  // 5.177723, 1,536 -> 296.66; ratio 0.8875. GB200 / H100 at 512 (carina /
  // eos): 743.65 / 334.26 = 2.2248.
  EXPECT_NEAR(tps(7), 334.26, 0.01);
  EXPECT_NEAR(tps(11), 296.66, 0.01);
  EXPECT_NEAR(tps(11) / tps(7), 0.8875, 1e-4);
  EXPECT_NEAR(tps(2) / tps(7), 2.2248, 1e-4);
  // carina 512 (m 112) vs 2,496 (m 32): t = (19.277966 - 5.822275) / 80 =
  // 0.168196 s per micro-batch, K = 5.822275 - 32 t = 0.439999 s per step.
  const StepSplit c = SplitStep(112, 19.277966, 32, 5.822275);
  EXPECT_NEAR(c.per_micro_batch_s, 0.168196, 1e-6);
  EXPECT_NEAR(c.per_step_s, 0.439999, 1e-6);
  // eos 512 (m 288) vs 8,192 (m 24): t = 49.965603 / 264 = 0.189264, K =
  // 5.177723 - 24 t = 0.635395.
  const StepSplit e = SplitStep(288, 55.143326, 24, 5.177723);
  EXPECT_NEAR(e.per_micro_batch_s, 0.189264, 1e-6);
  EXPECT_NEAR(e.per_step_s, 0.635395, 1e-6);
}

TEST(ScaleAnchorsTest, DeepSeekV3SeriesWithItsPublishedLayouts) {
  const std::vector<ScaleAnchor> a = MlperfDeepSeekV3Anchors();
  ASSERT_EQ(a.size(), 9u);
  const int gpus[9] = {512, 2048, 4096, 8192, 256, 512, 2048, 4096, 8192};
  // MINIBS of each config = micro-batches per replica (mbs 1).
  const int minibs[9] = {240, 60, 32, 16, 240, 120, 32, 16, 8};
  for (int i = 0; i < 9; ++i) {
    const ScaleAnchor& s = a[i];
    SCOPED_TRACE(s.id);
    EXPECT_EQ(s.shape.gpus, gpus[i]);
    EXPECT_EQ(s.shape.seq_len, 4096);
    EXPECT_EQ(s.parallel.tp, i < 4 ? 2 : 1);
    EXPECT_EQ(s.cluster_preset, i < 4 ? "gb200-nvl72" : "gb300-nvl72");
    EXPECT_EQ(s.parallel.pp, 4);
    EXPECT_EQ(s.parallel.vp, 4);
    EXPECT_EQ(s.parallel.ep, 32);
    EXPECT_EQ(s.parallel.etp, 1);
    // "Et*4|(t*4|)*14tmL": 4 + 14 x 4 + 1 = 61 layers over 16 virtual stages.
    EXPECT_EQ(s.parallel.first_stage_layers, 4);
    EXPECT_EQ(s.parallel.last_stage_layers, 1);
    EXPECT_EQ(s.knobs.precision, planner::Precision::kMxfp8);
    EXPECT_EQ(s.knobs.routing, planner::Routing::kNatural);
    EXPECT_EQ(s.knobs.recompute.mode,
              i < 4 ? planner::RecomputeMode::kSelective : planner::RecomputeMode::kNone);
    EXPECT_TRUE(s.graph_full_iteration);
    EXPECT_FALSE(s.knobs.overlap.tp_comm);  // Megatron-Bridge tp_comm_overlap=False
    EXPECT_EQ(MicroBatchesPerReplica(s.shape, s.parallel), minibs[i]);
    EXPECT_FALSE(s.logged_step_s.empty());
  }
}

TEST(ScaleAnchorsTest, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(MedianOf({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(MedianOf({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(MedianOf({}), 0);
}

TEST(ScaleAnchorsTest, DeepSeekV3MeasuredFiguresByHand) {
  const std::vector<ScaleAnchor> a = MlperfDeepSeekV3Anchors();
  // GB200 512: steps 46-48 = 30.801614, 30.844150, 30.851129 -> 30.844150;
  // 15,360 x 4,096 / 512 = 122,880 tokens per GPU -> 3,983.90 tokens/s/GPU.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[0]), 30.844150);
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[0].shape, MeasuredStepSeconds(a[0])), 3983.90, 0.01);
  // GB200 8,192: the 4th of 3.454798, 3.479092, 3.492455, 3.494889, 3.504990,
  // 3.556683, 3.560832 -> 3.494889; 16,384 x 4,096 / 8,192 = 8,192 -> 2,343.99.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[3]), 3.494889);
  EXPECT_NEAR(StepTokensPerSecPerGpu(a[3].shape, MeasuredStepSeconds(a[3])), 2343.99, 0.01);
  // GB300 256: 5th of 9 = 39.011779 -> 245,760 / 39.011779 = 6,299.64.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[4]), 39.011779);
  // GB300 512: 19.950934 -> 122,880 / 19.950934 = 6,159.11.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[5]), 19.950934);
  // GB300 8,192 (CoreWeave): 1.752979 -> 8,192 / 1.752979 = 4,673.19.
  EXPECT_DOUBLE_EQ(MeasuredStepSeconds(a[8]), 1.752979);
  const auto tps = [&](int i) { return MeasuredTokensPerSecPerGpu(a[i]); };
  // 2,343.99 / 3,983.90 = 0.5884 (GB200 8,192 / 512); 4,673.19 / 6,299.64 =
  // 0.7418 (GB300 8,192 / 256); 6,159.11 / 3,983.90 = 1.5460 (GB300 / GB200
  // at 512); 4,673.19 / 2,343.99 = 1.9937 (at 8,192).
  EXPECT_NEAR(tps(3) / tps(0), 0.5884, 1e-4);
  EXPECT_NEAR(tps(8) / tps(4), 0.7418, 1e-4);
  EXPECT_NEAR(tps(5) / tps(0), 1.5460, 1e-4);
  EXPECT_NEAR(tps(8) / tps(3), 1.9937, 1e-4);
  // step = m t + K, GB200 512 vs 8,192: t = (30.844150 - 3.494889) / (240 -
  // 16) = 0.122095 s; K = 3.494889 - 16 t = 1.541369 s. GB300 256 vs 8,192:
  // t = (39.011779 - 1.752979) / 232 = 0.160598; K = 1.752979 - 8 t = 0.468197.
  const StepSplit g2 = SplitStep(240, 30.844150, 16, 3.494889);
  EXPECT_NEAR(g2.per_micro_batch_s, 0.122095, 1e-6);
  EXPECT_NEAR(g2.per_step_s, 1.541369, 1e-5);
  const StepSplit g3 = SplitStep(240, 39.011779, 8, 1.752979);
  EXPECT_NEAR(g3.per_micro_batch_s, 0.160598, 1e-6);
  EXPECT_NEAR(g3.per_step_s, 0.468197, 1e-5);
}

}  // namespace
}  // namespace moetune::tests
