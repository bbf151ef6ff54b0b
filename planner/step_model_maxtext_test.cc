// The MaxText terms of the step model (planner/step_model_maxtext.cc), by
// hand: a tiny MoE model under a cost model with round numbers, so every
// expected value below is a short sum a reviewer can redo.
#include <algorithm>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/step_model.h"
#include "planner/internal/step_model_maxtext.h"

namespace moetune::planner {
namespace {

// 2 MoE layers, h 1024, 8 heads of 128 (q, k, v, o: 4 x 1024^2 =
// 4,194,304 parameters), 8 routed experts, top-2, expert ffn 512 (SwiGLU:
// 3 x 1024 x 512 = 1,572,864 per expert), vocab 32,000.
ModelSpec TinyMoe() {
  ModelSpec m;
  m.name = "tiny-moe";
  m.model_type = "native";
  m.num_layers = 2;
  m.hidden_size = 1024;
  m.vocab_size = 32000;
  m.num_attention_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.v_head_dim = 128;
  m.ffn_hidden_size = 4096;
  m.num_routed_experts = 8;
  m.moe_top_k = 2;
  m.moe_ffn_hidden_size = 512;
  return m;
}

// Round costs: every dense GEMM 1 ms, every grouped GEMM 2 ms, attention
// and memory-bound kernels free, collectives bytes / 1 TB/s inside an
// NVLink domain (10x slower across), de-duplicated dispatch tokens x top_k
// x bytes per token / 2 TB/s, host copies bytes / 100 GB/s.
class RoundCostModel : public CostModel {
 public:
  explicit RoundCostModel(ClusterSpec c) : cluster_(std::move(c)) {}
  const ClusterSpec& cluster() const override { return cluster_; }
  Cost DenseGemm(double, double, double, Precision) const override { return {1e-3}; }
  Cost GroupedGemm(const GroupedGemmShape&) const override { return {2e-3}; }
  Cost AttentionForward(const AttentionShape&) const override { return {}; }
  Cost AttentionBackward(const AttentionShape&) const override { return {}; }
  Cost MemoryBound(double) const override { return {}; }
  Cost Collective(CollectiveKind, double bytes, int n, LinkSpan span) const override {
    if (n <= 1) return {};
    return {bytes / (span == LinkSpan::kNvlinkDomain ? 1e12 : 1e11)};
  }
  Cost Dispatch(const DispatchShape& d) const override {
    return {d.tokens * d.top_k * d.bytes_per_token / 2e12};
  }
  Cost HostOffload(double bytes) const override { return {bytes / 1e11}; }
  double OverlapSlowdown(int) const override { return 1.0; }
  double KernelLaunchSeconds(bool) const override { return 0.0; }

 private:
  ClusterSpec cluster_;
};

// 8 GPUs of one GB200 NVL72 domain (or of domains of nvlink_domain_gpus
// when given), seq 1,024, 8 sequences: with mbs 1, dp 8, one micro-batch
// per step; ep 4: 1,024 tokens per GPU.
StepModel Make(const StackConstants& stack, int nvlink_domain_gpus = 0) {
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
  EXPECT_TRUE(c.ok()) << c.status();
  if (nvlink_domain_gpus > 0) c->nvlink_domain_gpus = nvlink_domain_gpus;
  TrainingShape shape;
  shape.gpus = 8;
  shape.seq_len = 1024;
  shape.global_batch = 8;
  absl::StatusOr<StepModel> sm =
      StepModel::Create(TinyMoe(), *c, shape, std::make_shared<RoundCostModel>(*c), stack);
  EXPECT_TRUE(sm.ok()) << sm.status();
  return *std::move(sm);
}

ParallelConfig Layout(bool fsdp) {
  ParallelConfig p;
  p.ep = 4;
  p.mbs = 1;
  p.shard_params = fsdp;
  return p;
}

double Seconds(const Prediction& pr, const std::string& name) {
  double s = 0;
  for (const Term& t : pr.breakdown) {
    if (t.name == name) s += t.seconds;
  }
  return s;
}

Prediction PredictOrDie(const StepModel& sm, const ParallelConfig& p, const Knobs& k) {
  absl::StatusOr<Prediction> pr = sm.Predict(p, k);
  EXPECT_TRUE(pr.ok()) << pr.status();
  return pr.ok() ? *pr : Prediction();
}

TEST(MaxTextStackTest, FrameworkField) {
  EXPECT_EQ(MaxTextStackConstants().framework, Framework::kMaxText);
  EXPECT_EQ(StackConstants().framework, Framework::kMegatron);
  EXPECT_EQ(StackConstantsFor(StackGeneration::k2602).framework, Framework::kMegatron);
}

TEST(MaxTextTermsTest, SliceIsTheLargestDivisorInADomain) {
  EXPECT_EQ(step_model_internal::MaxTextSliceGpus(128, 72), 64);
  EXPECT_EQ(step_model_internal::MaxTextSliceGpus(1024, 72), 64);
  EXPECT_EQ(step_model_internal::MaxTextSliceGpus(8, 72), 8);
  EXPECT_EQ(step_model_internal::MaxTextSliceGpus(144, 72), 72);
  EXPECT_EQ(step_model_internal::MaxTextSliceGpus(96, 8), 8);
}

TEST(MaxTextTermsTest, OneShotRaggedAllToAllIsTheSendBufferAtItsRate) {
  EXPECT_NEAR(step_model_internal::MaxTextRaggedAllToAllOneShotSeconds(4194304, 16.42 * 1073741824.0),
              4194304 / 17630840750.08, 1e-15);  // 237.9 us
  EXPECT_EQ(step_model_internal::MaxTextRaggedAllToAllOneShotSeconds(4194304, 0), 0);
  // The published rate: 16.42 GiB/s per GPU (openxla/xla #33386).
  EXPECT_DOUBLE_EQ(MaxTextStackConstants().maxtext.ragged_a2a_one_shot_bytes_per_sec,
                   16.42 * 1073741824.0);
}

TEST(MaxTextTermsTest, RaggedAllToAllSendsEveryCopy) {
  const StackConstants stack = MaxTextStackConstants();
  Knobs k;
  k.dispatcher = Dispatcher::kAllToAll;
  k.overlap.num_comm_streams = 1;
  // Send buffer: 1,024 tokens x top-2 x 1,024 x 2 B = 4,194,304 B;
  // dispatch + combine forward and backward: 4 per layer, 2 layers, all
  // exposed (no shared experts to hide behind).
  const double send = 4194304;
  // EP 4 inside the NVLink domain: XLA's one-shot kernel, the whole send
  // buffer at 16.42 GiB/s = 237.9 us a call, 1.903 ms in all.
  const Prediction pr = PredictOrDie(Make(stack), Layout(false), k);
  EXPECT_NEAR(Seconds(pr, "ep.dispatch_combine.exposed"),
              2 * 4 * send / stack.maxtext.ragged_a2a_one_shot_bytes_per_sec, 1e-12);
  EXPECT_EQ(Seconds(pr, "ep.dispatch_combine.hidden"), 0);
  // One-shot kernel off (--xla_gpu_unsupported_use_ragged_all_to_all_
  // one_shot_kernel=false): the NCCL exchange, 4.194 us at 1 TB/s.
  StackConstants nccl = stack;
  nccl.maxtext.ragged_a2a_one_shot = false;
  EXPECT_NEAR(Seconds(PredictOrDie(Make(nccl), Layout(false), k), "ep.dispatch_combine.exposed"),
              2 * 4 * send / 1e12, 1e-12);
  // EP 4 across domains of 2 GPUs: no load/store access to every peer, so
  // NCCL over the scale-out network (the round model's 100 GB/s) whatever
  // the flag.
  EXPECT_NEAR(Seconds(PredictOrDie(Make(stack, 2), Layout(false), k), "ep.dispatch_combine.exposed"),
              2 * 4 * send / 1e11, 1e-12);
}

TEST(MaxTextTermsTest, NcclEpUsesTheDedupDispatch) {
  const StepModel sm = Make(MaxTextStackConstants());
  Knobs k;
  k.dispatcher = Dispatcher::kFusedDedup;
  // One collective stream, so no gradient all-reduce runs beside it.
  k.overlap.num_comm_streams = 1;
  // The cost model's Dispatch: 1,024 x 2 x 2,048 B / 2 TB/s = 2.097 us,
  // 4 per layer, 2 layers.
  const Prediction pr = PredictOrDie(sm, Layout(false), k);
  EXPECT_NEAR(Seconds(pr, "ep.dispatch_combine.exposed"), 2 * 4 * 1024 * 2 * 2048 / 2e12, 1e-12);
}

TEST(MaxTextTermsTest, LinkContentionByHand) {
  using step_model_internal::MaxTextLinkContentionSeconds;
  // 1 s of EP on the link; FSDP in flight 2 of 8 s, holding the link 0.5
  // of that time (u = 1/4): the exchange at 3/4 of its rate for 1/4 of its
  // time: 1 x 1/4 x (4/3 - 1) = 1/12 s.
  EXPECT_NEAR(MaxTextLinkContentionSeconds(1.0, 2.0, 0.5, 8.0), 1.0 / 12, 1e-15);
  // FSDP link-bound (u = 1): a fair share, half the rate: 1 x 1/4 x 1.
  EXPECT_NEAR(MaxTextLinkContentionSeconds(1.0, 2.0, 2.0, 8.0), 0.25, 1e-15);
  // In flight longer than the window: the whole exchange overlapped.
  EXPECT_NEAR(MaxTextLinkContentionSeconds(1.0, 10.0, 10.0, 8.0), 1.0, 1e-15);
  // FSDP not on the exchange's link, or nothing in flight: none.
  EXPECT_EQ(MaxTextLinkContentionSeconds(1.0, 2.0, 0.0, 8.0), 0);
  EXPECT_EQ(MaxTextLinkContentionSeconds(1.0, 0.0, 0.0, 8.0), 0);
}

TEST(MaxTextTermsTest, NcclEpSharesNvlinkWithTheGradientAllReduce) {
  const StepModel sm = Make(MaxTextStackConstants());
  Knobs k;
  k.dispatcher = Dispatcher::kFusedDedup;
  k.overlap.num_comm_streams = 1;
  const Prediction one = PredictOrDie(sm, Layout(false), k);
  k.overlap.num_comm_streams = 2;
  const Prediction multi = PredictOrDie(sm, Layout(false), k);
  // dp 8 inside one NVLink domain: the gradient all-reduce holds NVLink all
  // the time it is in flight (u = 1, a fair share). The layers cost the
  // same with 1 or 2 streams (NCCL EP is never hidden), so the busy window
  // is one's step less its exposed all-reduce and optimizer; the extra EP
  // time = EP x min(1, all-reduce / busy) x 1.
  const double ep = Seconds(one, "ep.dispatch_combine.exposed");
  const double ar = Seconds(multi, "dp.grads_params.exposed") +
                    Seconds(multi, "dp.grads_params.hidden");
  const double busy = one.step_time_s - Seconds(one, "dp.grads_params.exposed") -
                      Seconds(one, "optimizer");
  EXPECT_GT(ar, 0);
  EXPECT_NEAR(Seconds(multi, "ep.dispatch_combine.exposed") - ep, ep * std::min(1.0, ar / busy),
              1e-12);
  // XLA's one-shot ragged all-to-all (~2% of NVLink) is not slowed.
  k.dispatcher = Dispatcher::kAllToAll;
  k.overlap.ep_comm = false;
  const Prediction a2a_multi = PredictOrDie(sm, Layout(false), k);
  k.overlap.num_comm_streams = 1;
  const Prediction a2a_one = PredictOrDie(sm, Layout(false), k);
  EXPECT_NEAR(Seconds(a2a_multi, "ep.dispatch_combine.exposed"),
              Seconds(a2a_one, "ep.dispatch_combine.exposed"), 1e-15);
}

TEST(MaxTextTermsTest, RaggedDotIsTheGroupedGemmTimesItsRatio) {
  const StackConstants stack = MaxTextStackConstants();
  ASSERT_FALSE(stack.maxtext.ragged_dot_wgrad_expanded);
  const StepModel sm = Make(stack);
  Knobs k;
  // Grouped GEMMs fc1 and fc2 at 2 ms, x 3 passes, 2 layers: 24 ms.
  k.grouped_gemm = true;
  EXPECT_NEAR(Seconds(PredictOrDie(sm, Layout(false), k), "moe.routed_experts"), 24e-3, 1e-12);
  // All three passes as ragged dots: 24 ms x the ratio.
  k.grouped_gemm = false;
  EXPECT_NEAR(Seconds(PredictOrDie(sm, Layout(false), k), "moe.routed_experts"),
              24e-3 * stack.maxtext.ragged_dot_time_ratio, 1e-12);
  // Upstream's lowering: forward and input gradient as ragged dots, 2 GEMMs
  // x 2 passes x 2 ms x the ratio x 2 layers; weight gradients by XLA's
  // expansion: 8 / ep = 2 local experts x 2 dense GEMMs (1 ms each) per
  // layer.
  StackConstants expanded = stack;
  expanded.maxtext.ragged_dot_wgrad_expanded = true;
  EXPECT_NEAR(Seconds(PredictOrDie(Make(expanded), Layout(false), k), "moe.routed_experts"),
              16e-3 * stack.maxtext.ragged_dot_time_ratio + 2 * 2 * 2e-3, 1e-12);
}

// DenseGemm at 1 PFLOP/s (2 m n k / 1e15 s) and grouped GEMMs free, so the
// routed-experts term is XLA's expansion of the ragged_dot weight gradients
// alone and its seconds are its FLOPs / 1e15.
class DenseFlopCostModel : public RoundCostModel {
 public:
  using RoundCostModel::RoundCostModel;
  Cost DenseGemm(double m, double n, double k, Precision) const override {
    return {2.0 * m * n * k / 1e15};
  }
  Cost GroupedGemm(const GroupedGemmShape&) const override { return {}; }
};

TEST(MaxTextTermsTest, RaggedDotWgradExpansionIsGDenseGemmsOverEveryBufferRow) {
  // RaggedDotRewriter (kRaggedContracting): both operands broadcast to one
  // masked copy per local expert, one dense dot per expert over all M rows
  // of the buffer. 8 experts / ep 4 = 2 local experts; M = 1,024 tokens x
  // top-2 = 2,048 rows; per expert fc1 2 x 1,024 x (2 x 512) x 2,048 =
  // 4,294,967,296 FLOPs and fc2 2 x 512 x 1,024 x 2,048 = 2,147,483,648:
  // 2 experts x 6,442,450,944 x 2 layers = 25,769,803,776 FLOPs, twice the
  // 12,884,901,888 a grouped GEMM over the same rows does.
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
  ASSERT_TRUE(c.ok()) << c.status();
  TrainingShape shape;
  shape.gpus = 8;
  shape.seq_len = 1024;
  shape.global_batch = 8;
  StackConstants expanded = MaxTextStackConstants();
  expanded.maxtext.ragged_dot_wgrad_expanded = true;
  absl::StatusOr<StepModel> sm = StepModel::Create(
      TinyMoe(), *c, shape, std::make_shared<DenseFlopCostModel>(*c), expanded);
  ASSERT_TRUE(sm.ok()) << sm.status();
  Knobs k;
  k.grouped_gemm = false;
  EXPECT_NEAR(Seconds(PredictOrDie(*sm, Layout(false), k), "moe.routed_experts"),
              25769803776.0 / 1e15, 1e-15);
  // The buffer is one static shape, sized for the busiest GPU's rows
  // (imbalance 1.5: 3,072 rows): every GPU's expansion runs over all of it.
  k.moe_load_imbalance = 1.5;
  EXPECT_NEAR(Seconds(PredictOrDie(*sm, Layout(false), k), "moe.routed_experts"),
              1.5 * 25769803776.0 / 1e15, 1e-15);
}

TEST(MaxTextTermsTest, RaggedDotWgradExpansionHoldsItsMaskedOperands) {
  // The expansion materialises fc1's masked operands [g, M, h] and [g, M,
  // 2 fe]: 2 local experts x 2,048 rows x (1,024 + 1,024) x 2 B =
  // 16,777,216 bytes more at the peak; none without the expansion or with
  // TE's grouped GEMM.
  StackConstants expanded = MaxTextStackConstants();
  expanded.maxtext.ragged_dot_wgrad_expanded = true;
  Knobs k;
  k.grouped_gemm = false;
  const Prediction plain = PredictOrDie(Make(MaxTextStackConstants()), Layout(false), k);
  const Prediction masked = PredictOrDie(Make(expanded), Layout(false), k);
  EXPECT_NEAR(masked.memory.activations_bytes - plain.memory.activations_bytes, 16777216.0, 1e-3);
  k.grouped_gemm = true;
  EXPECT_DOUBLE_EQ(PredictOrDie(Make(expanded), Layout(false), k).memory.activations_bytes,
                   PredictOrDie(Make(MaxTextStackConstants()), Layout(false), k).memory.activations_bytes);
}

TEST(MaxTextTermsTest, NoPerExpertHostTime) {
  // Megatron prices the host ops of a dropless MoE layer (per local
  // expert); XLA runs a compiled step: kernel launches only (0 here).
  const StepModel sm = Make(MaxTextStackConstants());
  EXPECT_EQ(Seconds(PredictOrDie(sm, Layout(false), Knobs()), "kernel_launches"), 0);
}

TEST(MaxTextTermsTest, OffloadingMoeMlpwiRemovesTheirRecompute) {
  const StepModel sm = Make(MaxTextStackConstants());
  Knobs k;
  k.dispatcher = Dispatcher::kAllToAll;
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = kRecomputeMoe;
  // remat moe: both grouped GEMMs (2 x 2 ms) per layer, 2 layers, as
  // recompute; the re-run dispatch (one one-shot call, 237.9 us) as EP
  // communication: 4 + 1 calls per layer.
  const double dispatch = 4194304 / MaxTextStackConstants().maxtext.ragged_a2a_one_shot_bytes_per_sec;
  const Prediction remat = PredictOrDie(sm, Layout(false), k);
  EXPECT_NEAR(Seconds(remat, "recompute"), 2 * 4e-3, 1e-12);
  EXPECT_NEAR(Seconds(remat, "ep.dispatch_combine.exposed"), 2 * 5 * dispatch, 1e-12);
  // moe_mlpwi_0/1 offloaded: the up-projection GEMM no longer re-runs; the
  // dispatch still does.
  k.offload_activations = true;
  k.offload_modules = kOffloadExpertFc1;
  const Prediction pr = PredictOrDie(sm, Layout(false), k);
  EXPECT_NEAR(Seconds(pr, "recompute"), 2 * 2e-3, 1e-12);
  EXPECT_NEAR(Seconds(pr, "ep.dispatch_combine.exposed"), 2 * 5 * dispatch, 1e-12);
  // Copies: 1,024 tokens x 2 x (2 x 512) x 2 B = 4 MiB each way per layer
  // at 100 GB/s = 41.9 us, hidden behind the layer's ~20 ms of compute.
  EXPECT_NEAR(Seconds(pr, "offload.hidden"), 2 * 2 * 4194304 / 1e11, 1e-12);
  EXPECT_EQ(Seconds(pr, "offload.exposed"), 0);
}

TEST(MaxTextTermsTest, OffloadExposedIsEachCopyBeyondItsWindow) {
  using step_model_internal::MaxTextOffloadExposedSeconds;
  // 5 ms copies: forward window 2 ms (3 ms exposed), backward 6 ms (none).
  EXPECT_NEAR(MaxTextOffloadExposedSeconds(5e-3, 2e-3, 6e-3), 3e-3, 1e-15);
  EXPECT_NEAR(MaxTextOffloadExposedSeconds(5e-3, 1e-3, 4e-3), 4e-3 + 1e-3, 1e-15);
  EXPECT_EQ(MaxTextOffloadExposedSeconds(5e-3, 5e-3, 5e-3), 0);
  // XLA's default: --xla_gpu_enable_pipelined_host_offloading=false.
  EXPECT_FALSE(MaxTextStackConstants().maxtext.pipelined_host_offloading);
}

// The round cost model with host copies at 1 GB/s, so that an offload
// copy outlasts its window.
class SlowHostCostModel : public RoundCostModel {
 public:
  using RoundCostModel::RoundCostModel;
  Cost HostOffload(double bytes) const override { return {bytes / 1e9}; }
};

TEST(MaxTextTermsTest, OffloadedMoeMlpwiOverlapOnlyTheirIteration) {
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
  ASSERT_TRUE(c.ok()) << c.status();
  TrainingShape shape;
  shape.gpus = 8;
  shape.seq_len = 1024;
  shape.global_batch = 8;
  auto make = [&](const StackConstants& stack) {
    absl::StatusOr<StepModel> sm =
        StepModel::Create(TinyMoe(), *c, shape, std::make_shared<SlowHostCostModel>(*c), stack);
    EXPECT_TRUE(sm.ok()) << sm.status();
    return *std::move(sm);
  };
  Knobs k;
  k.dispatcher = Dispatcher::kAllToAll;
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = kRecomputeMoe;
  k.offload_activations = true;
  k.offload_modules = kOffloadExpertFc1;
  const StackConstants stack = MaxTextStackConstants();
  const double dispatch = 4194304 / stack.maxtext.ragged_a2a_one_shot_bytes_per_sec;
  // Each copy: 4 MiB at 1 GB/s = 4.194 ms. Forward window: the wo GEMM
  // (2 ms) + the combine (one one-shot call, 237.9 us); no shared experts,
  // memory-bound kernels free. Backward window: what remat re-runs before
  // the routed experts, the dispatch (237.9 us; the wo GEMM re-run needs
  // the reloaded tensors). Per layer exposed: (4.194 - 2.238) + (4.194 -
  // 0.238) ms; 2 layers.
  const double copy = 4194304 / 1e9;
  const Prediction pr = PredictOrDie(make(stack), Layout(false), k);
  const double exposed = 2 * ((copy - 2e-3 - dispatch) + (copy - dispatch));
  EXPECT_NEAR(Seconds(pr, "offload.exposed"), exposed, 1e-12);
  EXPECT_NEAR(Seconds(pr, "offload.hidden"), 2 * 2 * copy - exposed, 1e-12);
  // With the pipelined host offloading each copy overlaps a whole layer's
  // work (1/3 forward, 2/3 backward): less exposed, the same bytes moved.
  StackConstants pipelined = stack;
  pipelined.maxtext.pipelined_host_offloading = true;
  const Prediction pp = PredictOrDie(make(pipelined), Layout(false), k);
  EXPECT_LT(Seconds(pp, "offload.exposed"), exposed);
  EXPECT_NEAR(Seconds(pp, "offload.exposed") + Seconds(pp, "offload.hidden"), 2 * 2 * copy, 1e-12);
}

TEST(MaxTextTermsTest, FsdpCollectivesAndTheirExposure) {
  const StepModel sm = Make(MaxTextStackConstants());
  // Parameters per GPU (pp 1): dense = 2 layers x (attention + router) /
  // tp + embedding + output layer; experts = 2 layers x 8 experts / ep.
  const double dense = 2 * (sm.layer_kind(2).params) + 2.0 * 32000 * 1024;
  const double expert = 2 * sm.layer_kind(2).expert_params / 4;
  EXPECT_EQ(sm.layer_kind(2).params, 4 * 1024.0 * 1024 + 1024 * 8);
  EXPECT_EQ(sm.layer_kind(2).expert_params, 8 * 3 * 1024.0 * 512);
  // Per micro-batch: all-gather forward and backward (2 B/param) and the
  // fp32 reduce-scatter (4 B/param): 8 B per parameter, both groups inside
  // the domain, at 1 TB/s.
  const double total = 8 * (dense + expert) / 1e12;
  Knobs k;
  k.overlap.dp_comm = false;
  Prediction off = PredictOrDie(sm, Layout(true), k);
  EXPECT_NEAR(Seconds(off, "dp.grads_params.exposed"), total, 1e-12);
  EXPECT_EQ(Seconds(off, "dp.grads_params.hidden"), 0);
  k.overlap.dp_comm = true;
  k.overlap.num_comm_streams = 1;
  Prediction one = PredictOrDie(sm, Layout(true), k);
  k.overlap.num_comm_streams = 2;
  Prediction multi = PredictOrDie(sm, Layout(true), k);
  for (const Prediction* pr : {&one, &multi}) {
    EXPECT_NEAR(Seconds(*pr, "dp.grads_params.exposed") + Seconds(*pr, "dp.grads_params.hidden"),
                total, 1e-12);
  }
  // One stream: hidden only behind the compute (the step's busy time minus
  // its EP exchange); several: behind the whole busy time.
  const double ep = Seconds(one, "ep.dispatch_combine.exposed");
  const double busy = one.step_time_s - Seconds(one, "dp.grads_params.exposed") -
                      Seconds(one, "optimizer");
  EXPECT_NEAR(Seconds(one, "dp.grads_params.exposed"), std::max(0.0, total - (busy - ep)), 1e-12);
  EXPECT_LE(Seconds(multi, "dp.grads_params.exposed"), Seconds(one, "dp.grads_params.exposed"));
}

TEST(MaxTextTermsTest, FsdpMemoryIsTheShardedState) {
  const StackConstants stack = MaxTextStackConstants();
  const StepModel sm = Make(stack);
  const double dense = 2 * (sm.layer_kind(2).params) + 2.0 * 32000 * 1024;
  const double expert = 2 * sm.layer_kind(2).expert_params / 4;
  // Dense weights sharded over dp 8, experts over dp / ep = 2.
  const double shard = dense / 8 + expert / 2;
  const Prediction pr = PredictOrDie(sm, Layout(true), Knobs());
  EXPECT_NEAR(pr.memory.optimizer_bytes, shard * 8, 1e-3);
  // fp32 master shard + 2 gathered layers in BF16 (one layer = all local
  // params / 2 layers).
  EXPECT_NEAR(pr.memory.weights_bytes, shard * 4 + 2 * (dense + expert) / 2 * 2, 1e-3);
  // fp32 gradient shard + one layer's full fp32 gradient.
  EXPECT_NEAR(pr.memory.grads_bytes, shard * 4 + (dense + expert) / 2 * 4, 1e-3);
}

TEST(MaxTextTermsTest, RaggedReceiveBufferWorstCaseOnlyWhenSet) {
  StackConstants worst = MaxTextStackConstants();
  worst.maxtext.ragged_buffers_worst_case = true;
  Knobs k;
  k.dispatcher = Dispatcher::kAllToAll;
  const Prediction routed = PredictOrDie(Make(MaxTextStackConstants()), Layout(false), k);
  const Prediction worst_case = PredictOrDie(Make(worst), Layout(false), k);
  // Rows: 1,024 tokens x top-2 x 1,024 x 2 B = 4 MiB; routed sizing: send
  // and receive buffer, 2 x; worst case: the send buffer plus an ep (4)
  // times larger receive buffer, 5 x.
  const double rows_bytes = 1024 * 2 * 1024 * 2.0;
  EXPECT_NEAR(worst_case.memory.comm_buffers_bytes - routed.memory.comm_buffers_bytes,
              (1 + 4 - 2) * rows_bytes, 1e-3);
  // The saved expert-side tensors (sorted inputs, moe_mlpwi_0/1, the
  // activation and the down-projection output) grow by the same 4 x.
  EXPECT_GT(worst_case.memory.activations_bytes, routed.memory.activations_bytes);
}

TEST(MaxTextTermsTest, QuickAgreesWithPredictAcrossKnobs) {
  // The search's path (one prepared layout, many knob settings, cached
  // lookups) must give what Predict gives for each setting.
  absl::StatusOr<ModelSpec> m = LoadModelPreset("deepseek-v3");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
  ASSERT_TRUE(c.ok()) << c.status();
  TrainingShape shape;
  shape.gpus = 128;
  shape.seq_len = 4096;
  shape.global_batch = 768;
  absl::StatusOr<StepModel> sm = StepModel::Create(
      *m, *c, shape, std::make_shared<DatasheetCostModel>(*c), MaxTextStackConstants());
  ASSERT_TRUE(sm.ok()) << sm.status();
  ParallelConfig p;
  p.ep = 8;
  p.mbs = 6;
  p.shard_params = true;
  StepModel::PreparedLayout prepared;
  sm->Prepare(p, &prepared);
  int checked = 0;
  for (Dispatcher d : {Dispatcher::kAllToAll, Dispatcher::kFusedDedup}) {
    for (bool grouped : {false, true}) {
      for (int streams : {1, 2}) {
        for (Precision pr : {Precision::kBf16, Precision::kMxfp8}) {
          for (bool offload : {false, true}) {
            Knobs k;
            k.dispatcher = d;
            k.grouped_gemm = grouped;
            k.overlap.num_comm_streams = streams;
            k.precision = pr;
            k.recompute.mode = RecomputeMode::kSelective;
            k.recompute.modules = kRecomputeMoe | kRecomputeCoreAttn;
            k.offload_activations = offload;
            k.offload_modules = offload ? kOffloadExpertFc1 : 0u;
            const Estimate e = sm->Quick(prepared, k);
            const Prediction full = PredictOrDie(*sm, p, k);
            EXPECT_EQ(e.reason, Infeasibility::kNone);
            EXPECT_DOUBLE_EQ(e.step_time_s, full.step_time_s);
            EXPECT_DOUBLE_EQ(e.peak_memory_bytes, full.peak_memory_bytes);
            // The breakdown's exposed terms sum to the step time.
            double exposed = 0;
            for (const Term& t : full.breakdown) {
              if (!IsHidden(t.kind)) exposed += t.seconds;
            }
            EXPECT_NEAR(exposed, full.step_time_s, 1e-9 * full.step_time_s);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 32);
}

}  // namespace
}  // namespace moetune::planner
