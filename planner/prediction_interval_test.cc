#include "planner/prediction_interval.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

IntervalTable RoundTable() {
  IntervalTable t;
  t.dense = {-0.1, 0.1, 40};
  t.moe = {-0.2, 0.25, 40};
  t.unmeasured = {-0.5, 0.6, 80};
  return t;
}

TEST(PredictionIntervalTest, ByHand) {
  // MoE, errors -20% .. +25%: 1,000 predicted -> 1,000 / 1.25 = 800 ..
  // 1,000 / 0.8 = 1,250. Dense: 1,000 / 1.1 = 909.09 .. 1,000 / 0.9 = 1,111.1.
  // An unmeasured setting: 1,000 / 1.6 = 625 .. 1,000 / 0.5 = 2,000.
  const PredictionInterval moe = IntervalFor(1000, true, {}, RoundTable());
  EXPECT_DOUBLE_EQ(moe.coverage, 0.8);
  EXPECT_DOUBLE_EQ(moe.tokens_per_sec_per_gpu_low, 800);
  EXPECT_DOUBLE_EQ(moe.tokens_per_sec_per_gpu_high, 1250);
  EXPECT_THAT(moe.basis, HasSubstr("40 MoE"));
  const PredictionInterval dense = IntervalFor(1000, false, {}, RoundTable());
  EXPECT_NEAR(dense.tokens_per_sec_per_gpu_low, 909.0909, 1e-3);
  EXPECT_NEAR(dense.tokens_per_sec_per_gpu_high, 1111.111, 1e-3);
  const PredictionInterval wide = IntervalFor(1000, true, {"cuda_graphs off"}, RoundTable());
  EXPECT_DOUBLE_EQ(wide.tokens_per_sec_per_gpu_low, 625);
  EXPECT_DOUBLE_EQ(wide.tokens_per_sec_per_gpu_high, 2000);
  EXPECT_THAT(wide.unmeasured, ElementsAre("cuda_graphs off"));
}

TEST(PredictionIntervalTest, UnmeasuredSettings) {
  const ModelSpec m = *LoadModelPreset("deepseek-v3");
  const ClusterSpec gb200 = *LoadClusterPreset("gb200-nvl72");
  TrainingShape shape{1024, 4096, 8192};
  ParallelConfig p;
  p.pp = 8;
  p.ep = 64;
  Knobs k;  // defaults: CUDA graphs, fused dispatch, overlap on
  EXPECT_TRUE(UnmeasuredSettings(m, gb200, shape, p, k).empty());
  k.routing = Routing::kNatural;  // no published row measures it
  EXPECT_THAT(UnmeasuredSettings(m, gb200, shape, p, k), ElementsAre("natural routing"));
  k.cuda_graphs = false;
  k.moe_load_imbalance = 1.2;
  p.etp = 2;
  shape.gpus = 4096;
  EXPECT_THAT(UnmeasuredSettings(m, gb200, shape, p, k),
              ElementsAre("cuda_graphs off", "moe_load_imbalance > 1", "etp > 1",
                          "more than 1,024 GPUs"));
  {
    Knobs host_adam;
    host_adam.optimizer_offload_fraction = 0.25;
    EXPECT_THAT(UnmeasuredSettings(m, gb200, TrainingShape{1024, 4096, 8192}, ParallelConfig{},
                                   host_adam),
                ElementsAre("optimizer-state CPU offload"));
  }
  // Overlaps off that the published rows ran: the EP A2A overlap either way
  // (most MoE recipes leave it off), no P2P overlap on a non-interleaved
  // pipeline (Megatron turns it off itself), no TP overlap at TP 1.
  {
    ParallelConfig q;
    q.tp = 1, q.pp = 4, q.vp = 1, q.ep = 8;
    Knobs off;
    off.overlap.ep_comm = false;
    off.overlap.pp_comm = false;
    off.overlap.tp_comm = false;
    EXPECT_TRUE(UnmeasuredSettings(m, gb200, {256, 4096, 1024}, q, off).empty());
    q.vp = 2;  // an interleaved pipeline could overlap its P2P sends
    EXPECT_THAT(UnmeasuredSettings(m, gb200, {256, 4096, 1024}, q, off),
                ElementsAre("an overlap off"));
  }
  // The EP A2A overlap with the EP group inside one 8-GPU node: no
  // runs.json row ran it. Qwen3-235B-A22B on 64 B200 at PP8 VP4 EP8 (Bridge
  // PR 1760's recipe) is outside; without interleaving Megatron cannot
  // schedule it, across two nodes (EP 16) and on NVL72 rows measured it.
  {
    const ModelSpec qwen = *LoadModelPreset("qwen3-235b-a22b");
    const ClusterSpec b200 = *LoadClusterPreset("b200");
    const TrainingShape job{64, 4096, 1024};
    ParallelConfig q;
    q.pp = 8, q.vp = 4, q.ep = 8, q.etp = 1;
    Knobs on;  // every overlap on, graphs, fused dispatch
    EXPECT_THAT(UnmeasuredSettings(qwen, b200, job, q, on),
                ElementsAre("EP A2A overlap inside one 8-GPU node"));
    Knobs off = on;
    off.overlap.ep_comm = false;
    EXPECT_TRUE(UnmeasuredSettings(qwen, b200, job, q, off).empty());
    EXPECT_TRUE(UnmeasuredSettings(qwen, gb200, job, q, on).empty());
    ParallelConfig flat = q;
    flat.vp = 1;
    EXPECT_TRUE(UnmeasuredSettings(qwen, b200, job, flat, on).empty());
    ParallelConfig across = q;
    across.ep = 16;
    EXPECT_TRUE(UnmeasuredSettings(qwen, b200, {256, 4096, 8192}, across, on).empty());
  }
  // Micro-batches of more tokens than any row's: DeepSeek-V3 at MBS 8 x
  // 4,096 is at the MoE bound (Qwen3-30B-A3B's MBS 8), MBS 16 beyond it; a
  // dense model's bound is Llama3-70B's MBS 2 x 8,192.
  {
    ParallelConfig q;
    q.pp = 8, q.ep = 64, q.mbs = 8;
    const TrainingShape job{1024, 4096, 8192};
    EXPECT_TRUE(UnmeasuredSettings(m, gb200, job, q, Knobs{}).empty());
    q.mbs = 16;
    EXPECT_THAT(UnmeasuredSettings(m, gb200, job, q, Knobs{}),
                ElementsAre("micro-batch of 65536 tokens (rows: at most 32768)"));
    const ModelSpec dense = *LoadModelPreset("llama3-70b");
    ParallelConfig d;
    d.mbs = 2;
    EXPECT_TRUE(UnmeasuredSettings(dense, gb200, {64, 8192, 256}, d, Knobs{}).empty());
    d.mbs = 4;
    EXPECT_THAT(UnmeasuredSettings(dense, gb200, {64, 8192, 256}, d, Knobs{}),
                ElementsAre(HasSubstr("micro-batch of 32768 tokens")));
  }
  // H200: no published megatron-core-2026 rows.
  EXPECT_THAT(UnmeasuredSettings(m, *LoadClusterPreset("h200"), {256, 4096, 1024},
                                 ParallelConfig{}, Knobs{}),
              ElementsAre(HasSubstr("h200")));
}

TEST(PredictionIntervalTest, ShippedTableIsOrdered) {
  const IntervalTable& t = ShippedIntervalTable();
  for (const ErrorPercentiles& q : {t.dense, t.moe, t.unmeasured}) {
    EXPECT_LT(q.q10, 0);
    EXPECT_GT(q.q90, 0);
    EXPECT_GT(q.rows, 0);
  }
  // The other-stack rows err more on the optimistic side than the measured
  // classes do.
  EXPECT_GT(t.unmeasured.q90, t.moe.q90);
  EXPECT_GT(t.unmeasured.q90, t.dense.q90);
}

TEST(PredictionIntervalTest, UnmeasuredIsNeverNarrowerThanTheClass) {
  // moe -10%..+20% (1,000 tokens/s -> 833..1,111), unmeasured -5%..+40%:
  // the envelope -10%..+40% -> 1,000 / 1.4 = 714.3 .. 1,000 / 0.9 = 1,111.1.
  IntervalTable t;
  t.dense = {-0.1, 0.1, 10};
  t.moe = {-0.1, 0.2, 10};
  t.unmeasured = {-0.05, 0.4, 10};
  const PredictionInterval measured = IntervalFor(1000, true, {}, t);
  EXPECT_NEAR(measured.tokens_per_sec_per_gpu_low, 1000 / 1.2, 1e-9);
  EXPECT_NEAR(measured.tokens_per_sec_per_gpu_high, 1000 / 0.9, 1e-9);
  const PredictionInterval wide = IntervalFor(1000, true, {"cuda_graphs off"}, t);
  EXPECT_NEAR(wide.tokens_per_sec_per_gpu_low, 1000 / 1.4, 1e-9);
  EXPECT_NEAR(wide.tokens_per_sec_per_gpu_high, 1000 / 0.9, 1e-9);
}

}  // namespace
}  // namespace moetune::planner
