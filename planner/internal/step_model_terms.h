// Internal to the step model (planner/step_model*.cc, pipeline_stages.cc):
// the named constants, the breakdown slots, and the per-layout Context and
// per-layer-kind cost-model lookups (KindCosts) that the stage functions
// share. Not part of the planner's API.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/precision.h"
#include "planner/prediction.h"
#include "planner/step_model.h"
#include "planner/training_config.h"
#include "planner/units.h"

namespace moetune::planner::step_model_internal {

// ---------------------------------------------------------------------------
// Named constants of the step model (the cost model holds the hardware ones;
// StackConstants in step_model.h the software generation's).

// BF16 activations: 2 bytes per element.
inline constexpr double kActivationBytes = 2.0;
// The distributed Adam optimizer (Megatron-Core distrib_optimizer.py, TE
// FusedAdam), bytes per parameter of the data-parallel shard, by the
// precision of its state (OptimizerStates):
//   state            fp32 master weights + exp_avg + exp_avg_sq:
//                    fp32 4 + 4 + 4 = 12; BF16 moments 4 + 2 + 2 = 8
//                    (Megatron-LM docs, distributed optimizer).
//   shard_main_grad  the step's fp32 copy of the shard's gradients
//                    (shard_main_param.grad = shard_model_grad.float()): 4,
//                    or 0 where the precision-aware optimizer reads the BF16
//                    gradient buffer in place (decoupled_grad; Megatron-Core
//                    optimizer_config.py use_precision_aware_optimizer_no_fp8
//                    _or_ds_fp8: BF16 training, or FP8 delayed scaling,
//                    which moetune never emits -- its FP8 is current
//                    scaling; that, MXFP8 and NVFP4 still copy).
//   step_traffic     the step reads the gradient (4 fp32 copy, 2 in place)
//                    and master/m/v, writes master/m/v and the bf16 param
//                    (2): fp32 4 + 12 + 12 + 2 = 30; BF16 moments
//                    4 + 8 + 8 + 2 = 22, in place 20.
// The gradient buffer itself holds StackConstants::grad_buffer_bytes_per_param
// per local parameter.
struct AdamBytesPerParam {
  double state = 12.0;
  double shard_main_grad = 4.0;
  double step_traffic = 30.0;
};
inline AdamBytesPerParam AdamBytes(OptimizerStates states, Precision precision) {
  if (states == OptimizerStates::kFp32) return AdamBytesPerParam{};
  const bool in_place = precision == Precision::kBf16;
  return AdamBytesPerParam{8.0, in_place ? 0.0 : 4.0, in_place ? 20.0 : 22.0};
}
// Optimizer-state CPU offload (Knobs::optimizer_offload_fraction): PyTorch's
// CPU AdamW (HybridDeviceOptimizer's cpu_optimizer_cls, fused=True) per fp32
// parameter reads the weight, the gradient and both moments and writes the
// weight and both moments: 7 x 4 B of host memory traffic.
inline constexpr double kHostAdamBytesPerParam = 28.0;
// The rate one rank's CPU AdamW moves them: one host thread's streaming
// bandwidth. torchrun sets OMP_NUM_THREADS=1 for every process of a
// multi-process job unless told otherwise, so the fused CPU kernel runs on
// one core per rank, not on the socket's bandwidth. 20 GB/s is an
// assumption (about one current server core's streaming rate; no public
// single-core figure for the DGX / Grace hosts was found), not a datasheet
// figure: the Megatron-Bridge cpu-offloading card's 100% step implies
// ~19 GB/s at the modelled shard, so that step does not check the rate
// independently; its 25-75% steps check the linear form and its overlap
// step the copy / CPU split (tests/internal/knob_ladder.h).
inline constexpr double kHostAdamStreamBytesPerSec = 20e9;
// The offloaded weights come back in fp32 (the CPU copy is the fp32 master
// weight, copied into the GPU parameter: hybrid_optimizer.py
// param_copy_back_gpu_hook).
inline constexpr double kHostOptimizerWeightCopyBytesPerParam = 4.0;
// Host memory per offloaded parameter: the fp32 weight, its pinned gradient
// buffer and CPU AdamW's two fp32 moments.
inline constexpr double kHostOptimizerStateBytesPerParam = 16.0;
// Gradient reduce-scatter and parameter all-gather in BF16 (Megatron-Bridge
// performance recipes: grad_reduce_in_fp32 off).
inline constexpr double kDpCommBytesPerParam = 2.0;
// The step's grad-norm reads 4 B/param of all local parameters.
inline constexpr double kGradNormBytesPerParam = 4.0;
// Cross-entropy over the vocabulary shard per token: write bf16 logits,
// read them, fp32 softmax statistics and the bf16 gradient: ~10 B/element.
inline constexpr double kCrossEntropyBytesPerLogit = 10.0;
// fp32 logits kept for the loss on the last stage (per element).
inline constexpr double kLogitsActivationBytes = 4.0;
// Memory-bound kernels move about twice as much in backward as forward
// (they read the saved input and the incoming gradient, write a gradient).
inline constexpr double kBackwardMemoryBoundFactor = 2.0;
// Launches per layer in backward relative to forward. Dense layers run
// inside CUDA graphs (cuda_graphs knob) or, without them, at
// ~StackConstants::host_op_s per op, overlapped with the GPU (the CPU runs
// ahead).
inline constexpr double kBackwardKernelFactor = 2.0;
// Memory the training process holds beyond its tensors (reserve_bytes):
// CUDA context and cuBLAS/cuDNN workspaces (~3 GiB), plus allocator
// fragmentation, a fraction of the activations. The plans run PyTorch's
// allocator with expandable segments (PYTORCH_CUDA_ALLOC_CONF=
// expandable_segments:True: the Megatron file exports it, as Megatron-
// Bridge's performance scripts have since v0.2.0, PERF_ENV_VARS, and its
// perf recipes since): one segment per stream that grows and shrinks by
// pages, so freed blocks no longer strand whole cudaMalloc segments. 2% is
// a prior, not a measurement (was 8%, the default allocator's; Megatron-
// Bridge's memory-tuning card: expandable segments removed the Llama3-70B
// SFT run's fragmentation OOM at 58.8 GB allocated on 80 GB H100). No
// public run publishes reserved against allocated memory to set it from.
inline constexpr double kFixedReserveBytes = 3 * units::kGiB;
inline constexpr double kFragmentationFraction = 0.02;
// NCCL's own buffers, counted in comm_buffers_bytes on top of the reserve
// above (not inside it), with the EP and TP-overlap staging buffers.
inline constexpr double kNcclBufferBytes = 0.5 * units::kGiB;
// LoRA: the backward pass computes activation gradients only; the model
// FLOPs it is credited with are fwd + dgrad = 2/3 of a full step.
inline constexpr double kLoraFlopsFraction = 2.0 / 3.0;

// ---------------------------------------------------------------------------
// Breakdown slots: fixed so that the fast path needs no strings.
enum Slot : int {
  kSAttnCore,
  kSAttnProj,
  kSDenseMlp,
  kSShared,
  kSRouted,
  kSRouter,
  kSLogits,
  kSMemBound,
  kSLaunch,
  kSRecompute,
  kSLoraAdapters,
  kSOverlapSlowdown,
  kSTpExposed,
  kSTpHidden,
  kSEpExposed,
  kSEpHidden,
  kSCpExposed,
  kSCpHidden,
  kSPpExposed,
  kSPpHidden,
  kSDpExposed,
  kSDpHidden,
  kSBubble,
  kSOptimizer,
  kSStepHost,
  kSOffloadExposed,
  kSOffloadHidden,
  kNumSlots
};

struct SlotInfo {
  const char* name;
  TermKind kind;
};
inline constexpr SlotInfo kSlots[kNumSlots] = {
    {"attention.core", TermKind::kComputeAttention},
    {"attention.projections", TermKind::kComputeDenseGemm},
    {"mlp.dense", TermKind::kComputeDenseGemm},
    {"moe.shared_experts", TermKind::kComputeDenseGemm},
    {"moe.routed_experts", TermKind::kComputeGroupedGemm},
    {"moe.router", TermKind::kComputeOther},
    {"head.logits", TermKind::kComputeDenseGemm},
    {"memory_bound_kernels", TermKind::kComputeOther},
    {"kernel_launches", TermKind::kComputeOther},
    {"recompute", TermKind::kRecompute},
    {"lora.adapters", TermKind::kComputeOther},
    {"overlap.compute_slowdown", TermKind::kComputeOther},
    {"tp.exposed", TermKind::kCommTpExposed},
    {"tp.hidden", TermKind::kCommTpHidden},
    {"ep.dispatch_combine.exposed", TermKind::kCommEpExposed},
    {"ep.dispatch_combine.hidden", TermKind::kCommEpHidden},
    {"cp.ring.exposed", TermKind::kCommCpExposed},
    {"cp.ring.hidden", TermKind::kCommCpHidden},
    {"pp.send_recv.exposed", TermKind::kCommPpExposed},
    {"pp.send_recv.hidden", TermKind::kCommPpHidden},
    {"dp.grads_params.exposed", TermKind::kCommDpExposed},
    {"dp.grads_params.hidden", TermKind::kCommDpHidden},
    {"pipeline.bubble", TermKind::kPipelineBubble},
    {"optimizer", TermKind::kOptimizer},
    {"host.per_step", TermKind::kComputeOther},  // StackConstants::step_host_s
    {"offload.exposed", TermKind::kOffloadExposed},
    {"offload.hidden", TermKind::kOffloadHidden},
};

inline constexpr uint8_t kPriorBit = 1;
inline constexpr uint8_t kCalibratedBit = 2;
inline uint8_t SourceBit(CostSource s) {
  return s == CostSource::kCalibrated ? kCalibratedBit : kPriorBit;
}

// Seconds per slot, with the sources that fed each.
struct Slots {
  double s[kNumSlots] = {};
  uint8_t src[kNumSlots] = {};
  void Add(Slot slot, const Cost& c, double mult = 1.0) {
    s[slot] += c.seconds * mult;
    src[slot] |= SourceBit(c.source);
  }
  void AddSeconds(Slot slot, double seconds, uint8_t source_bits) {
    s[slot] += seconds;
    src[slot] |= source_bits;
  }
  void AddScaled(const Slots& o, double mult) {
    for (int i = 0; i < kNumSlots; ++i) {
      s[i] += o.s[i] * mult;
      if (o.s[i] > 0) src[i] |= o.src[i];
    }
  }
};

// Exposed time of a layer: everything but the hidden communication slots.
constexpr bool IsHiddenSlot(int i) {
  return i == kSTpHidden || i == kSEpHidden || i == kSCpHidden || i == kSPpHidden ||
         i == kSDpHidden || i == kSOffloadHidden;
}
inline double CriticalPath(const Slots& l) {
  double t = 0;
  for (int i = 0; i < kNumSlots; ++i) {
    if (!IsHiddenSlot(i)) t += l.s[i];
  }
  return t;
}

// Everything a layer's cost depends on besides its shape.
struct Context {
  const CostModel* cost;
  const ModelSpec* model;
  const Knobs* knobs;
  Precision precision;
  bool low_precision;
  double operand_bytes;
  double tokens_cp;    // tokens of this GPU's CP shard (GEMM rows under TP)
  double tokens_rank;  // tokens_cp / tp (sequence-parallel share)
  int tp, cp, ep, etp;
  bool dp_outermost;  // ParallelConfig::dp_outermost (rank order tp-cp-ep-pp-dp)
  int micro_batches;
  LinkSpan tp_span, cp_span, etp_span;
  int ep_gpus_per_domain;
  double bwd_gemm_factor;  // 2 (dgrad + wgrad) or 1 (LoRA)
  bool lora;
  double launch_s;
  double overlap_slowdown;
  const StackConstants* stack;
  bool ep_overlap_schedule;  // pp == 1 or vp > 1
  // Share of this rank's layer passes (forward, and equally backward) that
  // the combined-1F1B schedule runs beside a pass of the other direction
  // (CombinedOneFOneBPairedFraction); the rest have no overlap partner.
  double ep_paired_fraction;
  bool sinks_unfused_sliding;  // sink layers with a window run unfused
  bool sinks_unfused_full;     // sink layers with full attention run unfused
  double seq_len;
};

// The cost-model lookups of one layer kind. Filled by the functions below
// (each lookup under the condition LayerCost uses it) or copied from a
// PreparedLayout, which holds the results of the same calls.
struct KindCosts {
  Cost qkv, oproj;        // attention projections (precision)
  Cost attn_f, attn_b;    // core attention (layout only)
  Cost fc1, fc2;          // dense MLP, or the shared experts (precision)
  Cost router;            // MoE router, BF16 (layout only)
  Cost gfc1, gfc2;        // routed experts (precision, grouped, imbalance)
  Cost dispatch, combine; // EP (ep > 1) + ETP gather/scatter (etp > 1)
  // Share of each EP exchange's time bound by SM-issued NVLink copying
  // (CostModel::DispatchNvlinkShare; the ETP exchange is not counted).
  double dispatch_nvlink_share = 0, combine_nvlink_share = 0;
  Cost tp_ag, tp_rs;      // tp > 1 (layout only), hidden_size wide
  // The attention block's input gradient's reduce-scatter,
  // AttentionTpGatherWidth wide (= tp_rs for GQA/MHA; layout only).
  Cost tp_attn_rs;
  // The input-side all-gathers of the column-parallel GEMMs at the GEMM
  // input's bytes (precision; tp > 1): Transformer Engine quantizes the norm
  // output before gathering it (distributed.py gather_along_first_dim with
  // the input quantizer: FP8, MXFP8 and NVFP4 data and scales), hidden_size
  // wide; the attention block's AttentionTpGatherWidth wide, except MLA's,
  // which Megatron-LM gathers itself in BF16.
  Cost tp_in_ag, tp_attn_in_ag;
  // What the TP overlap's split GEMMs cost beyond the whole ones
  // (TpOverlapChunkingSeconds; precision, tp > 1).
  Cost tp_overlap_chunking;
  Cost cp_ring;           // cp > 1 (layout only)
  // The CP attention's memory-bound merges beyond its ring, forward and
  // backward (cp > 1, layout only; CpForwardMergeBytes and
  // CpBackwardMergeBytes in step_model_layers.h).
  Cost cp_merge_f, cp_merge_b;
};

// Sum of two costs; calibrated only when both parts are.
inline Cost AddCost(const Cost& a, const Cost& b) {
  Cost sum;
  sum.seconds = a.seconds + b.seconds;
  sum.source = a.source == CostSource::kCalibrated && b.source == CostSource::kCalibrated
                   ? CostSource::kCalibrated
                   : CostSource::kDatasheetPrior;
  return sum;
}

// The per-plan tables of a StepModel, as the stage functions read them.
struct PlanTables {
  const ModelSpec* model;
  const StackConstants* stack;
  const StepModel::LayerKindTables* kinds;  // [StepModel::kNumLayerKinds]
  int mtp_kind;            // MTP modules are shaped as the last layer
  double embedding_params; // one of input embedding / output layer
};

inline constexpr int kNumLayerKinds = StepModel::kNumLayerKinds;

// Each layer kind's cost for one micro-batch, with its own layers fully
// recomputed (cost) and without (cost_norc: the same object unless full
// recompute covers only some layers), and the matching critical-path times
// and saved activations.
struct KindResults {
  Slots cost[kNumLayerKinds];
  Slots cost_partial[kNumLayerKinds];
  const Slots* cost_norc[kNumLayerKinds] = {};
  double time[kNumLayerKinds] = {};
  double time_norc[kNumLayerKinds] = {};
  double act[kNumLayerKinds] = {};
  double act_norc[kNumLayerKinds] = {};
  // Layer-wise offload (Knobs::offload_layers, pp 1), per micro-batch: the
  // activations that leave the GPU, the copies' exposed seconds and their
  // total (both directions); 0 without it.
  double offloaded_act = 0;
  double offload_exposed_s = 0;
  double offload_copy_s = 0;
  // Fine-grained offload (Knobs::offload_modules): the bytes one layer of
  // each kind, not fully recomputed, keeps on the host per micro-batch
  // (tokens_rank x OffloadedBytesPerToken); 0 without it.
  double fine_offload_norc[kNumLayerKinds] = {};
};

// Transformer Engine's layer-wise CPU offload (Megatron --cpu-offloading-num-
// layers N; TE v2.12 transformer_engine/pytorch/cpu_offload.py,
// DefaultOffloadSynchronizer), one micro-batch of L layers in model order,
// the first N offloaded. One copy stream, copies in order:
//   forward: layer i's D2H starts once its forward is done (v2.12 starts it
//     at the next layer's fwd_step; the v2.18 docs say as soon as each
//     tensor is saved, at most one layer earlier); the forward of layer
//     L - N + i waits for it (that keeps (L - N) layers' activations on the
//     GPU);
//   backward (layers L-1 .. 0): layer i's H2D starts before the backward of
//     layer L - 1 - N + i; the backward of layer i waits for it.
// Returns the compute stream's wait, forward plus backward, for per-layer
// forward / backward compute seconds and per-layer one-way copy seconds.
// By hand: L = 4, N = 2, forward 1 s, backward 2 s, copies 3 s per layer.
// Forward: copy 0 runs 1..4, copy 1 4..7; layer 2 (due: copy 0) waits 2..4,
// runs 4..5; layer 3 (due: copy 1) waits 5..7: 4 s. Backward (L - 1 - N =
// 1): layer 3 runs 0..2; reload 1 starts before layer 2, 2..5; layer 2 runs
// 2..4; reload 0 starts before layer 1, 5..8; layer 1 waits 4..5, runs
// 5..7; layer 0 waits 7..8: 2 s. Exposed 6 s of the 12 s copied
// (LayerOffloadTest.ByHand).
inline double LayerOffloadExposedSeconds(const double* fwd_s, const double* bwd_s,
                                         const double* copy_s, int num_layers,
                                         int offloaded) {
  const int L = num_layers;
  const int N = offloaded < 0 ? 0 : (offloaded > L ? L : offloaded);
  if (N == 0) return 0;
  double exposed = 0;
  // Forward.
  double t = 0, stream = 0, work = 0;
  std::vector<double> done(static_cast<size_t>(N), 0.0);  // copy i finished
  for (int j = 0; j < L; ++j) {
    if (j >= 1 && j - 1 < N) {
      stream = (stream > t ? stream : t) + copy_s[j - 1];
      done[j - 1] = stream;
    }
    const int due = j - (L - N);
    if (due >= 0 && due < N && done[due] > t) t = done[due];
    t += fwd_s[j];
    work += fwd_s[j];
  }
  exposed += t - work;
  // Backward.
  t = 0, stream = 0, work = 0;
  for (int k = L - 1; k >= 0; --k) {
    const int start = k - (L - 1 - N);
    if (start >= 0 && start < N) {
      stream = (stream > t ? stream : t) + copy_s[start];
      done[start] = stream;
    }
    if (k < N && done[k] > t) t = done[k];
    t += bwd_s[k];
    work += bwd_s[k];
  }
  return exposed + (t - work);
}

}  // namespace moetune::planner::step_model_internal
