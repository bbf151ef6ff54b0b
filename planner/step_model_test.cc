#include "planner/step_model.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/internal/step_model_layers.h"
#include "planner/prediction_interval.h"
#include "planner/units.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

// 4 layers, h 1024, 8 heads of 128, SwiGLU ffn 4096, vocab 32000 (a
// multiple of 128, so unpadded).
// Per layer: attention 4 x 1024^2 = 4,194,304; MLP 3 x 1024 x 4096 =
// 12,582,912; sum 16,777,216. x 4 = 67,108,864. Embedding + output layer
// 2 x 32000 x 1024 = 65,536,000. Total 132,644,864 parameters.
ModelSpec TinyDense() {
  ModelSpec m;
  m.name = "tiny-dense";
  m.model_type = "native";
  m.num_layers = 4;
  m.hidden_size = 1024;
  m.vocab_size = 32000;
  m.num_attention_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.v_head_dim = 128;
  m.ffn_hidden_size = 4096;
  return m;
}

ModelSpec Preset(const char* name) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset(name);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

ClusterSpec Cluster(const char* name) {
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset(name);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

StepModel Make(const ModelSpec& m, const char* cluster, TrainingShape shape) {
  const ClusterSpec c = Cluster(cluster);
  absl::StatusOr<StepModel> sm =
      StepModel::Create(m, c, shape, std::make_shared<DatasheetCostModel>(c));
  EXPECT_TRUE(sm.ok()) << sm.status();
  return *std::move(sm);
}

ParallelConfig Layout(int tp, int pp, int vp, int ep, int cp, int mbs) {
  ParallelConfig p;
  p.tp = tp;
  p.pp = pp;
  p.vp = vp;
  p.ep = ep;
  p.cp = cp;
  p.mbs = mbs;
  return p;
}

double TokensPerSec(const StepModel& sm, const ParallelConfig& p, const Knobs& k) {
  absl::StatusOr<Prediction> pr = sm.Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  return pr.ok() ? pr->tokens_per_sec_per_gpu : 0.0;
}

TEST(StepModelTest, TablesByHand) {
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  const StepModel::LayerKindTables& dense = sm.layer_kind(0);
  EXPECT_EQ(dense.count, 4);
  EXPECT_EQ(dense.params, 16777216.0);
  EXPECT_EQ(dense.expert_params, 0.0);
  // Causal context at 2048: 1024 keys per query on average.
  EXPECT_EQ(dense.causal_context, 1024.0);
  // Q, K, V output width: 3 x 1024.
  EXPECT_EQ(dense.qkv_out_dim, 3072.0);
  EXPECT_EQ(sm.layer_kind(2).count, 0);
}

TEST(StepModelTest, MemoryByHand) {
  // One GPU, BF16, no recompute: weights 2 B, the BF16 gradient buffer 2 B,
  // Adam states 12 B per parameter (dp = 1, nothing sharded):
  // 132,644,864 x 2 = 265,289,728; x 12 = 1,591,738,368. The optimizer's
  // fp32 copy of its shard's gradients (x 4 = 530,579,456) exists only in
  // the step, after backward freed the activations (below), which are
  // larger: it adds nothing to the peak.
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  absl::StatusOr<Prediction> p = sm.Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->memory.weights_bytes, 265289728.0);
  EXPECT_EQ(p->memory.grads_bytes, 265289728.0);
  EXPECT_EQ(p->memory.optimizer_bytes, 1591738368.0);
  // Activations per token and layer (elements, BF16): attention saves its
  // norm input and the MLP's norm input (2h), q, k, v (3 x 1024) and the
  // core output (1024) = 6,144; the two norm outputs 2h = 2,048; the MLP
  // its fc1 output (2 x 4096) and activation output (4096) = 12,288.
  // (6,144 + 2,048 + 12,288) x 2 B = 40,960 B; x 2,048 tokens x 4 layers
  // = 335,544,320 B, one micro-batch in flight (pp 1), plus the fp32 logits
  // of the last stage: 2,048 x 32,000 x 4 B = 262,144,000 B.
  EXPECT_EQ(p->memory.activations_bytes, 335544320.0 + 262144000.0);
  // Full recompute keeps each layer's input (2,048 x 1,024 x 2 B = 4,194,304
  // B) plus one layer's full activations (83,886,080 B) and the logits.
  Knobs full;
  full.recompute.mode = RecomputeMode::kFull;
  absl::StatusOr<Prediction> pf1 = sm.Predict(Layout(1, 1, 1, 1, 1, 1), full);
  ASSERT_TRUE(pf1.ok());
  EXPECT_EQ(pf1->memory.activations_bytes, 4 * 4194304.0 + 83886080.0 + 262144000.0);
  // dp = 8 shards the optimizer states only (distributed optimizer).
  const StepModel sm8 = Make(TinyDense(), "h100-sxm", {8, 2048, 64});
  absl::StatusOr<Prediction> p8 = sm8.Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(p8.ok());
  EXPECT_EQ(p8->memory.optimizer_bytes, 1591738368.0 / 8);
  EXPECT_EQ(p8->memory.weights_bytes, 265289728.0);
  // FSDP shards weights and gradients too (plus ~2 gathered layers).
  ParallelConfig fsdp = Layout(1, 1, 1, 1, 1, 1);
  fsdp.shard_params = true;
  absl::StatusOr<Prediction> pf = sm8.Predict(fsdp, Knobs{});
  ASSERT_TRUE(pf.ok());
  EXPECT_LT(pf->memory.weights_bytes, p8->memory.weights_bytes);
}

TEST(StepModelTest, LowPrecisionAndInterleavedMemoryByHand) {
  // FP8 (1 B GEMM inputs): per token and layer, the norm inputs and q, k, v
  // stay BF16 ((2,048 + 3,072) x 2 B = 10,240 B); the core output is kept
  // twice, BF16 by the attention and FP8 by linear_proj (1,024 x 3 B =
  // 3,072 B); the norm outputs are FP8 (2,048 B); the MLP keeps fc1's BF16
  // output (8,192 x 2 B = 16,384 B) and fc2's FP8 input (4,096 B): 35,840 B,
  // x 2,048 tokens x 4 layers = 293,601,280 B, plus the logits.
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  Knobs fp8;
  fp8.precision = Precision::kFp8;
  absl::StatusOr<Prediction> p = sm.Predict(Layout(1, 1, 1, 1, 1, 1), fp8);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->memory.activations_bytes, 293601280.0 + 262144000.0);
  // Recomputing core attention drops the attention's BF16 copy of its
  // output (linear_proj's FP8 copy stays): 1,024 x 2 B less per token,
  // 35,840 - 2,048 = 33,792 B x 2,048 x 4 = 276,824,064 B.
  Knobs fp8_rc = fp8;
  fp8_rc.recompute.mode = RecomputeMode::kSelective;
  fp8_rc.recompute.modules = kRecomputeCoreAttn;
  absl::StatusOr<Prediction> prc = sm.Predict(Layout(1, 1, 1, 1, 1, 1), fp8_rc);
  ASSERT_TRUE(prc.ok()) << prc.status();
  EXPECT_EQ(prc->memory.activations_bytes, 276824064.0 + 262144000.0);
  // Interleaved 1F1B, 8 layers, pp 4 vp 2 (one layer per chunk), 8
  // micro-batches: rank 0 warms up 2 (pp - 1) + (vp - 1) pp = 10 chunks and
  // runs one more forward before its first backward: 11 chunks x 40,960 B
  // x 2,048 tokens = 922,746,880 B (BF16). The last rank holds 5 chunks
  // plus the logits (681,574,400 B): rank 0 is the peak.
  ModelSpec eight = TinyDense();
  eight.num_layers = 8;
  const StepModel smi = Make(eight, "h100-sxm", {4, 2048, 8});
  absl::StatusOr<Prediction> pi = smi.Predict(Layout(1, 4, 2, 1, 1, 1), Knobs{});
  ASSERT_TRUE(pi.ok()) << pi.status();
  EXPECT_EQ(pi->memory.activations_bytes, 922746880.0);
  // The last rank's own figure, reported beside the peak (what its memory
  // logs show). With one layer in every virtual stage (first and last
  // pinned to 1) it holds two layers, 5 in-flight chunks of one layer:
  // 5 x 40,960 x 2,048 = 419,430,400 B, and the fp32 logits 2,048 x 32,000
  // x 4 = 262,144,000 B.
  ParallelConfig even = Layout(1, 4, 2, 1, 1, 1);
  even.first_stage_layers = 1;
  even.last_stage_layers = 1;
  absl::StatusOr<Prediction> pe = smi.Predict(even, Knobs{});
  ASSERT_TRUE(pe.ok()) << pe.status();
  EXPECT_EQ(pe->memory.activations_bytes, 922746880.0);
  EXPECT_EQ(pe->last_stage_memory.activations_bytes, 681574400.0);
  EXPECT_DOUBLE_EQ(pe->last_stage_memory_bytes, pe->last_stage_memory.Total());
  EXPECT_LT(pe->last_stage_memory_bytes, pe->peak_memory_bytes);
  // Short sequences: the step's fp32 shard gradients (530,579,456 B) exceed
  // what backward freed (activations 128 x 40,960 x 4 = 20,971,520 B +
  // logits 128 x 32,000 x 4 = 16,384,000 B, plus their 2% fragmentation):
  // the excess is counted with the gradients.
  const StepModel sms = Make(TinyDense(), "h100-sxm", {1, 128, 1});
  absl::StatusOr<Prediction> ps = sms.Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->memory.activations_bytes, 20971520.0 + 16384000.0);
  EXPECT_NEAR(ps->memory.grads_bytes,
              265289728.0 + 530579456.0 - 1.02 * (20971520.0 + 16384000.0), 1.0);
  // pp 1: the last stage is the one rank.
  EXPECT_DOUBLE_EQ(ps->last_stage_memory_bytes, ps->peak_memory_bytes);
  EXPECT_EQ(ps->last_stage_memory.activations_bytes, ps->memory.activations_bytes);
}

TEST(StepModelTest, ThroughputIdentities) {
  const StepModel sm = Make(Preset("llama3-8b"), "h100-sxm", {64, 8192, 512});
  Knobs k;
  k.precision = Precision::kFp8;
  absl::StatusOr<Prediction> p = sm.Predict(Layout(2, 2, 1, 1, 1, 1), k);
  ASSERT_TRUE(p.ok()) << p.status();
  // tokens/s/GPU = global batch x seq / (step x GPUs).
  EXPECT_NEAR(p->tokens_per_sec_per_gpu, 512.0 * 8192 / (p->step_time_s * 64), 1e-6);
  // TFLOPS = FLOPs/token x tokens/s; MFU against the FP8 peak (1979).
  EXPECT_NEAR(p->model_tflops_per_gpu,
              p->model_flops_per_token * p->tokens_per_sec_per_gpu / 1e12, 1e-9);
  EXPECT_NEAR(p->mfu, p->model_tflops_per_gpu / 1979.0, 1e-12);
  // The exposed terms of the breakdown add up to the step.
  double exposed = 0;
  for (const Term& t : p->breakdown) {
    if (!IsHidden(t.kind)) exposed += t.seconds;
    EXPECT_EQ(t.source, CostSource::kDatasheetPrior) << t.name;
    EXPECT_GE(t.seconds, 0) << t.name;
  }
  EXPECT_NEAR(exposed, p->step_time_s, 1e-9 * p->step_time_s);
  EXPECT_FALSE(p->fully_calibrated);
  EXPECT_EQ(p->parallel.dp, 16);
}

TEST(StepModelTest, QuickAgreesWithPredict) {
  const StepModel sm = Make(Preset("deepseek-v3"), "gb200-nvl72", {1024, 4096, 8192});
  Knobs k;
  k.precision = Precision::kMxfp8;
  const ParallelConfig p = Layout(1, 8, 4, 64, 1, 1);
  absl::StatusOr<Prediction> full = sm.Predict(p, k);
  ASSERT_TRUE(full.ok()) << full.status();
  const Estimate quick = sm.Quick(p, k);
  EXPECT_EQ(quick.reason, Infeasibility::kNone);
  EXPECT_EQ(quick.step_time_s, full->step_time_s);
  EXPECT_EQ(quick.peak_memory_bytes, full->peak_memory_bytes);
  EXPECT_EQ(quick.fits, full->fits);
  // An invalid layout: a reason, not zeros.
  EXPECT_EQ(sm.Quick(Layout(3, 8, 4, 64, 1, 1), k).reason,
            Infeasibility::kGpusNotDivisible);
}

TEST(StepModelTest, ErrorsSayWhatIsWrong) {
  const StepModel sm = Make(Preset("qwen3-30b-a3b"), "h100-sxm", {16, 4096, 512});
  EXPECT_THAT(sm.Predict(Layout(1, 1, 1, 3, 1, 1), Knobs{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ep=3 does not divide num_routed_experts=128")));
  EXPECT_THAT(sm.Predict(Layout(64, 1, 1, 1, 1, 1), Knobs{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus=16")));
  Knobs mx;
  mx.precision = Precision::kMxfp8;
  EXPECT_THAT(sm.Predict(Layout(1, 1, 1, 8, 1, 1), mx),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("mxfp8")));
  const ClusterSpec h100 = Cluster("h100-sxm");
  EXPECT_THAT(StepModel::Create(TinyDense(), h100, {1, 2048, 8}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cost model")));
  EXPECT_THAT(StepModel::Create(TinyDense(), h100, {0, 2048, 8},
                                std::make_shared<DatasheetCostModel>(h100)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus=0")));
  EXPECT_THAT(StepModel::Create(TinyDense(), Cluster("b200"), {1, 2048, 8},
                                std::make_shared<DatasheetCostModel>(h100)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'h100-sxm'")));
}

// Natural routing prices the busiest EP rank of the layout
// (planner/routing.h). DeepSeek-V3 on 1,024 GB200, gbs 4,096, TP1 PP16 EP64
// MBS1: dp 64, 64 micro-batches, 4 experts per rank, 4,096 tokens per rank;
// CV_rank = sqrt((63/64) (0.4530^2 / 4 + 1 / 32,768)) = 0.2248; EP groups =
// expert-DP 1 x 16 stages = 16, passes = 58 MoE layers / 16 x 64 = 232;
// imbalance = 1 + 0.2248 x (2.337 + 0.4447 x 1.769 / sqrt(232)) = 1.537.
TEST(StepModelTest, NaturalRoutingPricesTheBusiestRank) {
  const StepModel sm = Make(Preset("deepseek-v3"), "gb200-nvl72", {1024, 4096, 4096});
  const ParallelConfig p = Layout(1, 16, 1, 64, 1, 1);
  Knobs balanced;
  balanced.precision = Precision::kMxfp8;
  Knobs natural = balanced;
  natural.routing = Routing::kNatural;
  absl::StatusOr<Prediction> b = sm.Predict(p, balanced);
  absl::StatusOr<Prediction> n = sm.Predict(p, natural);
  ASSERT_TRUE(b.ok() && n.ok());
  EXPECT_EQ(b->moe_load_imbalance_priced, 1.0);
  EXPECT_NEAR(n->moe_load_imbalance_priced, 1.537, 2e-3);
  EXPECT_LT(n->tokens_per_sec_per_gpu, b->tokens_per_sec_per_gpu);
  EXPECT_GT(n->memory.activations_bytes, b->memory.activations_bytes);  // busiest rank's rows
  // The same step as the explicit imbalance it implies; an explicit value
  // overrides the routing.
  Knobs same = balanced;
  same.moe_load_imbalance = n->moe_load_imbalance_priced;
  EXPECT_DOUBLE_EQ(TokensPerSec(sm, p, same), n->tokens_per_sec_per_gpu);
  Knobs explicit_x = natural;
  explicit_x.moe_load_imbalance = 1.1;
  absl::StatusOr<Prediction> x = sm.Predict(p, explicit_x);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->moe_load_imbalance_priced, 1.1);
  // A dense model has no routing.
  const StepModel dense = Make(Preset("llama3-70b"), "gb200-nvl72", {64, 8192, 256});
  Knobs dn;
  dn.routing = Routing::kNatural;
  absl::StatusOr<Prediction> d = dense.Predict(Layout(1, 4, 5, 1, 1, 1), dn);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->moe_load_imbalance_priced, 1.0);
}

// Relative properties: each knob moves the prediction the way its mechanism
// says, whatever the constants.
TEST(StepModelRelativeTest, KnobsMoveTheRightWay) {
  const StepModel sm = Make(Preset("deepseek-v3"), "h100-sxm", {1024, 4096, 4096});
  const ParallelConfig p = Layout(1, 16, 1, 64, 1, 1);
  Knobs base;
  base.precision = Precision::kFp8;
  const double t_base = TokensPerSec(sm, p, base);

  Knobs a2a = base;
  a2a.dispatcher = Dispatcher::kAllToAll;
  EXPECT_LT(TokensPerSec(sm, p, a2a), t_base) << "de-duplication saves NIC bytes";

  Knobs loop = base;
  loop.grouped_gemm = false;
  EXPECT_LT(TokensPerSec(sm, p, loop), t_base) << "a loop of GEMMs costs launches";

  Knobs no_dp_overlap = base;
  no_dp_overlap.overlap.dp_comm = false;
  EXPECT_LE(TokensPerSec(sm, p, no_dp_overlap), t_base);

  Knobs full = base;
  full.recompute.mode = RecomputeMode::kFull;
  absl::StatusOr<Prediction> pf = sm.Predict(p, full);
  absl::StatusOr<Prediction> pb = sm.Predict(p, base);
  ASSERT_TRUE(pf.ok() && pb.ok());
  EXPECT_LT(pf->tokens_per_sec_per_gpu, pb->tokens_per_sec_per_gpu);
  EXPECT_LT(pf->memory.activations_bytes, pb->memory.activations_bytes);

  Knobs imbalanced = base;
  imbalanced.moe_load_imbalance = 1.3;
  EXPECT_LT(TokensPerSec(sm, p, imbalanced), t_base);

  Knobs offload = base;
  offload.offload_activations = true;
  offload.offload_modules = kOffloadExpertFc1 | kOffloadMoeAct;
  absl::StatusOr<Prediction> po = sm.Predict(p, offload);
  ASSERT_TRUE(po.ok());
  EXPECT_LT(po->memory.activations_bytes, pb->memory.activations_bytes);
  EXPECT_LE(po->tokens_per_sec_per_gpu, pb->tokens_per_sec_per_gpu);
}

TEST(StepModelRelativeTest, ExpertParallelOverTheNicIsSlower) {
  // GPT-OSS-120B on 64 B200: EP 8 stays in the NVLink node, EP 64 crosses
  // InfiniBand; on GB200 NVL72 EP 64 stays in NVLink.
  const ModelSpec oss = Preset("gpt-oss-120b");
  const TrainingShape shape{64, 4096, 1280};
  const StepModel b200 = Make(oss, "b200", shape);
  const StepModel gb200 = Make(oss, "gb200-nvl72", shape);
  const Knobs k;
  const double b200_ep8 = TokensPerSec(b200, Layout(1, 1, 1, 8, 1, 4), k);
  const double b200_ep64 = TokensPerSec(b200, Layout(1, 1, 1, 64, 1, 4), k);
  const double gb200_ep64 = TokensPerSec(gb200, Layout(1, 1, 1, 64, 1, 4), k);
  EXPECT_GT(b200_ep8, b200_ep64);
  EXPECT_GT(gb200_ep64, b200_ep64);
}

// Expert tensor parallelism moves every routed row etp times (all-gather
// before the experts, reduce-scatter after): at the same EP it adds EP
// communication, never removes it.
TEST(StepModelRelativeTest, ExpertTensorParallelismCostsCommunication) {
  const StepModel sm = Make(Preset("deepseek-v3"), "gb200-nvl72", {1024, 4096, 8192});
  Knobs k;
  k.overlap.ep_comm = false;  // compare exposed times directly
  auto ep_seconds = [&](int etp) {
    ParallelConfig p = Layout(2, 4, 1, 4, 1, 1);
    p.etp = etp;
    absl::StatusOr<Prediction> pr = sm.Predict(p, k);
    EXPECT_TRUE(pr.ok()) << pr.status();
    double s = 0;
    if (!pr.ok()) return s;
    for (const Term& t : pr->breakdown) {
      if (t.kind == TermKind::kCommEpExposed || t.kind == TermKind::kCommEpHidden) s += t.seconds;
    }
    return s;
  };
  const double etp1 = ep_seconds(1);
  const double etp8 = ep_seconds(8);
  EXPECT_GT(etp1, 0);
  // 8 x the rows through an 8-rank all-gather and reduce-scatter: much more
  // than the dispatch alone.
  EXPECT_GT(etp8, 2.0 * etp1);
}

TEST(StepModelRelativeTest, PipelineAndPrecision) {
  const ModelSpec m = Preset("llama3-70b");
  const StepModel sm = Make(m, "h100-sxm", {64, 4096, 64});
  Knobs bf16;
  Knobs fp8;
  fp8.precision = Precision::kFp8;
  // FP8 GEMMs beat BF16.
  EXPECT_GT(TokensPerSec(sm, Layout(8, 2, 1, 1, 1, 1), fp8),
            TokensPerSec(sm, Layout(8, 2, 1, 1, 1, 1), bf16));
  // With 16 micro-batches, interleaving (vp 5) shrinks the pp 4 bubble.
  absl::StatusOr<Prediction> plain = sm.Predict(Layout(8, 4, 1, 1, 1, 1), fp8);
  absl::StatusOr<Prediction> inter = sm.Predict(Layout(8, 4, 5, 1, 1, 1), fp8);
  ASSERT_TRUE(plain.ok() && inter.ok());
  auto bubble = [](const Prediction& p) {
    for (const Term& t : p.breakdown) {
      if (t.kind == TermKind::kPipelineBubble) return t.seconds;
    }
    return 0.0;
  };
  EXPECT_LT(bubble(*inter), bubble(*plain));
  // More tensor parallelism, less memory per GPU.
  absl::StatusOr<Prediction> tp4 = sm.Predict(Layout(4, 4, 1, 1, 1, 1), fp8);
  ASSERT_TRUE(tp4.ok());
  EXPECT_LT(plain->peak_memory_bytes, tp4->peak_memory_bytes);
}

TEST(StepModelTest, ContextParallelExtrasByHand) {
  using step_model_internal::CpBackwardExtraKernels;
  using step_model_internal::CpBackwardMergeBytes;
  using step_model_internal::CpForwardExtraKernels;
  using step_model_internal::CpForwardMergeBytes;
  // Forward 4P - 2, backward 3 (P - 1) + 4P + 2 kernels.
  EXPECT_EQ(CpForwardExtraKernels(2), 6.0);
  EXPECT_EQ(CpForwardExtraKernels(4), 14.0);
  EXPECT_EQ(CpBackwardExtraKernels(2), 13.0);
  EXPECT_EQ(CpBackwardExtraKernels(4), 27.0);
  // TinyDense at cp 2, 4,096 tokens per rank (seq 4,096 x mbs 2 / cp 2),
  // tp 1, BF16: o = q = 4,096 x 8 heads x 128 x 2 B = 8,388,608 B; the K/V
  // chunk 4,096 x 2 x 8 x 128 x 2 B = 16,777,216 B. Forward: 2 kv +
  // (2 + 2.25) o = 33,554,432 + 35,651,584; backward 3 x 2 x (q + kv).
  EXPECT_EQ(CpForwardMergeBytes(2, 8388608.0, 16777216.0), 69206016.0);
  EXPECT_EQ(CpBackwardMergeBytes(2, 8388608.0, 16777216.0), 150994944.0);

  // The same job at cp 1 / 2 / 4 with the same tokens per rank and
  // micro-batch (mbs = cp) and the same 4 micro-batches (gbs 16 over dp x
  // mbs = 4): the GEMMs, attention FLOPs, memory and gradient traffic are the
  // same, so the differences are the CP terms alone. Under CUDA graphs
  // (attention captured: no host ops) the launches differ by the extra
  // kernels x 1.5 us x 4 layers x 4 micro-batches, the memory-bound time by
  // the merges' bytes through the cost model.
  const ModelSpec m = TinyDense();
  const ClusterSpec cluster = Cluster("h100-sxm");
  const DatasheetCostModel cost(cluster);
  const StepModel sm = Make(m, "h100-sxm", {4, 4096, 16});
  Knobs k;
  k.cuda_graphs = true;
  auto term = [](const Prediction& p, const std::string& name) {
    double s = 0;
    for (const Term& t : p.breakdown) {
      if (t.name == name) s += t.seconds;
    }
    return s;
  };
  absl::StatusOr<Prediction> cp1 = sm.Predict(Layout(1, 1, 1, 1, 1, 1), k);
  absl::StatusOr<Prediction> cp2 = sm.Predict(Layout(1, 1, 1, 1, 2, 2), k);
  absl::StatusOr<Prediction> cp4 = sm.Predict(Layout(1, 1, 1, 1, 4, 4), k);
  ASSERT_TRUE(cp1.ok() && cp2.ok() && cp4.ok());
  const double per_step = 4.0 * 4.0;  // layers x micro-batches
  EXPECT_NEAR(term(*cp2, "kernel_launches") - term(*cp1, "kernel_launches"),
              per_step * (6.0 + 13.0) * cost.KernelLaunchSeconds(true), 1e-12);
  EXPECT_NEAR(term(*cp2, "memory_bound_kernels") - term(*cp1, "memory_bound_kernels"),
              per_step * (cost.MemoryBound(69206016.0).seconds +
                          cost.MemoryBound(150994944.0).seconds),
              1e-12);
  EXPECT_EQ(cp2->peak_memory_bytes, cp1->peak_memory_bytes);
  // So where CP buys nothing (no memory to save), more of it ranks lower.
  EXPECT_GT(cp1->tokens_per_sec_per_gpu, cp2->tokens_per_sec_per_gpu);
  EXPECT_GT(cp2->tokens_per_sec_per_gpu, cp4->tokens_per_sec_per_gpu);
}

TEST(StepModelRelativeTest, MoreGpusSameBatchNeverMoreTokensPerGpu) {
  // Strong scaling: the same global batch over more data-parallel GPUs
  // leaves fewer micro-batches to amortise the same fixed costs.
  const ModelSpec m = Preset("qwen3-30b-a3b");
  double prev = 1e30;
  for (int gpus : {8, 16, 32, 64}) {
    const StepModel sm = Make(m, "h100-sxm", {gpus, 4096, 256});
    Knobs k;
    k.precision = Precision::kFp8;
    const double t = TokensPerSec(sm, Layout(1, 1, 1, 8, 1, 1), k);
    EXPECT_LE(t, prev * (1 + 1e-9)) << gpus;
    prev = t;
  }
}

TEST(StackGenerationTest, ContainerVersions) {
  struct Case {
    const char* container;
    StackGeneration generation;
  };
  for (const Case& c : {Case{"26.02", StackGeneration::k2602},
                        Case{"26.02.01", StackGeneration::k2602},
                        Case{"26.04.01", StackGeneration::k2602},
                        Case{"25.11", StackGeneration::k2602},
                        Case{"26.06", StackGeneration::k2606},
                        Case{"26.06.01", StackGeneration::k2606},
                        Case{"26.08", StackGeneration::k2606},
                        Case{"27.01", StackGeneration::k2606}}) {
    absl::StatusOr<StackGeneration> g = StackGenerationForContainer(c.container);
    ASSERT_TRUE(g.ok()) << c.container << ": " << g.status();
    EXPECT_EQ(*g, c.generation) << c.container;
  }
  for (const char* bad : {"", "26", "26.6", "26.13", "26.06.", "26.06.x", "v26.06", "26-06"}) {
    EXPECT_THAT(StackGenerationForContainer(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("YY.MM")))
        << "'" << bad << "'";
  }
  // The version as numbers, ordered as the releases are.
  absl::StatusOr<ContainerVersion> v2604 = ParseContainerVersion("26.04");
  absl::StatusOr<ContainerVersion> v260401 = ParseContainerVersion("26.04.01");
  absl::StatusOr<ContainerVersion> v2606 = ParseContainerVersion("26.06");
  ASSERT_TRUE(v2604.ok() && v260401.ok() && v2606.ok());
  EXPECT_EQ(v260401->year, 26);
  EXPECT_EQ(v260401->month, 4);
  EXPECT_EQ(v260401->patch, 1);
  EXPECT_EQ(v2604->patch, 0);
  EXPECT_TRUE(*v2604 < *v260401 && *v260401 < *v2606);
  EXPECT_FALSE(*v260401 < *v2604);
  EXPECT_THAT(ParseContainerVersion("26.06.x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("YY.MM")));
  absl::StatusOr<StackGeneration> latest = ParseStackGeneration("latest");
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, kLatestStackGeneration);
  EXPECT_EQ(StackGenerationName(StackGeneration::k2606), "26.06");
}

TEST(StackGenerationTest, ConstantsPerGeneration) {
  // The defaults are the latest generation's; 26.02-26.04 serialise the
  // MoE host work with the GPU, 26.06 on hides it under the EP overlap.
  EXPECT_EQ(StackConstants().generation, kLatestStackGeneration);
  EXPECT_TRUE(StackConstants().moe_host_hidden_by_ep_overlap);
  EXPECT_FALSE(StackConstantsFor(StackGeneration::k2602).moe_host_hidden_by_ep_overlap);
  EXPECT_TRUE(StackConstantsFor(StackGeneration::k2606).moe_host_hidden_by_ep_overlap);
  EXPECT_EQ(StackConstantsFor(StackGeneration::k2602).generation, StackGeneration::k2602);
}

// Known model errors (style habit 7): today's prediction for published rows
// of ../shared/validation/runs.json, with the measured value in the comment,
// each with its row's software generation. When the model improves these
// move toward the truth; update them then.
// The stack of a published Megatron-Bridge row of `generation`: its
// performance recipes ran full-iteration CUDA graphs from 26.06 on
// (MegatronFeatures::graph_full_iteration), as the validator prices them.
StackConstants PublishedRecipeStack(StackGeneration generation) {
  StackConstants stack = StackConstantsFor(generation);
  stack.features.graph_full_iteration = generation == StackGeneration::k2606;
  return stack;
}

StepModel MakeFor(const ModelSpec& m, const char* cluster, TrainingShape shape,
                  StackGeneration generation) {
  const ClusterSpec c = Cluster(cluster);
  absl::StatusOr<StepModel> sm = StepModel::Create(
      m, c, shape, std::make_shared<DatasheetCostModel>(c), PublishedRecipeStack(generation));
  EXPECT_TRUE(sm.ok()) << sm.status();
  return *std::move(sm);
}

uint32_t AllSelectiveBut(uint32_t modules) {
  return (kRecomputeCoreAttn | kRecomputeMlaUpProj | kRecomputeLayerNorm | kRecomputeMoeAct |
          kRecomputeMlp | kRecomputeMoe | kRecomputeSharedExperts) &
         ~modules;
}

TEST(StepModelKnownErrorTest, GptOssExpertParallelOverInfiniBand) {
  // mbridge 26.02, B300 x 64 (8 HGX nodes), EP 64 across the NICs, BF16,
  // mbs 4, gbs 1280: measured 8,359 tokens/s/GPU, about the same as B200
  // (8,047) although B300's NIC is twice as fast. The recipe runs NCCL's
  // all-to-all (GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V2 at v0.3.0 has no
  // flex backend) and no recompute. B200's 400G NIC path (32.5 GB/s per
  // GPU) is under the Blackwell inter-node dispatch ceiling (40 GB/s), B300's
  // 800G one is held at it: the model is ~1% high here (8,417) and ~6% low
  // on B200 (7,542 against 8,047), so B300 / B200 1.12 priced, 1.04
  // measured. Before the recipes' dispatchers were audited these rows were
  // priced with DeepEP and the ceiling was 32.5 GB/s.
  const StepModel sm = MakeFor(Preset("gpt-oss-120b"), "b300", {64, 4096, 1280},
                               StackGeneration::k2602);
  Knobs k;  // the run defaults tests/validate prices it with (RunDefaultKnobs)
  k.precision = Precision::kBf16;
  k.grouped_gemm = true;
  k.cuda_graphs = true;
  k.overlap.ep_comm = false;  // the recipe leaves moe_a2a_overlap off
  k.dispatcher = Dispatcher::kAllToAll;
  const double t = TokensPerSec(sm, Layout(1, 1, 1, 64, 1, 4), k);
  EXPECT_NEAR(t, 8417, 0.03 * 8417);  // true: 8,359
}

TEST(StepModelKnownErrorTest, Qwen3On8Gb300AfterContainer2606) {
  // mbridge 26.06, GB300 x 8, EP 8, MXFP8, mbs 8, gbs 512: measured 45,275
  // tokens/s/GPU (26.04.01: 31,744). The 26.06 generation hides the MoE
  // host time under the EP-overlap schedule (before: 30,002, -34%); still
  // ~21% low, with the MoE recompute the memory model asks for (the
  // Qwen3 recipes run without recompute), and since the HybridEP rates of
  // DeepEP PR 420 (8 ranks: 448/520 GB/s FP8 dispatch/combine) replaced the
  // 630 GB/s prior, its EP time is longer, and the data-set constants moved
  // (ep_overlap_fraction 0; was 40,089, -11%).
  const StepModel sm = MakeFor(Preset("qwen3-30b-a3b"), "gb300-nvl72", {8, 4096, 512},
                               StackGeneration::k2606);
  Knobs k;
  k.overlap.ep_comm = false;  // the recipe leaves moe_a2a_overlap off
  k.precision = Precision::kMxfp8;
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = AllSelectiveBut(0);
  const double t = TokensPerSec(sm, Layout(1, 1, 1, 8, 1, 8), k);
  EXPECT_NEAR(t, 35988, 0.03 * 35988);  // true: 45,275 (26.06)
}

TEST(StepModelKnownErrorTest, Qwen3On16H100ContradictoryPair) {
  // mbridge 26.02 and 26.02.01, H100 x 16, pp 2 x vp 12, EP 8, FP8, same
  // configuration and generation: measured 5,113 and 9,058 tokens/s/GPU.
  // No prediction is within 27.8% of both (tests/validate reports the
  // pair); the model sits near the faster one.
  const StepModel sm = MakeFor(Preset("qwen3-30b-a3b"), "h100-sxm", {16, 4096, 1024},
                               StackGeneration::k2602);
  Knobs k;
  k.overlap.ep_comm = false;  // the recipe leaves moe_a2a_overlap off
  k.precision = Precision::kFp8;
  const double t = TokensPerSec(sm, Layout(1, 2, 12, 8, 1, 1), k);
  EXPECT_NEAR(t, 8091, 0.03 * 8091);  // true: 5,113 (26.02), 9,058 (26.02.01)
}

TEST(StepModelKnownErrorTest, Llama3LoraOn8Gb200) {
  // mbridge 26.06 LoRA, GB200 x 8, pp 4 x vp 20 (one layer per virtual
  // stage), MXFP8, gbs 32: measured 5,958. With the adapters' HBM traffic
  // the model was ~13% high (6,736; before that 7,775, +30%); with the
  // exposed P2P handshake per virtual-stage visit (pp_stage_visit_s) ~5%;
  // with the constants refit on the FP8-saved-activation memory model
  // (pp_stage_visit 325 us, gemm_efficiency_scale 0.92) ~-1% (5,911);
  // with the refit after NVFP4's TP collectives came unhidden
  // (pp_stage_visit 175 us, gemm_efficiency_scale 1.02) ~+3% (6,139).
  TrainingShape shape{8, 4096, 32};
  shape.objective = Objective::kLora;
  const StepModel sm =
      MakeFor(Preset("llama3-70b"), "gb200-nvl72", shape, StackGeneration::k2606);
  Knobs k;
  k.precision = Precision::kMxfp8;
  const double t = TokensPerSec(sm, Layout(1, 4, 20, 1, 1, 1), k);
  EXPECT_NEAR(t, 6139, 0.03 * 6139);  // true: 5,958
}

TEST(StepModelKnownErrorTest, DeepSeekV3On256Gb300) {
  // mbridge 26.06, GB300 x 256, pp 2 x vp 8, EP 32 inside the NVL72 domain,
  // MXFP8, gbs 15360: measured 6,422. ~30% low: the memory model needs
  // selective recompute where the recipe runs none (without it the
  // validator's row is -8%), and HybridEP at the 16-rank rates of DeepEP PR
  // 420 (394/443 GB/s) makes EP 32 slower than the 630 GB/s prior did (was
  // 5,122, -20%). 4,659 (-27%) with the per-step host time and Blackwell
  // Ultra's clock gain refit (step_host_s 175 ms, 1.24; within 3% of that
  // at the merged refit, 200 ms and 1.20).
  const StepModel sm = MakeFor(Preset("deepseek-v3"), "gb300-nvl72", {256, 4096, 15360},
                               StackGeneration::k2606);
  Knobs k;
  k.overlap.ep_comm = false;  // the recipe leaves moe_a2a_overlap off
  k.precision = Precision::kMxfp8;
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = AllSelectiveBut(0);
  const double t = TokensPerSec(sm, Layout(1, 2, 8, 32, 1, 1), k);
  EXPECT_NEAR(t, 4659, 0.03 * 4659);  // true: 6,422
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

// A cost model in which every dense GEMM takes exactly 1 ms and every
// collective `collective_ms`, everything else nothing: the step model's
// composition (passes, layers, stages, micro-batches, bubble) can then be
// redone by hand.
// memory_bytes_per_s > 0: memory-bound kernels take bytes / that rate.
class UnitCostModel : public CostModel {
 public:
  explicit UnitCostModel(ClusterSpec c, double collective_ms = 0,
                         double memory_bytes_per_s = 0)
      : cluster_(std::move(c)),
        collective_s_(collective_ms * 1e-3),
        memory_bytes_per_s_(memory_bytes_per_s) {}
  const ClusterSpec& cluster() const override { return cluster_; }
  Cost DenseGemm(double, double, double, Precision) const override { return {1e-3}; }
  Cost GroupedGemm(const GroupedGemmShape&) const override { return {}; }
  Cost AttentionForward(const AttentionShape&) const override { return {}; }
  Cost AttentionBackward(const AttentionShape&) const override { return {}; }
  Cost MemoryBound(double bytes) const override {
    return {memory_bytes_per_s_ > 0 ? bytes / memory_bytes_per_s_ : 0.0};
  }
  Cost Collective(CollectiveKind, double, int n, LinkSpan) const override {
    return {n > 1 ? collective_s_ : 0.0};
  }
  Cost Dispatch(const DispatchShape&) const override { return {}; }
  Cost HostOffload(double) const override { return {}; }
  double OverlapSlowdown(int) const override { return 1.0; }
  double KernelLaunchSeconds(bool) const override { return 0.0; }

 private:
  ClusterSpec cluster_;
  double collective_s_;
  double memory_bytes_per_s_;
};

// The P2P handshake per virtual-stage visit and the per-step host time are
// data-set constants; these tests pin them at a round 0.25 ms and at zero
// (StepHostTimeOncePerStep below prices the latter).
StackConstants RoundStack() {
  StackConstants s;
  s.pp_stage_visit_s = 0.25e-3;
  s.step_host_s = 0;
  return s;
}

double StepSeconds(const TrainingShape& shape, const ParallelConfig& p,
                   const Knobs& k, double collective_ms = 0) {
  // SM count unknown: the TP overlap's split GEMMs cost what UnitCostModel
  // says, without wave quantization (GemmWaveEfficiency has its own test).
  ClusterSpec c = Cluster("h100-sxm");
  c.gpu.sm_count = 0;
  absl::StatusOr<StepModel> sm = StepModel::Create(
      TinyDense(), c, shape, std::make_shared<UnitCostModel>(c, collective_ms), RoundStack());
  EXPECT_TRUE(sm.ok()) << sm.status();
  absl::StatusOr<Prediction> pr = sm->Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  return pr.ok() ? pr->step_time_s : 0.0;
}

// TinyDense per layer and micro-batch: 4 GEMMs (QKV, output projection,
// fc1, fc2) x 3 passes (forward, dgrad, wgrad) = 12 ms. The last stage adds
// the logits GEMM x 3 = 3 ms. 8 sequences, mbs 1, dp 1: 8 micro-batches.
TEST(StepModelByHandTest, StepHostTimeOncePerStep) {
  // NoPipeline below (408 ms) with 100 ms of host time per step: 508 ms,
  // whatever the micro-batches (16 sequences: 816 + 100 ms), as its own
  // breakdown term.
  const ClusterSpec c = Cluster("h100-sxm");
  StackConstants stack = RoundStack();
  stack.step_host_s = 0.1;
  for (const auto& [gbs, expected] : {std::pair{8, 0.508}, std::pair{16, 0.916}}) {
    absl::StatusOr<StepModel> sm = StepModel::Create(
        TinyDense(), c, {1, 2048, gbs}, std::make_shared<UnitCostModel>(c, 0.0), stack);
    ASSERT_TRUE(sm.ok()) << sm.status();
    absl::StatusOr<Prediction> pr = sm->Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
    ASSERT_TRUE(pr.ok()) << pr.status();
    EXPECT_NEAR(pr->step_time_s, expected, 1e-12);
    double host = 0;
    for (const Term& t : pr->breakdown) {
      if (t.name == "host.per_step") host += t.seconds;
    }
    EXPECT_DOUBLE_EQ(host, 0.1);
  }
}

TEST(StepModelByHandTest, NoPipeline) {
  // 8 x (4 x 12 + 3) = 408 ms.
  EXPECT_NEAR(StepSeconds({1, 2048, 8}, Layout(1, 1, 1, 1, 1, 1), Knobs{}), 0.408,
              1e-12);
}

TEST(StepModelByHandTest, OneFOneBWithBalancedStages) {
  // pp 2: the last stage's head (3 ms = 0.25 layers) is balanced in layer
  // units: target (4 + 0.25) / 2 = 2.125 layers per stage; first stage
  // round(2.125) = 2, last round(2.125 - 0.25) = 2. Rank 0: 24 ms, rank 1:
  // 24 + 3 = 27 ms. Each micro-batch also pays the P2P handshake of its
  // virtual-stage visits, 2 x vp x 0.25 ms = 0.5 ms, on every rank.
  // Step = 8 x 27.5 + (pp - 1) x mean(24.5, 27.5) = 220 + 26 = 246 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(1, 2, 1, 1, 1, 1), Knobs{}), 0.246,
              1e-12);
}

TEST(StepModelByHandTest, InterleavedStages) {
  // pp 2, vp 2: 4 virtual stages of one layer each (target 1.0625; last
  // round(0.8125) = 1, first 1). Rank times as above (24 and 27 ms) plus
  // the handshakes 2 x 2 x 0.25 = 1 ms, the bubble divided by vp:
  // 8 x 28 + 26.5 / 2 = 224 + 13.25 = 237.25 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(1, 2, 2, 1, 1, 1), Knobs{}), 0.23725,
              1e-12);
}

TEST(StepModelByHandTest, InterleavedP2pHiddenOnlyBehindOneChunkPass) {
  // As InterleavedStages, with every collective 10 ms: each P2P send/recv
  // 10 ms. The interleaved overlap hides a transfer only behind one chunk
  // pass of the bottleneck rank (27 ms / vp 2 = 13.5 ms a chunk: forward
  // 4.5 ms, backward 9 ms): exposed per micro-batch vp x (max(0, 10 - 4.5)
  // + max(0, 10 - 9)) = 2 x 6.5 = 13 ms, + 1 ms of handshakes = 14 ms.
  // t_max 27 + 14 = 41, t_avg 25.5 + 14 = 39.5: 8 x 41 + 39.5 / 2 =
  // 328 + 19.75 = 347.75 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(1, 2, 2, 1, 1, 1), Knobs{}, 10.0), 0.34775,
              1e-12);
  // Non-interleaved (vp 1): no P2P overlap, 2 x 10 + 0.5 ms exposed per
  // micro-batch: 8 x (27 + 20.5) + (25.5 + 20.5) = 380 + 46 = 426 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(1, 2, 1, 1, 1, 1), Knobs{}, 10.0), 0.426,
              1e-12);
}

TEST(StepModelByHandTest, UnevenFirstAndLastStages) {
  // first_stage_layers 1, last 3: rank 0 12 ms, rank 1 3 x 12 + 3 = 39 ms,
  // each + 0.5 ms of handshakes: 8 x 39.5 + mean(12.5, 39.5) = 316 + 26 =
  // 342 ms.
  ParallelConfig p = Layout(1, 2, 1, 1, 1, 1);
  p.first_stage_layers = 1;
  p.last_stage_layers = 3;
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, p, Knobs{}), 0.342, 1e-12);
}

TEST(StepModelByHandTest, FullRecomputeAndLora) {
  // Full recompute repeats each layer's forward GEMMs (4 ms) before its
  // backward: 8 x (4 x 16 + 3) = 536 ms.
  Knobs full;
  full.recompute.mode = RecomputeMode::kFull;
  EXPECT_NEAR(StepSeconds({1, 2048, 8}, Layout(1, 1, 1, 1, 1, 1), full), 0.536, 1e-12);
  // LoRA: no weight-gradient GEMMs: 2 passes, 8 ms per layer, 2 ms head:
  // 8 x (4 x 8 + 2) = 272 ms.
  TrainingShape lora{1, 2048, 8};
  lora.objective = Objective::kLora;
  EXPECT_NEAR(StepSeconds(lora, Layout(1, 1, 1, 1, 1, 1), Knobs{}), 0.272, 1e-12);
}

TEST(StepModelByHandTest, TensorParallelCommunication) {
  // tp 2 with every collective 1 ms and TP overlap off: per layer the
  // attention and the MLP block each move five collectives (forward: the
  // input's all-gather, the output's reduce-scatter; backward: the output
  // gradient's all-gather, the input gathered again for the wgrad, the
  // input gradient's reduce-scatter): 2 x 5 x 1 ms = 10 ms; the head adds
  // its all-gather forward and backward, 2 ms.
  // 8 x (4 x (12 + 10) + 3 + 2) = 744 ms.
  Knobs k;
  k.overlap.tp_comm = false;
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(2, 1, 1, 1, 1, 1), k, 1.0), 0.744,
              1e-12);
  // With TP overlap each collective hides behind its own GEMM (1 ms), at
  // most 90% of it: 0.1 ms of each of the 10 shows, 1 ms per layer. The
  // overlap splits GEMMs (TpOverlapChunkingSeconds), and every GEMM costs
  // 1 ms here whatever its size: per block the column fprop and the row
  // dgrad in tp = 2 chunks (+1 ms each), the row fprop in 4 (+3 ms): 10 ms
  // per layer. 8 x (4 x (12 + 1 + 10) + 3 + 2) = 776 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 8}, Layout(2, 1, 1, 1, 1, 1), Knobs{}, 1.0), 0.776,
              1e-12);
}

TEST(StepModelByHandTest, Nvfp4TensorParallelCommunicationIsNotHidden) {
  // The same tp 2 step on a Blackwell cluster (which has NVFP4), every
  // collective 1 ms, TP overlap knob on. FP8 and MXFP8 GEMMs hide the TP
  // collectives (userbuffers) but 0.1 ms of each, and pay the split GEMMs:
  // 776 ms as above. NVFP4 GEMMs have no userbuffers path
  // (TpCommOverlapSupports), so the knob changes nothing and all 10 ms per
  // layer stay exposed, with nothing split: 8 x (4 x (12 + 10) + 3 + 2) =
  // 744 ms, the overlap-off figure.
  ClusterSpec c = Cluster("gb200-nvl72");
  c.gpu.sm_count = 0;  // as StepSeconds: no wave quantization in this by-hand step
  auto step = [&](Precision precision, bool tp_overlap) {
    absl::StatusOr<StepModel> sm = StepModel::Create(
        TinyDense(), c, {2, 2048, 8}, std::make_shared<UnitCostModel>(c, 1.0), RoundStack());
    EXPECT_TRUE(sm.ok()) << sm.status();
    Knobs k;
    k.precision = precision;
    k.overlap.tp_comm = tp_overlap;
    absl::StatusOr<Prediction> pr = sm->Predict(Layout(2, 1, 1, 1, 1, 1), k);
    EXPECT_TRUE(pr.ok()) << pr.status();
    return pr.ok() ? pr->step_time_s : 0.0;
  };
  EXPECT_NEAR(step(Precision::kFp8, true), 0.776, 1e-12);
  EXPECT_NEAR(step(Precision::kMxfp8, true), 0.776, 1e-12);
  EXPECT_NEAR(step(Precision::kNvfp4, true), 0.744, 1e-12);
  EXPECT_NEAR(step(Precision::kNvfp4, false), 0.744, 1e-12);
}

// TinyDense's attention with 2 MoE layers: 8 experts of width 512, top-2
// (or `experts`), no shared experts.
ModelSpec TinyMoe(int experts = 8) {
  ModelSpec m = TinyDense();
  m.name = "tiny-moe";
  m.num_layers = 2;
  m.num_routed_experts = experts;
  m.moe_top_k = 2;
  m.moe_ffn_hidden_size = 512;
  return m;
}

double MoeStepSeconds(const ModelSpec& m, const TrainingShape& shape,
                      const ParallelConfig& p, StackGeneration generation) {
  const ClusterSpec c = Cluster("h100-sxm");
  // The host time per op is a data-set constant; pinned at a round 25 us.
  StackConstants stack = PublishedRecipeStack(generation);
  stack.host_op_s = 25e-6;
  stack.step_host_s = 0;  // a data-set constant, pinned at zero here
  absl::StatusOr<StepModel> sm =
      StepModel::Create(m, c, shape, std::make_shared<UnitCostModel>(c), stack);
  EXPECT_TRUE(sm.ok()) << sm.status();
  absl::StatusOr<Prediction> pr = sm->Predict(p, Knobs{});
  EXPECT_TRUE(pr.ok()) << pr.status();
  return pr.ok() ? pr->step_time_s : 0.0;
}

// Megatron-Core's "moe" recompute checkpoints the whole MoELayer forward,
// shared experts included (moe_layer.py: custom_forward calls
// shared_experts_compute inside tensor_parallel.checkpoint), so they keep
// nothing of their own and re-run in backward, as with shared_experts.
TEST(SharedExpertsRecomputedTest, MoeRecomputeIncludesTheSharedExperts) {
  using step_model_internal::SharedExpertsRecomputed;
  EXPECT_FALSE(SharedExpertsRecomputed(0));
  EXPECT_FALSE(SharedExpertsRecomputed(kRecomputeMoeAct | kRecomputeMlp));
  EXPECT_TRUE(SharedExpertsRecomputed(kRecomputeSharedExperts));
  EXPECT_TRUE(SharedExpertsRecomputed(kRecomputeMoe));
  EXPECT_TRUE(SharedExpertsRecomputed(kRecomputeMoe | kRecomputeSharedExperts));
}

TEST(StepModelTest, MoeRecomputeDropsSharedExpertActivationsByHand) {
  // TinyMoe with one shared expert (width 512), one GPU, 2,048 tokens, BF16.
  // Per token and MoE layer: the shared expert keeps fc1's output (2 x 512)
  // and fc2's input (512), 1,536 x 2 B = 3,072 B; the routed experts their
  // permuted inputs (top-2 x 1,024), fc1's outputs (2 x 2 x 512) and
  // activation outputs (2 x 512), 5,120 x 2 B = 10,240 B, and the router's
  // probabilities and indices (2 x 8 experts x 2 B = 32 B): 10,272 B.
  ModelSpec m = TinyMoe();
  m.num_shared_experts = 1;
  const StepModel sm = Make(m, "h100-sxm", {1, 2048, 8});
  auto run = [&](uint32_t modules) {
    Knobs k;
    k.recompute.mode = modules == 0 ? RecomputeMode::kNone : RecomputeMode::kSelective;
    k.recompute.modules = modules;
    absl::StatusOr<Prediction> p = sm.Predict(Layout(1, 1, 1, 1, 1, 1), k);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction{};
  };
  const Prediction none = run(0);
  const Prediction moe = run(kRecomputeMoe);
  const Prediction shared = run(kRecomputeSharedExperts);
  const Prediction both = run(kRecomputeMoe | kRecomputeSharedExperts);
  // moe alone is moe + shared_experts, in memory and in time.
  EXPECT_EQ(moe.memory.activations_bytes, both.memory.activations_bytes);
  EXPECT_DOUBLE_EQ(moe.step_time_s, both.step_time_s);
  // moe drops both: (3,072 + 10,272) B x 2,048 tokens x 2 layers.
  EXPECT_EQ(none.memory.activations_bytes - moe.memory.activations_bytes, 54657024.0);
  // shared_experts alone drops the shared expert's 3,072 B only.
  EXPECT_EQ(none.memory.activations_bytes - shared.memory.activations_bytes, 12582912.0);
}

TEST(StepModelByHandTest, MoeHostTimePerGeneration) {
  // TinyMoe per layer and micro-batch under the unit cost model: QKV and
  // output projection GEMMs x 3 passes = 6 ms, the router GEMM x 3 = 3 ms
  // (grouped GEMMs, dispatch and memory-bound kernels cost nothing): 9 ms
  // of compute. EP 2: 4 local experts, host time (7 x 3 + 13 x 4) x 25 us
  // = 1.825 ms. 2 GPUs, gbs 16: dp 2, 8 micro-batches, head 3 ms.
  // 26.02: host time adds, and so does the EP-overlap schedule's own host
  // work (the default knobs run it; ep_overlap_schedule_host_ops 30 x 25 us
  // = 0.75 ms per layer and micro-batch): 8 x (2 x (9 + 1.825 + 0.75) + 3)
  // = 209.2 ms.
  // 26.06, pp 1 (EP-overlap schedule): hidden behind the other
  // micro-batch's 9 ms, the schedule's host work captured with it:
  // 8 x (2 x 9 + 3) = 168 ms.
  const TrainingShape shape{2, 2048, 16};
  const ParallelConfig ep2 = Layout(1, 1, 1, 2, 1, 1);
  EXPECT_NEAR(MoeStepSeconds(TinyMoe(), shape, ep2, StackGeneration::k2602), 0.2092, 1e-12);
  EXPECT_NEAR(MoeStepSeconds(TinyMoe(), shape, ep2, StackGeneration::k2606), 0.168, 1e-12);
  // 512 experts: 256 local, host (21 + 13 x 256) x 25 us = 83.725 ms, of
  // which 83.725 - 9 = 74.725 ms shows in 26.06 (head 3 ms as before):
  // 8 x (2 x (9 + 74.725) + 3) = 1,363.6 ms.
  EXPECT_NEAR(MoeStepSeconds(TinyMoe(512), shape, ep2, StackGeneration::k2606), 1.3636,
              1e-12);
  // pp 2 without interleaving has no EP-overlap schedule: both generations
  // pay the host time (4 GPUs: pp 2, dp 2, EP 2).
  const ParallelConfig pp2 = Layout(1, 2, 1, 2, 1, 1);
  EXPECT_NEAR(MoeStepSeconds(TinyMoe(), {4, 2048, 16}, pp2, StackGeneration::k2606),
              MoeStepSeconds(TinyMoe(), {4, 2048, 16}, pp2, StackGeneration::k2602), 1e-15);
  // EP 1 (no EP communication, no A2A-overlap schedule): the same.
  const ParallelConfig ep1 = Layout(1, 1, 1, 1, 1, 1);
  EXPECT_NEAR(MoeStepSeconds(TinyMoe(), shape, ep1, StackGeneration::k2606),
              MoeStepSeconds(TinyMoe(), shape, ep1, StackGeneration::k2602), 1e-15);
}

double MoeStepSecondsWith(const ModelSpec& m, const char* cluster, const ParallelConfig& p,
                          const StackConstants& stack, const Knobs& k) {
  const ClusterSpec c = Cluster(cluster);
  absl::StatusOr<StepModel> sm =
      StepModel::Create(m, c, {2, 2048, 16}, std::make_shared<UnitCostModel>(c), stack);
  EXPECT_TRUE(sm.ok()) << sm.status();
  absl::StatusOr<Prediction> pr = sm->Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  return pr.ok() ? pr->step_time_s : 0.0;
}

TEST(StepModelByHandTest, MoeHostHiddenOnlyUnderFullIterationGraphs) {
  // TinyMoe, EP 2, as in MoeHostTimePerGeneration: 9 ms of compute and
  // 1.825 ms of MoE host time per layer and micro-batch, 8 micro-batches,
  // head 3 ms. 26.06 with full-iteration graphs (the published 26.06 MoE
  // performance recipes'): hidden, 8 x (2 x 9 + 3) = 168 ms. With graphs scoped to router +
  // preprocess (+ attn) the dispatch's token-count sync holds the CPU, and
  // the host time adds as in 26.02: 8 x (2 x (9 + 1.825) + 3) = 197.2 ms
  // with the EP overlap off; on, its schedule's own host work adds
  // 30 x 25 us = 0.75 ms per layer and micro-batch: + 8 x 2 x 0.75 = 12 ms.
  const ParallelConfig ep2 = Layout(1, 1, 1, 2, 1, 1);
  StackConstants scoped = StackConstantsFor(StackGeneration::k2606);
  scoped.host_op_s = 25e-6;
  scoped.step_host_s = 0;  // a data-set constant, pinned at zero here
  // The default: the scope moetune's own Megatron file captures.
  ASSERT_FALSE(scoped.features.graph_full_iteration);
  StackConstants full = scoped;
  full.features.graph_full_iteration = true;
  Knobs overlap_on;
  overlap_on.overlap.ep_comm = true;
  Knobs overlap_off;
  overlap_off.overlap.ep_comm = false;
  // The unit cost model prices the dispatch at zero, so the EP overlap
  // itself hides nothing here: only the host rule differs.
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, full, overlap_on), 0.168, 1e-12);
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, full, overlap_off), 0.168, 1e-12);
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, scoped, overlap_on), 0.2092,
              1e-12);
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, scoped, overlap_off), 0.1972,
              1e-12);
  // 26.02 never hides, whatever the scope.
  StackConstants old = StackConstantsFor(StackGeneration::k2602);
  old.host_op_s = 25e-6;
  old.step_host_s = 0;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, old, overlap_on), 0.2092, 1e-12);
  // The schedule's host op count is what the difference is made of.
  StackConstants lighter = old;
  lighter.ep_overlap_schedule_host_ops = 10;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, lighter, overlap_on),
              0.1972 + 8 * 2 * 10 * 25e-6, 1e-12);
}

TEST(StepModelByHandTest, MegatronFeaturesOnTheHost) {
  // TinyMoe, EP 2, 26.02 (host time adds), as in MoeHostTimePerGeneration:
  // 8 micro-batches x (2 layers x (9 + 1.825) + 3) = 197.2 ms with CUDA
  // graphs. The unit cost model launches kernels for free, so a light
  // PyTorch op costs kTorchCallHostS = 3 us on the host. The EP overlap is
  // off throughout (its schedule's host work: MoeHostHiddenOnlyUnder
  // FullIterationGraphs).
  const ParallelConfig ep2 = Layout(1, 1, 1, 2, 1, 1);
  StackConstants latest = StackConstantsFor(StackGeneration::k2602);
  latest.host_op_s = 25e-6;  // a data-set constant, pinned round
  latest.step_host_s = 0;    // likewise, at zero
  Knobs graphs;
  graphs.overlap.ep_comm = false;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, latest, graphs), 0.1972, 1e-12);
  // Without CUDA graphs the attention (12 kernels) and the fused router +
  // flex preprocess (17) run eagerly: (12 + 17) x 3 passes x 3 us = 261 us
  // per layer, added to the GPU time (the MoE token-count sync):
  // 8 x (2 x (9 + 1.825 + 0.261) + 3) = 201.376 ms.
  Knobs eager = graphs;
  eager.cuda_graphs = false;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, latest, eager), 0.201376, 1e-12);
  // 26.06 hides the MoE host time behind the other micro-batch's compute
  // under the EP-overlap schedule (168 ms, MoeHostTimePerGeneration) only
  // with CUDA graphs: eager, the one CPU issues both micro-batches' ops and
  // the host time adds as in 26.02: 201.376 ms.
  StackConstants g2606 = PublishedRecipeStack(StackGeneration::k2606);
  g2606.host_op_s = 25e-6;
  g2606.step_host_s = 0;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, g2606, graphs), 0.168, 1e-12);
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, g2606, eager), 0.201376, 1e-12);
  // Without --moe-router-fusion the router has 72 kernels, 41 more:
  // + 8 x 2 x 41 x 3 x 3 us = 5.904 ms.
  StackConstants no_router_fusion = latest;
  no_router_fusion.features.router_fusion = false;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, no_router_fusion, eager),
              0.20728, 1e-12);
  // Without NUMA binding every host op takes 1.5x: 8 x (2 x (9 + 1.5 x
  // (1.825 + 0.261)) + 3) = 218.064 ms.
  StackConstants unbound = latest;
  unbound.features.cpu_numa_binding = false;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, unbound, eager), 0.218064, 1e-12);
  // NCCL all-to-all under CUDA graphs: its preprocess (12 ops) stays on the
  // host, 12 x 3 x 3 us = 108 us, and it permutes four times instead of
  // twice: 2 x 3 x 3 us = 18 us (its global permute's HBM traffic is free
  // in the unit model): 8 x (2 x (9 + 1.825 + 0.126) + 3) = 199.216 ms.
  Knobs a2a = graphs;
  a2a.dispatcher = Dispatcher::kAllToAll;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, latest, a2a), 0.199216, 1e-12);
  // MXFP8 (on a Blackwell cluster) without the fused allocation: each
  // quantization makes four torch.empty/zeros calls (4 x 3 us; launches
  // free), for the fc1 and fc2 inputs of 4 local experts, x 3 passes:
  // 2 x 4 x 3 x 12 us = 288 us per layer: + 8 x 2 x 0.288 = 4.608 ms over
  // the latest stack (the graphed parts have no host work).
  Knobs mxfp8 = graphs;
  mxfp8.precision = Precision::kMxfp8;
  StackConstants unfused_alloc = latest;
  unfused_alloc.features.mxfp8_fused_allocation = false;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "gb200-nvl72", ep2, unfused_alloc, mxfp8) -
                  MoeStepSecondsWith(TinyMoe(), "gb200-nvl72", ep2, latest, mxfp8),
              0.004608, 1e-12);
}

TEST(StepModelByHandTest, RejectedMoeHostFormsByHand) {
  // The study forms of StackConstants::MoeHostForm, on the eager TinyMoe of
  // MegatronFeaturesOnTheHost (26.02, EP 2): per layer and micro-batch 9 ms
  // of compute, 1.825 ms of the experts' host work and 0.261 ms of eager
  // ops; 3 ms per micro-batch outside the layers; 8 micro-batches. EP
  // overlap off (its schedule's host work is priced apart from the forms).
  const ParallelConfig ep2 = Layout(1, 1, 1, 2, 1, 1);
  StackConstants s = StackConstantsFor(StackGeneration::k2602);
  s.host_op_s = 25e-6;
  s.step_host_s = 0;
  Knobs eager;
  eager.cuda_graphs = false;
  eager.overlap.ep_comm = false;
  using Form = StackConstants::MoeHostForm;
  ASSERT_EQ(s.moe_host_form, Form::kAdditive);
  // Additive (shipped): 8 x (2 x (9 + 1.825 + 0.261) + 3) = 201.376 ms.
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, s, eager), 0.201376, 1e-12);
  // The eager ops hidden behind the 9 ms: 8 x (2 x (9 + 1.825) + 3) = 197.2.
  s.moe_host_form = Form::kUngraphedRunsAhead;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, s, eager), 0.1972, 1e-12);
  // Backward's two thirds of the experts' host work (1.216667 ms) hidden
  // behind backward's 6 ms, the eager ops behind the compute left: the
  // forward third, 0.608333 ms, shows: 8 x (2 x 9.608333 + 3) = 177.7333.
  s.moe_host_form = Form::kBackwardRunsAhead;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, s, eager),
              0.008 * (2 * (9 + 1.825 / 3) + 3), 1e-12);
  // max(1.825 + 0.261, 9) = 9: 8 x (2 x 9 + 3) = 168 ms.
  s.moe_host_form = Form::kMaxHostCompute;
  EXPECT_NEAR(MoeStepSecondsWith(TinyMoe(), "h100-sxm", ep2, s, eager), 0.168, 1e-12);
}

TEST(StepModelRelativeTest, DeepEpOnMultiNodeNvlinkIsSlowerThanHybridEp) {
  // EP 32 inside one NVL72 domain: DeepEP's MNNVL ceilings (400 GB/s
  // dispatch, 190 GB/s combine) below the prior's ~630 GB/s make the EP
  // time longer than HybridEP's; on HGX H100 (EP 8 in one 8-GPU node) the
  // backend does not matter.
  const ModelSpec m = Preset("deepseek-v3");
  auto ep_seconds = [&](const char* cluster, int gpus, int ep,
                        MegatronFeatures::FlexBackend backend) {
    const ClusterSpec c = Cluster(cluster);
    StackConstants s;
    s.features.flex_backend = backend;
    absl::StatusOr<StepModel> sm = StepModel::Create(
        m, c, {gpus, 4096, 2048}, std::make_shared<DatasheetCostModel>(c), s);
    EXPECT_TRUE(sm.ok()) << sm.status();
    Knobs k;
    k.overlap.ep_comm = false;
    k.recompute.mode = RecomputeMode::kFull;
    ParallelConfig p = Layout(1, 8, 1, ep, 1, 1);
    absl::StatusOr<Prediction> pr = sm->Predict(p, k);
    EXPECT_TRUE(pr.ok()) << pr.status();
    double t = 0;
    for (const Term& term : pr->breakdown) {
      if (term.name == "ep.dispatch_combine.exposed") t += term.seconds;
    }
    return t;
  };
  using Backend = MegatronFeatures::FlexBackend;
  const double deepep = ep_seconds("gb200-nvl72", 256, 32, Backend::kDeepEp);
  const double hybridep = ep_seconds("gb200-nvl72", 256, 32, Backend::kHybridEp);
  EXPECT_GT(hybridep, 0);
  EXPECT_GT(deepep, 1.5 * hybridep);
  EXPECT_DOUBLE_EQ(ep_seconds("h100-sxm", 256, 8, Backend::kDeepEp),
                   ep_seconds("h100-sxm", 256, 8, Backend::kHybridEp));
}

TEST(StepModelRelativeTest, DeepEpSmsScaleItsMnnvlCeilings) {
  // DeepSeek-V3, EP 32 inside one NVL72 domain, BF16, DeepEP: the EP time
  // is bytes x (1 / dispatch rate + 3 / combine rate) (dispatch + combine
  // forward, 2 combines backward; the same bytes per token in BF16), both
  // rates at DeepEP's ceilings. 24 SMs: the guide's 400 / 190 GB/s. 32
  // SMs: x 502.84 / 450.22 (BF16 dispatch) and x 207.10 / 163.62 (combine),
  // DeepEP's GB200 24-rank table: 446.75 / 240.49 GB/s. Ratio
  // (1/446.75 + 3/240.49) / (1/400 + 3/190) = 0.8044 (the per-transfer
  // latency, microseconds against milliseconds, moves it < 0.1%).
  const ModelSpec m = Preset("deepseek-v3");
  const ClusterSpec c = Cluster("gb200-nvl72");
  auto ep_seconds = [&](int sms) {
    StackConstants s;
    s.features.flex_backend = MegatronFeatures::FlexBackend::kDeepEp;
    s.features.deepep_num_sms = sms;
    absl::StatusOr<StepModel> sm = StepModel::Create(
        m, c, {256, 4096, 2048}, std::make_shared<DatasheetCostModel>(c), s);
    EXPECT_TRUE(sm.ok()) << sm.status();
    Knobs k;
    k.overlap.ep_comm = false;
    k.recompute.mode = RecomputeMode::kFull;
    absl::StatusOr<Prediction> pr = sm->Predict(Layout(1, 8, 1, 32, 1, 1), k);
    EXPECT_TRUE(pr.ok()) << pr.status();
    double t = 0;
    for (const Term& term : pr->breakdown) {
      if (term.name == "ep.dispatch_combine.exposed") t += term.seconds;
    }
    return t;
  };
  const double t24 = ep_seconds(24);
  ASSERT_GT(t24, 0);
  EXPECT_NEAR(ep_seconds(32) / t24, 0.8044, 0.001);
  // Beyond the measured SM counts the rates are held (no extrapolation).
  EXPECT_DOUBLE_EQ(ep_seconds(48), ep_seconds(32));
}

TEST(StepModelByHandTest, LoraAdapterTraffic) {
  // TinyDense adapted linears, input + output widths per token: QKV 1,024
  // + 3,072, output projection 1,024 + 1,024, fc1 1,024 + 8,192, fc2 4,096
  // + 1,024 = 20,480 elements; x 6 passes x 2 bytes x 2,048 tokens =
  // 503,316,480 bytes per layer and micro-batch, 503.31648 us at 1 TB/s;
  // 4 layers x 8 micro-batches: 16.10612736 ms.
  const ClusterSpec c = Cluster("h100-sxm");
  TrainingShape lora{1, 2048, 8};
  lora.objective = Objective::kLora;
  absl::StatusOr<StepModel> sm = StepModel::Create(
      TinyDense(), c, lora, std::make_shared<UnitCostModel>(c, 0.0, 1e12));
  ASSERT_TRUE(sm.ok()) << sm.status();
  absl::StatusOr<Prediction> pr = sm->Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(pr.ok()) << pr.status();
  double adapters = -1;
  for (const Term& t : pr->breakdown) {
    if (t.name == "lora.adapters") adapters = t.seconds;
  }
  EXPECT_NEAR(adapters, 0.01610612736, 1e-15);
  // Pretraining has no adapters.
  absl::StatusOr<StepModel> pre = StepModel::Create(
      TinyDense(), c, {1, 2048, 8}, std::make_shared<UnitCostModel>(c, 0.0, 1e12));
  ASSERT_TRUE(pre.ok()) << pre.status();
  absl::StatusOr<Prediction> pp = pre->Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(pp.ok()) << pp.status();
  for (const Term& t : pp->breakdown) EXPECT_NE(t.name, "lora.adapters");
}

TEST(StepModelTest, PredictionCarriesAnInterval) {
  // A dense model with the stack's defaults: the dense-row interval
  // (planner/prediction_interval.h) around the prediction; CUDA graphs off
  // is a setting no published row measured: the wider one, naming it.
  const StepModel sm = Make(TinyDense(), "h100-sxm", {8, 2048, 64});
  absl::StatusOr<Prediction> p = sm.Predict(Layout(1, 1, 1, 1, 1, 1), Knobs{});
  ASSERT_TRUE(p.ok());
  const IntervalTable& t = ShippedIntervalTable();
  EXPECT_DOUBLE_EQ(p->interval.coverage, 0.8);
  EXPECT_DOUBLE_EQ(p->interval.tokens_per_sec_per_gpu_low,
                   p->tokens_per_sec_per_gpu / (1 + t.dense.q90));
  EXPECT_DOUBLE_EQ(p->interval.tokens_per_sec_per_gpu_high,
                   p->tokens_per_sec_per_gpu / (1 + t.dense.q10));
  Knobs eager;
  eager.cuda_graphs = false;
  absl::StatusOr<Prediction> e = sm.Predict(Layout(1, 1, 1, 1, 1, 1), eager);
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->interval.unmeasured, ::testing::ElementsAre("cuda_graphs off"));
  // Never narrower than the class's on either side (IntervalFor).
  EXPECT_DOUBLE_EQ(e->interval.tokens_per_sec_per_gpu_high,
                   e->tokens_per_sec_per_gpu / (1 + std::min(t.unmeasured.q10, t.dense.q10)));
}

TEST(StepModelByHandTest, HierarchicalDataParallelCollective) {
  // All-gather of 8 GB over 16 ranks on two h100-sxm nodes (NVLink 450 GB/s
  // x 0.78, 3 us steps; NIC 50 GB/s x 0.8, 5 us steps; 2 log2(16) = 8
  // steps). One rank per node: the flat scale-out cost, 8 x 5 us + 15/16 x
  // 8 GB / 40 GB/s = 187.54 ms. Eight per node: the NICs share the traffic,
  // 8 x 5 us + 15/16 x 1 GB / 40 GB/s = 23.48 ms, vs the NVLink hops
  // 8 x 3 us + 15/16 x 8 GB / 351 GB/s = 21.39 ms: 23.48 ms.
  const ClusterSpec c = Cluster("h100-sxm");
  const DatasheetCostModel cm(c);
  const double one = HierarchicalCollective(cm, CollectiveKind::kAllGather, 8e9, 16,
                                            LinkSpan::kScaleOut, 1).seconds;
  const double eight = HierarchicalCollective(cm, CollectiveKind::kAllGather, 8e9, 16,
                                              LinkSpan::kScaleOut, 8).seconds;
  EXPECT_NEAR(one * 1e3, 40e-3 + 15.0 / 16 * 8e9 / 40e9 * 1e3, 1e-9);
  EXPECT_NEAR(eight * 1e3, 40e-3 + 15.0 / 16 * 1e9 / 40e9 * 1e3, 1e-9);
  EXPECT_NEAR(eight * 1e3, 23.4775, 1e-4);
  // Inside one NVLink domain nothing changes.
  EXPECT_DOUBLE_EQ(HierarchicalCollective(cm, CollectiveKind::kAllGather, 8e9, 8,
                                          LinkSpan::kNvlinkDomain, 8).seconds,
                   cm.Collective(CollectiveKind::kAllGather, 8e9, 8,
                                 LinkSpan::kNvlinkDomain).seconds);
}

TEST(StepModelByHandTest, DataParallelOverlapWindow) {
  // dp 2 (2 GPUs): one reduce-scatter and one all-gather per step (1 ms
  // each when the collective costs 1 ms) hide behind one stage time
  // (51 ms): nothing exposed, 408 ms. Without DP overlap both are exposed:
  // 410 ms.
  EXPECT_NEAR(StepSeconds({2, 2048, 16}, Layout(1, 1, 1, 1, 1, 1), Knobs{}, 1.0), 0.408,
              1e-12);
  Knobs k;
  k.overlap.dp_comm = false;
  EXPECT_NEAR(StepSeconds({2, 2048, 16}, Layout(1, 1, 1, 1, 1, 1), k, 1.0), 0.410, 1e-12);
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

TEST(StepModelSlotsTest, HiddenTermsAreExactlyTheHiddenKinds) {
  // The fast path's slot table and prediction.h's IsHidden agree: checked
  // through a prediction that has every communication kind.
  const StepModel sm = Make(Preset("deepseek-v3"), "h100-sxm", {1024, 4096, 4096});
  Knobs k;
  k.precision = Precision::kFp8;
  k.offload_activations = true;
  k.offload_modules = kOffloadMoeAct;
  absl::StatusOr<Prediction> p = sm.Predict(Layout(2, 8, 2, 32, 2, 1), k);
  ASSERT_TRUE(p.ok()) << p.status();
  double exposed = 0;
  for (const Term& t : p->breakdown) {
    if (!IsHidden(t.kind)) exposed += t.seconds;
  }
  EXPECT_NEAR(exposed, p->step_time_s, 1e-9 * p->step_time_s);
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

TEST(StepModelPropertyTest, FiniteAndConsistentOverManyLayouts) {
  // Every preset on every cluster over a grid of layouts and knobs: each
  // answer is either a reason or finite, positive numbers whose exposed
  // terms add up to the step, and Quick agrees with Predict.
  int feasible = 0;
  for (const std::string& name : ModelPresetNames()) {
    const ModelSpec m = Preset(name.c_str());
    for (const char* cluster : {"h100-sxm", "gb200-nvl72"}) {
      const StepModel sm = Make(m, cluster, {256, 4096, 1024});
      for (int tp : {1, 2, 8}) {
        for (int pp : {1, 4}) {
          for (int vp : {1, 2}) {
            for (int ep : {1, 8, 32}) {
              for (int cp : {1, 2}) {
                for (bool full : {false, true}) {
                  ParallelConfig p = Layout(tp, pp, vp, ep, cp, 1);
                  Knobs k;
                  k.precision = Precision::kFp8;
                  if (full) k.recompute.mode = RecomputeMode::kFull;
                  const Estimate e = sm.Quick(p, k);
                  absl::StatusOr<Prediction> pr = sm.Predict(p, k);
                  if (e.reason != Infeasibility::kNone) {
                    EXPECT_FALSE(pr.ok()) << name << " " << ToString(p);
                    continue;
                  }
                  ASSERT_TRUE(pr.ok()) << name << " " << ToString(p) << ": " << pr.status();
                  ++feasible;
                  EXPECT_TRUE(std::isfinite(pr->step_time_s) && pr->step_time_s > 0)
                      << name << " " << ToString(p);
                  EXPECT_TRUE(std::isfinite(pr->peak_memory_bytes) &&
                              pr->peak_memory_bytes > 0);
                  EXPECT_EQ(e.step_time_s, pr->step_time_s);
                  double exposed = 0;
                  for (const Term& t : pr->breakdown) {
                    EXPECT_TRUE(std::isfinite(t.seconds) && t.seconds >= 0) << t.name;
                    if (!IsHidden(t.kind)) exposed += t.seconds;
                  }
                  EXPECT_NEAR(exposed, pr->step_time_s, 1e-9 * pr->step_time_s)
                      << name << " " << ToString(p);
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(feasible, 300);
}

// Relative property: a busier expert GPU (more routing imbalance) never
// finishes the step sooner, whatever hides behind its compute (host time,
// EP all-to-all, activation copies).
TEST(StepModelTest, MoreImbalanceIsNeverFaster) {
  const ModelSpec m = *LoadModelPreset("qwen3-30b-a3b");
  const ClusterSpec c = *LoadClusterPreset("h100-sxm");
  const StepModel sm = *StepModel::Create(m, c, {16, 4096, 256},
                                          std::make_shared<DatasheetCostModel>(c));
  ParallelConfig p;
  p.ep = 8;
  for (uint32_t offload : {0u, uint32_t{kOffloadExpertFc1 | kOffloadMoeAct}}) {
    for (bool graphs : {true, false}) {
      Knobs k;
      k.cuda_graphs = graphs;
      k.offload_activations = offload != 0;
      k.offload_modules = offload;
      double previous = 1e300;
      for (double imbalance : {1.0, 1.1, 1.25, 1.5, 2.0}) {
        k.moe_load_imbalance = imbalance;
        const Estimate e = sm.Quick(p, k);
        EXPECT_LE(e.tokens_per_sec_per_gpu, previous * (1 + 1e-12))
            << "imbalance " << imbalance << " offload " << offload << " graphs " << graphs;
        previous = e.tokens_per_sec_per_gpu;
      }
    }
  }
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

double TermSeconds(const Prediction& p, const std::string& name) {
  double s = 0;
  for (const Term& t : p.breakdown) {
    if (t.name == name) s += t.seconds;
  }
  return s;
}

// The mla_up_proj recompute (planner/internal/step_model_layers.h): on the
// GPU its re-run and restore copy add to the recompute term with or
// without CUDA graphs; its host work adds to the kernel-launch term only
// when attention is not captured (a graph replays the recompute with the
// attention backward). DeepSeek-V3 on 256 GB200, TP1 PP8 VP4 EP32 MBS1,
// MXFP8: 61 layers over 8 pipeline ranks (7-8 each), 2,048 / dp 32 = 64
// micro-batches, so the critical rank's at least 7 x 64 layer passes pay
// UpProjRecomputeHostSeconds (259.6 us at 4 us launches, bound) each
// without graphs: > 0.116 s.
TEST(StepModelTest, UpProjRecomputeAddsGpuAndUngraphedHostWork) {
  const StepModel sm = Make(Preset("deepseek-v3"), "gb200-nvl72", {256, 4096, 2048});
  const ParallelConfig p = Layout(1, 8, 4, 32, 1, 1);
  for (bool graphs : {false, true}) {
    Knobs k;
    k.precision = Precision::kMxfp8;
    k.cuda_graphs = graphs;
    k.recompute.mode = RecomputeMode::kSelective;
    k.recompute.modules = kRecomputeMlp;
    absl::StatusOr<Prediction> without = sm.Predict(p, k);
    k.recompute.modules = kRecomputeMlp | kRecomputeMlaUpProj;
    absl::StatusOr<Prediction> with = sm.Predict(p, k);
    ASSERT_TRUE(without.ok() && with.ok());
    EXPECT_GT(TermSeconds(*with, "recompute"), TermSeconds(*without, "recompute")) << graphs;
    EXPECT_GT(with->step_time_s, without->step_time_s) << graphs;
    const double host = TermSeconds(*with, "kernel_launches") -
                        TermSeconds(*without, "kernel_launches");
    if (graphs) {
      EXPECT_NEAR(host, 0.0, 1e-9);
    } else {
      EXPECT_GT(host, 7 * 64 * step_model_internal::UpProjRecomputeHostSeconds(4e-6, 1.0));
    }
  }
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

// BF16 Adam moments (Knobs::optimizer_states, step_model_terms.h AdamBytes)
// on MemoryByHand's one-GPU dense model: 132,644,864 parameters.
TEST(StepModelByHandTest, Bf16OptimizerStates) {
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  Knobs fp32;
  Knobs bf16;
  bf16.optimizer_states = OptimizerStates::kBf16Moments;
  absl::StatusOr<Prediction> a = sm.Predict(Layout(1, 1, 1, 1, 1, 1), fp32);
  absl::StatusOr<Prediction> b = sm.Predict(Layout(1, 1, 1, 1, 1, 1), bf16);
  ASSERT_TRUE(a.ok() && b.ok());
  // fp32 master weights + BF16 exp_avg and exp_avg_sq: 4 + 2 + 2 = 8 B,
  // 132,644,864 x 8 = 1,061,158,912 (fp32: x 12 = 1,591,738,368).
  EXPECT_EQ(a->memory.optimizer_bytes, 1591738368.0);
  EXPECT_EQ(b->memory.optimizer_bytes, 1061158912.0);
  // The gradient buffer is the same BF16 buffer either way.
  EXPECT_EQ(b->memory.grads_bytes, a->memory.grads_bytes);
  // The step is memory-bound over the shard (dp = 1: every parameter):
  // fp32 30 B + grad-norm 4 B = 34 B per parameter; BF16 moments read the
  // BF16 gradient in place (BF16 training): 20 + 4 = 24 B.
  const double fp32_s = TermSeconds(*a, "optimizer");
  const double bf16_s = TermSeconds(*b, "optimizer");
  ASSERT_GT(fp32_s, 0);
  EXPECT_NEAR(bf16_s / fp32_s, 24.0 / 34.0, 1e-9);
  // With an FP8 current-scaling recipe Megatron still copies the shard's
  // gradients to fp32 (use_precision_aware_optimizer_no_fp8_or_ds_fp8 is
  // false): 22 + 4 = 26 B against fp32's 34 B.
  Knobs fp8 = fp32;
  fp8.precision = Precision::kFp8;
  Knobs fp8_bf16 = fp8;
  fp8_bf16.optimizer_states = OptimizerStates::kBf16Moments;
  absl::StatusOr<Prediction> c = sm.Predict(Layout(1, 1, 1, 1, 1, 1), fp8);
  absl::StatusOr<Prediction> d = sm.Predict(Layout(1, 1, 1, 1, 1, 1), fp8_bf16);
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_NEAR(TermSeconds(*d, "optimizer") / TermSeconds(*c, "optimizer"), 26.0 / 34.0, 1e-9);
  EXPECT_LT(d->peak_memory_bytes, c->peak_memory_bytes);
}

TEST(AdamBytesTest, PerStatePrecision) {
  using step_model_internal::AdamBytes;
  EXPECT_EQ(AdamBytes(OptimizerStates::kFp32, Precision::kBf16).state, 12.0);
  EXPECT_EQ(AdamBytes(OptimizerStates::kFp32, Precision::kBf16).shard_main_grad, 4.0);
  EXPECT_EQ(AdamBytes(OptimizerStates::kBf16Moments, Precision::kBf16).state, 8.0);
  EXPECT_EQ(AdamBytes(OptimizerStates::kBf16Moments, Precision::kBf16).shard_main_grad, 0.0);
  EXPECT_EQ(AdamBytes(OptimizerStates::kBf16Moments, Precision::kMxfp8).shard_main_grad, 4.0);
  EXPECT_EQ(AdamBytes(OptimizerStates::kBf16Moments, Precision::kMxfp8).step_traffic, 22.0);
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

// Transformer Engine's layer-wise offload schedule (step_model_terms.h
// LayerOffloadExposedSeconds), the worked example of its comment and the
// two ends: no window (N = L - 1, every copy waited for) and copies short
// enough to hide.
TEST(LayerOffloadTest, ByHand) {
  using step_model_internal::LayerOffloadExposedSeconds;
  const double fwd[] = {1, 1, 1, 1}, bwd[] = {2, 2, 2, 2}, copy[] = {3, 3, 3, 3};
  // Forward 4 s (layer 2 waits 2..4, layer 3 5..7), backward 2 s.
  EXPECT_DOUBLE_EQ(LayerOffloadExposedSeconds(fwd, bwd, copy, 4, 2), 6.0);
  // L = 2, N = 1: layer 1's forward waits for copy 0 (1..4), layer 0's
  // backward for its reload (2..5): 3 + 3 s.
  EXPECT_DOUBLE_EQ(LayerOffloadExposedSeconds(fwd, bwd, copy, 2, 1), 6.0);
  const double quick[] = {0.5, 0.5, 0.5, 0.5};
  EXPECT_DOUBLE_EQ(LayerOffloadExposedSeconds(fwd, bwd, quick, 4, 2), 0.0);
  EXPECT_DOUBLE_EQ(LayerOffloadExposedSeconds(fwd, bwd, copy, 4, 0), 0.0);
}

// MemoryByHand's model on an h100-sxm whose host holds `host_bytes` per GPU.
absl::StatusOr<StepModel> TinyDenseWithHostMemory(double host_bytes) {
  ClusterSpec small = Cluster("h100-sxm");
  small.host_memory_bytes_per_gpu = host_bytes;
  return StepModel::Create(TinyDense(), small, {1, 2048, 8},
                           std::make_shared<DatasheetCostModel>(small));
}

// MemoryByHand's one-GPU dense model (4 layers of 83,886,080 B of BF16
// activations each) with its first two layers offloaded: two layers' worth
// leave the GPU; each one-way copy takes 83,886,080 B / (63 GB/s x 0.85,
// h100-sxm's PCIe host link at the Hopper prior's efficiency) = 1.5665 ms,
// two layers x two directions x 8 micro-batches of copies, exposed or
// hidden, and the step grows by exactly the exposed part.
TEST(StepModelByHandTest, LayerOffload) {
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  Knobs base;
  base.cuda_graphs = false;  // Megatron runs layer-wise offload without them
  Knobs off = base;
  off.offload_layers = 2;
  absl::StatusOr<Prediction> a = sm.Predict(Layout(1, 1, 1, 1, 1, 1), base);
  absl::StatusOr<Prediction> b = sm.Predict(Layout(1, 1, 1, 1, 1, 1), off);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->memory.activations_bytes, 4 * 83886080.0 + 262144000.0);
  EXPECT_EQ(b->memory.activations_bytes, 2 * 83886080.0 + 262144000.0);
  const double copy_s = 83886080.0 / (63e9 * 0.85);
  EXPECT_NEAR(TermSeconds(*b, "offload.exposed") + TermSeconds(*b, "offload.hidden"),
              8 * 2 * 2 * copy_s, 1e-12);
  EXPECT_EQ(TermSeconds(*a, "offload.exposed") + TermSeconds(*a, "offload.hidden"), 0.0);
  EXPECT_NEAR(b->step_time_s - a->step_time_s, TermSeconds(*b, "offload.exposed"), 1e-12);
  // The pp = 1 rank's only window is the other two layers' compute.
  EXPECT_GE(TermSeconds(*b, "offload.exposed"), 0.0);
  EXPECT_EQ(b->host_offload_bytes, 2 * 83886080.0);
  EXPECT_EQ(a->host_offload_bytes, 0.0);

  // The offloaded layers must fit the host memory per GPU: 100 MB holds one
  // layer's 83,886,080 B, not two.
  absl::StatusOr<StepModel> tight = TinyDenseWithHostMemory(100e6);
  ASSERT_TRUE(tight.ok()) << tight.status();
  Knobs one = off;
  one.offload_layers = 1;
  EXPECT_TRUE(tight->Predict(Layout(1, 1, 1, 1, 1, 1), one).ok());
  EXPECT_THAT(tight->Predict(Layout(1, 1, 1, 1, 1, 1), off),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("offloaded activations and optimizer state exceed the host "
                                 "memory per GPU")));
  EXPECT_EQ(tight->Quick(Layout(1, 1, 1, 1, 1, 1), off).reason,
            Infeasibility::kHostMemoryExceeded);
}

// Fine-grained offload on MemoryByHand's model (hidden 1,024, 8 heads of
// 128, 4 layers, 2,048 tokens, one micro-batch in flight at pp 1): the two
// norm inputs move 2 x 1,024 x 2 B per token = 8,388,608 B a layer, 4
// layers 33,554,432 B; core_attn moves q, k, v and the output, 4 x 1,024 x
// 2 B per token, 67,108,864 B. The same bytes leave HBM and fill the host,
// which must hold them.
TEST(StepModelByHandTest, FineGrainedOffloadHostMemory) {
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  Knobs base;
  Knobs norms = base;
  norms.offload_activations = true;
  norms.offload_modules = kOffloadAttnNorm | kOffloadMlpNorm;
  Knobs attn = norms;
  attn.offload_modules = kOffloadCoreAttn;
  absl::StatusOr<Prediction> a = sm.Predict(Layout(1, 1, 1, 1, 1, 1), base);
  absl::StatusOr<Prediction> n = sm.Predict(Layout(1, 1, 1, 1, 1, 1), norms);
  absl::StatusOr<Prediction> c = sm.Predict(Layout(1, 1, 1, 1, 1, 1), attn);
  ASSERT_TRUE(a.ok() && n.ok() && c.ok()) << a.status() << n.status() << c.status();
  EXPECT_EQ(a->host_offload_bytes, 0.0);
  EXPECT_EQ(n->host_offload_bytes, 33554432.0);
  EXPECT_EQ(c->host_offload_bytes, 67108864.0);
  EXPECT_EQ(a->memory.activations_bytes - n->memory.activations_bytes, 33554432.0);
  EXPECT_EQ(a->memory.activations_bytes - c->memory.activations_bytes, 67108864.0);

  absl::StatusOr<StepModel> tight = TinyDenseWithHostMemory(50e6);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_TRUE(tight->Predict(Layout(1, 1, 1, 1, 1, 1), norms).ok());
  EXPECT_THAT(tight->Predict(Layout(1, 1, 1, 1, 1, 1), attn),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("offloaded activations and optimizer state exceed the host "
                                 "memory per GPU")));
  EXPECT_EQ(tight->Quick(Layout(1, 1, 1, 1, 1, 1), attn).reason,
            Infeasibility::kHostMemoryExceeded);
}

// Optimizer-state CPU offload on MemoryByHand's one-GPU model (dp 1: the
// shard is every parameter, P = the fp32 state's bytes / 12). Half offloaded:
// the GPU keeps half the state, the host holds 0.5 P x 16 B (fp32 weight,
// gradient, two moments); the step adds, one after the other, the
// gradients' copy (0.5 P x 4 B) and the weights' (0.5 P x 4 B) over the host
// link, 63 GB/s x 0.85 (h100-sxm's PCIe at the Hopper prior's efficiency),
// and CPU AdamW's 0.5 P x 28 B at 20 GB/s, less the GPU Adam work it no
// longer does; with the overlap only the largest of the three, the CPU's,
// so the two copies are what the overlap saves.
TEST(StepModelByHandTest, OptimizerOffloadByHand) {
  const StepModel sm = Make(TinyDense(), "h100-sxm", {1, 2048, 8});
  Knobs base;
  Knobs half = base;
  half.optimizer_offload_fraction = 0.5;
  Knobs overlap = half;
  overlap.optimizer_offload_overlap = true;
  absl::StatusOr<Prediction> a = sm.Predict(Layout(1, 1, 1, 1, 1, 1), base);
  absl::StatusOr<Prediction> h = sm.Predict(Layout(1, 1, 1, 1, 1, 1), half);
  absl::StatusOr<Prediction> o = sm.Predict(Layout(1, 1, 1, 1, 1, 1), overlap);
  ASSERT_TRUE(a.ok() && h.ok() && o.ok()) << a.status() << h.status() << o.status();
  const double params = a->memory.optimizer_bytes / 12.0;
  EXPECT_GT(params, 1e7);
  EXPECT_DOUBLE_EQ(h->memory.optimizer_bytes, 0.5 * a->memory.optimizer_bytes);
  EXPECT_DOUBLE_EQ(h->host_offload_bytes, 0.5 * params * 16.0);
  EXPECT_EQ(a->host_offload_bytes, 0.0);
  const double copy_s = 0.5 * params * 4.0 / (63e9 * 0.85);
  const double cpu_s = 0.5 * params * 28.0 / 20e9;
  EXPECT_NEAR(h->step_time_s - o->step_time_s, 2.0 * copy_s, 1e-12);
  // The GPU's FusedAdam saving is HBM-bound and small beside the host's time.
  const double added_s = h->step_time_s - a->step_time_s;
  EXPECT_LE(added_s, 2.0 * copy_s + cpu_s + 1e-12);
  EXPECT_GT(added_s, 0.99 * (2.0 * copy_s + cpu_s));
  // A host too small for the offloaded state refuses the plan by name.
  absl::StatusOr<StepModel> tight = TinyDenseWithHostMemory(0.25 * params * 16.0);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_THAT(tight->Predict(Layout(1, 1, 1, 1, 1, 1), half),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer state exceed the host memory per GPU")));
}

}  // namespace
}  // namespace moetune::planner
