// The TP communication overlap (planner/internal/step_model_layers.h
// TpPairExposedSeconds, TpOverlapChunkingSeconds, AddTpTerms): each
// collective hides behind its own userbuffers partner GEMM only, the
// column-parallel inputs are gathered at the GEMM input's bytes, once in
// forward and again for the wgrad, and the overlapped GEMMs run split.
#include <algorithm>
#include <memory>

#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/internal/step_model_layers.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"

namespace moetune::planner {
namespace {

using step_model_internal::TpBlockCollectives;
using step_model_internal::TpOverlapChunkingSeconds;
using step_model_internal::TpPairExposedSeconds;

// By hand, f = 0.9, column GEMM 2.0 s, row GEMM 2.5 s (0.9 x: 1.8, 2.25):
//   forward all-gather 1.0 behind the column GEMM:      0
//   forward reduce-scatter 3.0 behind the row GEMM:     3.0 - 2.25 = 0.75
//   backward all-gather 3.0 behind the row dgrad:        0.75
//   backward re-gather 1.5 behind the column dgrad:      0
//   backward reduce-scatter 2.0 behind the column wgrad: 2.0 - 1.8 = 0.2
// = 1.7. Under LoRA (no wgrad) the last shows whole: 0.75 + 0.75 + 2.0 = 3.5.
TEST(TpPairExposedSecondsTest, ByHand) {
  TpBlockCollectives t;
  t.fwd_ag_s = 1.0;
  t.fwd_rs_s = 3.0;
  t.bwd_ag_s = 3.0;
  t.bwd_regather_s = 1.5;
  t.bwd_rs_s = 2.0;
  EXPECT_DOUBLE_EQ(t.TotalSeconds(), 10.5);
  EXPECT_NEAR(TpPairExposedSeconds(t, 2.0, 2.5, 1.0, 0.9), 1.7, 1e-12);
  EXPECT_NEAR(TpPairExposedSeconds(t, 2.0, 2.5, 0.0, 0.9), 3.5, 1e-12);
  // GEMMs longer than every collective hide them all; no GEMM hides none.
  EXPECT_DOUBLE_EQ(TpPairExposedSeconds(t, 10.0, 10.0, 1.0, 0.9), 0.0);
  EXPECT_DOUBLE_EQ(TpPairExposedSeconds(t, 0.0, 0.0, 1.0, 0.9), t.TotalSeconds());
}

// The overlap's split GEMMs, by hand with a GEMM of 1 us per 1,000 rows
// plus 3 us per kernel, 4,096 tokens, tp 8: each split adds only the
// kernels' fixed time -- column fprop and row dgrad 8 x 3 - 3 = 21 us each,
// the row fprop's 4 pipeline chunks 4 x 3 - 3 = 9 us: 51 us. With a tile
// factor rows / (rows + 128) on the time (a 512-row chunk runs at 0.8 of
// the rate, the whole 4,096 at 0.97), the rows' own time grows too.
TEST(TpOverlapChunkingSecondsTest, ByHand) {
  auto fixed_only = [](double rows, double, double, int) { return rows * 1e-9 + 3e-6; };
  EXPECT_NEAR(TpOverlapChunkingSeconds(fixed_only, 4096, 8, 1280, 1024, 8192), 51e-6, 1e-12);
  EXPECT_EQ(TpOverlapChunkingSeconds(fixed_only, 4096, 1, 1280, 1024, 8192), 0.0);
  auto tiled = [](double rows, double, double, int) { return rows * 1e-9 / (rows / (rows + 128)); };
  // (rows + 128) x 1e-9 per GEMM: tp chunks add (tp - 1) x 128 ns, the
  // pipeline 3 x 128 ns: 7 + 7 + 3 = 17 x 128 ns.
  EXPECT_NEAR(TpOverlapChunkingSeconds(tiled, 4096, 8, 1280, 1024, 8192), 17 * 128e-9, 1e-15);
}

// Wave quantization by hand (132 SMs, tiles of 128 x 256 either way):
// [512 x 1,280] alone is ceil(512/128) ceil(1280/256) = 4 x 5 = 20 tiles in
// one wave of 132: 20/132; three at once 60/132; [4,096 x 1,280] 160 tiles
// in two waves: 160/264; [4,096 x 8,192] 32 x 32 = 1,024 tiles in 8 waves:
// 1024/1056. A padded tile counts only its outputs: [256 x 100] is one
// 256 x 128 tile (or two half-empty 128 x 256 ones) in one wave:
// 256 x 100 / (132 x 128 x 256).
TEST(GemmWaveEfficiencyTest, ByHand) {
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(512, 1280, 132, 1), 20.0 / 132);
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(512, 1280, 132, 3), 60.0 / 132);
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(4096, 1280, 132, 1), 160.0 / 264);
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(4096, 8192, 132, 1), 1024.0 / 1056);
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(256, 100, 132, 1),
                   256.0 * 100 / (132 * 128 * 256));
  EXPECT_DOUBLE_EQ(step_model_internal::GemmWaveEfficiency(4096, 8192, 0, 1), 1.0);
}

// At TP 8 on H100 the chunked overlap costs more than the whole GEMMs'
// difference alone says once the chunks' idle SMs count: Llama3-70B's
// qkv and MLP chunks at 4,096 tokens, priced with a flat-rate GEMM
// (1 ns per row, no fixed time) so that only the waves differ.
TEST(TpOverlapChunkingSecondsTest, SmallChunksLeaveSmsIdle) {
  auto flat = [](double rows, double, double, int) { return rows * 1e-9; };
  // Flat rate: splitting costs nothing.
  EXPECT_NEAR(TpOverlapChunkingSeconds(flat, 4096, 8, 1280, 1024, 8192), 0.0, 1e-15);
  auto waves = [](double rows, double n, double, int pieces) {
    const int concurrent = std::min(step_model_internal::kUbComputeStreams, pieces);
    return rows * 1e-9 / step_model_internal::GemmWaveEfficiency(rows, n, 132, concurrent);
  };
  EXPECT_GT(TpOverlapChunkingSeconds(waves, 4096, 8, 1280, 1024, 8192), 1e-6);
}

struct TpSeconds {
  double exposed = 0;
  double hidden = 0;
};

// The TP terms of one step; `fraction` is StackConstants::
// tp_overlap_fraction, the share of each GEMM that can hide its collective.
TpSeconds TpOf(const char* model, const char* cluster, int gpus, const ParallelConfig& p,
               Precision precision, bool overlap, double fraction) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset(model);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset(cluster);
  EXPECT_TRUE(c.ok()) << c.status();
  StackConstants stack;
  stack.tp_overlap_fraction = fraction;
  absl::StatusOr<StepModel> sm = StepModel::Create(
      *m, *c, {gpus, 4096, 8 * gpus}, std::make_shared<DatasheetCostModel>(*c), stack);
  EXPECT_TRUE(sm.ok()) << sm.status();
  TpSeconds s;
  if (!sm.ok()) return s;
  Knobs k;
  k.precision = precision;
  k.overlap.tp_comm = overlap;
  absl::StatusOr<Prediction> pr = sm->Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  if (!pr.ok()) return s;
  for (const Term& t : pr->breakdown) {
    if (t.kind == TermKind::kCommTpExposed) s.exposed += t.seconds;
    if (t.kind == TermKind::kCommTpHidden) s.hidden += t.seconds;
  }
  return s;
}

ParallelConfig Layout(int tp, int pp) {
  ParallelConfig p;
  p.tp = tp, p.pp = pp, p.vp = 1, p.ep = 1, p.cp = 1, p.etp = 1, p.mbs = 1;
  return p;
}

// The output head's logits gather is exposed whatever the overlap; with a
// fraction so large that every GEMM hides its collective, it is all that
// shows.
constexpr double kEveryGemmHides = 1e6;

// Llama3-70B, seq 4,096, FP8, pp 1: on H100 at TP 8 the attention output
// projection (8,192 / 8 = 1,024 wide) is shorter than its reduce-scatter,
// so part of the layers' TP time shows with the overlap on; on GB200 at
// TP 2 (a twice as fast NVLink, GEMMs four times as wide) every GEMM
// outlasts its collective and none does. With a fraction of 0 nothing
// hides: the same as the overlap off.
TEST(TpOverlapModelTest, NarrowGemmsLeaveTheirCollectivesExposed) {
  auto layers_exposed = [](const char* cluster, int tp, double fraction) {
    const TpSeconds at = TpOf("llama3-70b", cluster, 32, Layout(tp, 1), Precision::kFp8, true,
                              fraction);
    const TpSeconds head = TpOf("llama3-70b", cluster, 32, Layout(tp, 1), Precision::kFp8, true,
                                kEveryGemmHides);
    return at.exposed - head.exposed;
  };
  const double h100 = layers_exposed("h100-sxm", 8, 0.9);
  EXPECT_GT(h100, 0.0);
  EXPECT_NEAR(layers_exposed("gb200-nvl72", 2, 0.9), 0.0, 1e-12);
  const TpSeconds none = TpOf("llama3-70b", "h100-sxm", 32, Layout(8, 1), Precision::kFp8, true, 0.0);
  const TpSeconds off = TpOf("llama3-70b", "h100-sxm", 32, Layout(8, 1), Precision::kFp8, false, 0.9);
  EXPECT_EQ(none.hidden, 0.0);
  EXPECT_EQ(off.hidden, 0.0);
  EXPECT_NEAR(none.exposed, off.exposed, 1e-9);
  const TpSeconds on = TpOf("llama3-70b", "h100-sxm", 32, Layout(8, 1), Precision::kFp8, true, 0.9);
  EXPECT_NEAR(on.exposed + on.hidden, off.exposed, 1e-9);
  EXPECT_LT(h100, on.hidden);
}

// The gathers move the GEMM input: FP8 halves the bytes of the two input
// all-gathers of each block (forward, and the wgrad's re-gather in
// backward) against BF16, while the reduce-scatters and the gradient's
// all-gather stay BF16. Per block, with G and R the BF16 all-gather and
// reduce-scatter of [4,096 tokens x 8,192] over TP 8 and G8 the all-gather
// of half the bytes (the same latency steps): BF16 3 G + 2 R, FP8
// 2 G8 + G + 2 R (GQA: the attention input is hidden wide too).
TEST(TpOverlapModelTest, InputGathersMoveTheQuantizedInput) {
  auto layers = [](Precision precision) {
    const TpSeconds off = TpOf("llama3-70b", "h100-sxm", 32, Layout(8, 1), precision, false, 0.9);
    const TpSeconds head =
        TpOf("llama3-70b", "h100-sxm", 32, Layout(8, 1), precision, true, kEveryGemmHides);
    return off.exposed - head.exposed;
  };
  absl::StatusOr<ClusterSpec> h100 = LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(h100.ok()) << h100.status();
  const DatasheetCostModel cm(*h100);
  const double bytes = 4096.0 * 8192.0 * 2.0;
  const double g = cm.Collective(CollectiveKind::kAllGather, bytes, 8, LinkSpan::kNvlinkDomain).seconds;
  const double g8 =
      cm.Collective(CollectiveKind::kAllGather, bytes / 2, 8, LinkSpan::kNvlinkDomain).seconds;
  const double r =
      cm.Collective(CollectiveKind::kReduceScatter, bytes, 8, LinkSpan::kNvlinkDomain).seconds;
  ASSERT_LT(g8, g);
  const double bf16 = layers(Precision::kBf16);
  ASSERT_GT(bf16, 0.0);
  EXPECT_NEAR(layers(Precision::kFp8) / bf16, (2 * g8 + g + 2 * r) / (3 * g + 2 * r), 1e-9);
}

}  // namespace
}  // namespace moetune::planner
