// The combined-1F1B EP overlap terms (planner/internal/step_model_layers.h):
// which layer passes have a partner, and what one paired window hides.
#include <memory>

#include "gtest/gtest.h"
#include "planner/internal/step_model_layers.h"
#include "planner/step_model.h"

namespace moetune::planner {
namespace {

using step_model_internal::CombinedOneFOneBPairedFraction;
using step_model_internal::EpOverlapAchievedFraction;
using step_model_internal::OverlapWindow;
using step_model_internal::PairedWindow;

// No pipelining: the first forward and the last backward run alone.
TEST(CombinedOneFOneBPairedFractionTest, NoPipelining) {
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(1, 1, 64), 63.0 / 64.0);
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(1, 1, 2), 0.5);
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(1, 1, 1), 0.0);
}

// Interleaved: N = m x vp chunk passes; the first stage's warmup
// 2 (pp - 1) + (vp - 1) pp + 1 forwards (and as many cooldown backwards)
// have no partner. pp 8, vp 4, m 128: N 512, warmup 14 + 24 + 1 = 39.
TEST(CombinedOneFOneBPairedFractionTest, Interleaved) {
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(8, 4, 128), (512.0 - 39.0) / 512.0);
  // m 8: N 32 <= 39, every pass is warmup or cooldown.
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(8, 4, 8), 0.0);
  // vp 1 (where a stack allows it): pp - 1 + 1 warmup. pp 4, m 16: 12 / 16.
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(4, 1, 16), 0.75);
  EXPECT_DOUBLE_EQ(CombinedOneFOneBPairedFraction(8, 4, 0), 0.0);
}

// Communication longer than the slowed compute: 2 ms beside 1 ms at
// slowdown 1.25: hidden 1.25, exposed 0.75, stretch 1.25 x 0.2 = 0.25;
// window 1 + 0.75 + 0.25 = 2 = the communication.
TEST(OverlapWindowTest, CommunicationBound) {
  const PairedWindow w = OverlapWindow(2.0, 1.0, 1.25);
  EXPECT_DOUBLE_EQ(w.hidden_s, 1.25);
  EXPECT_DOUBLE_EQ(w.exposed_s, 0.75);
  EXPECT_DOUBLE_EQ(w.slowdown_s, 0.25);
  EXPECT_DOUBLE_EQ(1.0 + w.exposed_s + w.slowdown_s, 2.0);
}

// Compute longer: 1 ms beside 2 ms at 1.25: all hidden, the compute
// stretched by 1 x (1 - 1 / 1.25) = 0.2; window 2.2 = 2 + 1 x 0.2.
TEST(OverlapWindowTest, ComputeBound) {
  const PairedWindow w = OverlapWindow(1.0, 2.0, 1.25);
  EXPECT_DOUBLE_EQ(w.hidden_s, 1.0);
  EXPECT_DOUBLE_EQ(w.exposed_s, 0.0);
  EXPECT_NEAR(w.slowdown_s, 0.2, 1e-15);
  // No SM contention (slowdown 1): the plain max(comm, compute).
  const PairedWindow free = OverlapWindow(3.0, 2.0, 1.0);
  EXPECT_DOUBLE_EQ(free.hidden_s, 2.0);
  EXPECT_DOUBLE_EQ(free.exposed_s, 1.0);
  EXPECT_DOUBLE_EQ(free.slowdown_s, 0.0);
}

// (1 - phi) x ep_overlap_fraction + phi x ep_overlap_nvlink_fraction.
TEST(EpOverlapAchievedFractionTest, ByHand) {
  StackConstants s;
  s.ep_overlap_fraction = 1.0;
  s.ep_overlap_nvlink_fraction = 0.0;
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, 0.0), 1.0);  // NIC-bound
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, 1.0), 0.0);  // inside a domain
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, 1.0 / 3.0), 2.0 / 3.0);
  s.ep_overlap_fraction = 0.5;
  s.ep_overlap_nvlink_fraction = 0.2;
  // 0.75 x 0.5 + 0.25 x 0.2 = 0.425; a share outside 0..1 is clamped.
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, 0.25), 0.425);
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, 1.5), 0.2);
  EXPECT_DOUBLE_EQ(EpOverlapAchievedFraction(s, -1.0), 0.5);
}

double EpHiddenSeconds(const StepModel& sm, const ParallelConfig& p, const Knobs& k) {
  absl::StatusOr<Prediction> pr = sm.Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  double s = 0;
  if (!pr.ok()) return s;
  for (const Term& t : pr->breakdown) {
    if (t.kind == TermKind::kCommEpHidden) s += t.seconds;
  }
  return s;
}

// Whole model: Qwen3-30B-A3B on 16 H100, EP 16, no pipelining. Per micro-
// batch of the step, hidden EP time scales with the paired share: 2
// micro-batches (GBS 32 over DP 16) pair 1 of 2 passes, 64 (GBS 1024) pair
// 63 of 64; per micro-batch hidden at 2 is 0.5 / (63 / 64) of that at 64.
// Without the knob nothing is hidden.
TEST(EpOverlapModelTest, HiddenScalesWithPairedPasses) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(c.ok()) << c.status();
  auto make = [&](int gbs) {
    absl::StatusOr<StepModel> sm = StepModel::Create(*m, *c, {16, 4096, gbs},
                                                     std::make_shared<DatasheetCostModel>(*c));
    EXPECT_TRUE(sm.ok()) << sm.status();
    return *std::move(sm);
  };
  ParallelConfig p;
  p.tp = 1, p.pp = 1, p.vp = 1, p.ep = 16, p.cp = 1, p.etp = 1, p.mbs = 1;
  Knobs k;
  k.precision = Precision::kBf16;
  k.moe_load_imbalance = 1.0;
  k.overlap.ep_comm = true;
  const double few = EpHiddenSeconds(make(32), p, k) / 2.0;
  const double many = EpHiddenSeconds(make(1024), p, k) / 64.0;
  ASSERT_GT(many, 0);
  EXPECT_NEAR(few / many, 0.5 / (63.0 / 64.0), 1e-9);
  k.overlap.ep_comm = false;
  EXPECT_EQ(EpHiddenSeconds(make(1024), p, k), 0.0);
}

// Whole model, the link split: Qwen3-30B-A3B, EP 8 inside one GB200 NVL72
// domain (the exchange is all NVLink copying, share 1) hides
// ep_overlap_nvlink_fraction of its windows: nothing at the shipped 0, and
// at 1 what the windows schedule; EP 16 over two H100 nodes (NIC-bound,
// share 0) hides the same whatever that fraction.
TEST(EpOverlapModelTest, NvlinkBoundExchangeHidesByItsOwnFraction) {
  auto hidden = [](const char* cluster, int gpus, int ep, Precision precision,
                   double nvlink_fraction) {
    absl::StatusOr<ModelSpec> m = LoadModelPreset("qwen3-30b-a3b");
    EXPECT_TRUE(m.ok()) << m.status();
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset(cluster);
    EXPECT_TRUE(c.ok()) << c.status();
    StackConstants s;
    s.ep_overlap_nvlink_fraction = nvlink_fraction;
    absl::StatusOr<StepModel> sm = StepModel::Create(
        *m, *c, {gpus, 4096, 64 * gpus}, std::make_shared<DatasheetCostModel>(*c), s);
    EXPECT_TRUE(sm.ok()) << sm.status();
    ParallelConfig p;
    p.tp = 1, p.pp = 1, p.vp = 1, p.ep = ep, p.cp = 1, p.etp = 1, p.mbs = 1;
    Knobs k;
    k.precision = precision;
    k.moe_load_imbalance = 1.0;
    k.overlap.ep_comm = true;
    return EpHiddenSeconds(*sm, p, k);
  };
  EXPECT_EQ(StackConstants().ep_overlap_nvlink_fraction, 0.0);
  EXPECT_EQ(hidden("gb200-nvl72", 8, 8, Precision::kMxfp8, 0.0), 0.0);
  EXPECT_GT(hidden("gb200-nvl72", 8, 8, Precision::kMxfp8, 1.0), 0.0);
  const double h100 = hidden("h100-sxm", 16, 16, Precision::kBf16, 0.0);
  EXPECT_GT(h100, 0.0);
  EXPECT_DOUBLE_EQ(hidden("h100-sxm", 16, 16, Precision::kBf16, 1.0), h100);
}

// Memory: the overlap holds no more activations than the schedule without
// it. Interleaved, its extra warmup forward (schedules.py "+ 1") is what the
// plain schedule's first steady-state forward holds before its backward
// frees a chunk; in every combined step the forward of one micro-batch fills
// its layers while the backward of another frees its own
// (combined_1f1b.py), so the peak stays InflightChunks' count (Qwen3-235B-A22B,
// 256 H100, TP2 PP8 VP4 EP32, GBS 2048: 2 x 7 + 3 x 8 + 1 = 39 chunks).
// Without pipelining (Qwen3-30B-A3B, EP 16) likewise unchanged.
TEST(EpOverlapModelTest, OverlapHoldsNoExtraActivations) {
  auto activations = [](const char* model, int gpus, int gbs, const ParallelConfig& p,
                        bool overlap) {
    absl::StatusOr<ModelSpec> m = LoadModelPreset(model);
    EXPECT_TRUE(m.ok()) << m.status();
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset("h100-sxm");
    EXPECT_TRUE(c.ok()) << c.status();
    absl::StatusOr<StepModel> sm = StepModel::Create(*m, *c, {gpus, 4096, gbs},
                                                     std::make_shared<DatasheetCostModel>(*c));
    EXPECT_TRUE(sm.ok()) << sm.status();
    Knobs k;
    k.precision = Precision::kBf16;
    k.moe_load_imbalance = 1.0;
    k.recompute.mode = RecomputeMode::kNone;
    k.overlap.ep_comm = overlap;
    absl::StatusOr<Prediction> pr = sm->Predict(p, k);
    EXPECT_TRUE(pr.ok()) << pr.status();
    return pr.ok() ? pr->memory.activations_bytes : 0.0;
  };
  ParallelConfig deep;
  deep.tp = 2, deep.pp = 8, deep.vp = 4, deep.ep = 32, deep.cp = 1, deep.etp = 1, deep.mbs = 1;
  const double off = activations("qwen3-235b-a22b", 256, 2048, deep, false);
  const double on = activations("qwen3-235b-a22b", 256, 2048, deep, true);
  ASSERT_GT(off, 0);
  EXPECT_NEAR(on / off, 1.0, 1e-12);
  ParallelConfig flat;
  flat.tp = 1, flat.pp = 1, flat.vp = 1, flat.ep = 16, flat.cp = 1, flat.etp = 1, flat.mbs = 1;
  EXPECT_EQ(activations("qwen3-30b-a3b", 16, 1024, flat, true),
            activations("qwen3-30b-a3b", 16, 1024, flat, false));
}

}  // namespace
}  // namespace moetune::planner
