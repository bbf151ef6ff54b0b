#include "planner/step_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"
#include "planner/prediction_interval.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using units::kGiB;
using units::kMicrosecond;

// ---------------------------------------------------------------------------
// Named constants of the step model (the cost model holds the hardware ones).

// BF16 activations: 2 bytes per element.
constexpr double kActivationBytes = 2.0;
// A distributed Adam optimizer with fp32 master weights and two moments
// (12 B/param, sharded over the data-parallel group) -- Megatron-LM docs,
// distributed optimizer. Its step casts the local shard's gradients to fp32
// (4 B/param of the shard). The gradient buffer itself holds
// StackConstants::grad_buffer_bytes_per_param per local parameter.
constexpr double kOptimizerStateBytes = 12.0;
constexpr double kShardMainGradBytes = 4.0;
// Gradient reduce-scatter and parameter all-gather in BF16 (Megatron-Bridge
// performance recipes: grad_reduce_in_fp32 off).
constexpr double kDpCommBytesPerParam = 2.0;
// Adam step over the local shard: read grad (4) + master/m/v (12), write
// master/m/v (12) + bf16 param (2) = 30 B/param; grad-norm reads 4 B/param.
constexpr double kOptimizerBytesPerParam = 30.0;
constexpr double kGradNormBytesPerParam = 4.0;
// Cross-entropy over the vocabulary shard per token: write bf16 logits,
// read them, fp32 softmax statistics and the bf16 gradient: ~10 B/element.
constexpr double kCrossEntropyBytesPerLogit = 10.0;
// fp32 logits kept for the loss on the last stage (per element).
constexpr double kLogitsActivationBytes = 4.0;
// Memory-bound kernels move about twice as much in backward as forward
// (they read the saved input and the incoming gradient, write a gradient).
constexpr double kBackwardMemoryBoundFactor = 2.0;
// Launches per layer in backward relative to forward.
constexpr double kBackwardKernelFactor = 2.0;
// Dense layers run inside CUDA graphs (cuda_graphs knob) or, without them,
// at ~StackConstants::host_op_s per op, overlapped with the GPU (the CPU
// runs ahead).
// Memory the training process holds beyond its tensors: CUDA context,
// cuBLAS/cuDNN workspaces, NCCL buffers (~3 GiB), plus allocator
// fragmentation of ~8% of activations (PyTorch caching allocator reports).
constexpr double kFixedReserveBytes = 3 * kGiB;
constexpr double kFragmentationFraction = 0.08;
constexpr double kNcclBufferBytes = 0.5 * kGiB;
// LoRA: the backward pass computes activation gradients only; the model
// FLOPs it is credited with are fwd + dgrad = 2/3 of a full step.
constexpr double kLoraFlopsFraction = 2.0 / 3.0;

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
  kSOffloadExposed,
  kSOffloadHidden,
  kNumSlots
};

struct SlotInfo {
  const char* name;
  TermKind kind;
};
constexpr SlotInfo kSlots[kNumSlots] = {
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
    {"offload.exposed", TermKind::kOffloadExposed},
    {"offload.hidden", TermKind::kOffloadHidden},
};

constexpr uint8_t kPriorBit = 1;
constexpr uint8_t kCalibratedBit = 2;
uint8_t SourceBit(CostSource s) {
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
double CriticalPath(const Slots& l) {
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
  int micro_batches;
  LinkSpan tp_span, cp_span, etp_span;
  int ep_gpus_per_domain;
  double bwd_gemm_factor;  // 2 (dgrad + wgrad) or 1 (LoRA)
  bool lora;
  double launch_s;
  double overlap_slowdown;
  const StackConstants* stack;
  bool ep_overlap_schedule;  // pp == 1 or vp > 1
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
  Cost tp_ag, tp_rs;      // tp > 1 (layout only)
  Cost cp_ring;           // cp > 1 (layout only)
};

// Lookups that depend only on the layout.
void LayoutKindCosts(const StepModel::LayerKindTables& k, const Context& c,
                     KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  AttentionShape as;
  as.queries = c.tokens_cp;
  as.context = k.causal_context;
  as.keys = c.seq_len;
  as.heads = m.num_attention_heads / c.tp;
  as.qk_head_dim = m.QkHeadDim();
  as.v_head_dim = m.v_head_dim;
  as.fused = !(k.sliding ? c.sinks_unfused_sliding : c.sinks_unfused_full);
  kc->attn_f = cm.AttentionForward(as);
  kc->attn_b = cm.AttentionBackward(as);
  if (k.moe) {
    kc->router = cm.DenseGemm(c.tokens_rank, m.num_routed_experts, h, Precision::kBf16);
  }
  if (c.tp > 1) {
    const double bytes = c.tokens_cp * h * kActivationBytes;
    kc->tp_ag = cm.Collective(CollectiveKind::kAllGather, bytes, c.tp, c.tp_span);
    kc->tp_rs = cm.Collective(CollectiveKind::kReduceScatter, bytes, c.tp, c.tp_span);
  }
  if (c.cp > 1) {
    const double kv_elems =
        m.attention == AttentionType::kMla
            ? double(m.num_attention_heads) * (m.QkHeadDim() + m.v_head_dim)
            : 2.0 * m.num_kv_heads * m.head_dim;
    const double chunk = c.tokens_cp * kv_elems / c.tp * kActivationBytes;
    kc->cp_ring =
        cm.Collective(CollectiveKind::kAllGather, chunk * c.cp, c.cp, c.cp_span);
  }
}

// Dense GEMMs at c.precision.
void PrecisionKindCosts(const StepModel::LayerKindTables& k, const Context& c,
                        KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const double tc = c.tokens_cp;
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double o_k = double(m.num_attention_heads) * m.v_head_dim / c.tp;
  kc->qkv = cm.DenseGemm(tc, k.qkv_out_dim / c.tp, h, c.precision);
  kc->oproj = cm.DenseGemm(tc, h, o_k, c.precision);
  if (!k.moe) {
    const double f = double(m.ffn_hidden_size) / c.tp;
    kc->fc1 = cm.DenseGemm(tc, gate * f, h, c.precision);
    kc->fc2 = cm.DenseGemm(tc, h, f, c.precision);
  } else if (m.num_shared_experts > 0) {
    const double fs = double(m.moe_ffn_hidden_size) * m.num_shared_experts / c.tp;
    kc->fc1 = cm.DenseGemm(tc, gate * fs, h, c.precision);
    kc->fc2 = cm.DenseGemm(tc, h, fs, c.precision);
  }
}

// Sum of two costs; calibrated only when both parts are.
Cost AddCost(const Cost& a, const Cost& b) {
  Cost sum;
  sum.seconds = a.seconds + b.seconds;
  sum.source = a.source == CostSource::kCalibrated && b.source == CostSource::kCalibrated
                   ? CostSource::kCalibrated
                   : CostSource::kDatasheetPrior;
  return sum;
}

// Routed experts and EP dispatch/combine (MoE kinds) at c.precision.
void ExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                     KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const int local = m.num_routed_experts / c.ep;
  GroupedGemmShape g;
  g.num_experts = local;
  g.tokens_per_expert = c.tokens_rank * m.moe_top_k * c.etp / local;
  g.imbalance = imbalance;
  g.precision = c.precision;
  g.grouped = grouped;
  const double fe = double(m.moe_ffn_hidden_size) / c.etp;
  g.n = int64_t(gate * fe);
  g.k = m.hidden_size;
  kc->gfc1 = cm.GroupedGemm(g);
  g.n = m.hidden_size;
  g.k = int64_t(fe);
  kc->gfc2 = cm.GroupedGemm(g);
  if (c.ep > 1) {
    DispatchShape d;
    d.tokens = c.tokens_rank * g.imbalance;
    d.top_k = m.moe_top_k;
    d.ep = c.ep;
    d.ep_gpus_per_domain = c.ep_gpus_per_domain;
    d.dedup = dedup;
    d.bytes_per_token = h * (c.low_precision ? c.operand_bytes : 2.0);
    kc->dispatch = cm.Dispatch(d);
    d.bytes_per_token = h * kActivationBytes;
    kc->combine = cm.Dispatch(d);
  }
  if (c.etp > 1) {
    const EtpExchange x = ExpertTensorParallelExchange(
        c.tokens_rank * m.moe_top_k * g.imbalance, h,
        c.low_precision ? c.operand_bytes : 2.0, c.etp);
    kc->dispatch = AddCost(
        kc->dispatch, cm.Collective(CollectiveKind::kAllGather, x.gather_bytes, c.etp, c.etp_span));
    kc->combine = AddCost(kc->combine, cm.Collective(CollectiveKind::kReduceScatter,
                                                     x.scatter_bytes, c.etp, c.etp_span));
  }
}

// Host-side time of one MoE layer for one micro-batch (forward + 2x
// backward of the per-pass ops, plus the per-local-expert ops), at
// stack.host_op_s per op. In the 26.02-26.04 stacks it is serialised with
// the GPU work by the token-count synchronisation: the host issues the ops
// of a layer while the GPU idles (this additive form fits the Megatron-Bridge
// rows better than max(host, GPU): MAPE 12.6% vs 19.9% on runs.json).
double MoeHostSeconds(const StackConstants& stack, int local_experts) {
  return (stack.moe_host_ops_forward * (1.0 + kBackwardKernelFactor) +
          stack.grouped_gemm_host_ops_per_expert * local_experts) *
         stack.host_op_s;
}

// Costs of one layer for one micro-batch on one GPU.
Slots LayerCost(const StepModel::LayerKindTables& k, const Context& c,
                bool recompute_this_layer, const KindCosts& kc) {
  Slots l;
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const Knobs& knobs = *c.knobs;
  const double h = double(m.hidden_size);
  const double tr = c.tokens_rank;
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;

  // --- Attention block. QKV projection(s) [tc x h] x [h x qkv/tp] and the
  // output projection [tc x n v/tp] x [n v/tp x h]; backward = dgrad (+ wgrad).
  // (Lookups in PrecisionKindCosts / LayoutKindCosts.)
  const Cost qkv = kc.qkv;
  const Cost oproj = kc.oproj;
  l.Add(kSAttnProj, qkv, fwd_bwd);
  l.Add(kSAttnProj, oproj, fwd_bwd);
  // Core attention over the causal (or window) context, heads split by TP.
  const Cost attn_f = kc.attn_f;
  const Cost attn_b = kc.attn_b;
  l.Add(kSAttnCore, attn_f);
  l.Add(kSAttnCore, attn_b);
  double block_gemm_s = (qkv.seconds + oproj.seconds) * fwd_bwd;
  int tp_pairs = 1;  // AG + RS pairs per forward

  // --- MLP block.
  Cost mlp_f{};
  Cost shared_f{};
  Cost routed_f{};
  Cost router_f{};
  double ep_fwd_s = 0;
  double ep_total_s = 0;
  uint8_t ep_src = 0;
  if (!k.moe) {
    // fc1 [tc x h] x [h x gate f/tp], fc2 [tc x f/tp] x [f/tp x h].
    const Cost fc1 = kc.fc1;
    const Cost fc2 = kc.fc2;
    mlp_f = {fc1.seconds + fc2.seconds, fc1.source};
    l.Add(kSDenseMlp, fc1, fwd_bwd);
    l.Add(kSDenseMlp, fc2, fwd_bwd);
    block_gemm_s += mlp_f.seconds * fwd_bwd;
    ++tp_pairs;
  } else {
    // Router [tr x h] x [h x E] in BF16 (fwd + dgrad + wgrad).
    router_f = kc.router;
    l.Add(kSRouter, router_f, 3.0);
    if (m.num_shared_experts > 0) {
      const Cost fc1 = kc.fc1;
      const Cost fc2 = kc.fc2;
      shared_f = {fc1.seconds + fc2.seconds, fc1.source};
      l.Add(kSShared, fc1, fwd_bwd);
      l.Add(kSShared, fc2, fwd_bwd);
      block_gemm_s += shared_f.seconds * fwd_bwd;
      if (c.tp > 1) ++tp_pairs;
    }
    // Routed experts: E/ep local experts; under balanced routing each GPU
    // processes tr x top_k (x etp, with ffn / etp) token-expert rows.
    // (GroupedGemmShape in ExpertKindCosts.)
    const Cost fc1 = kc.gfc1;
    const Cost fc2 = kc.gfc2;
    routed_f = {fc1.seconds + fc2.seconds, fc1.source};
    l.Add(kSRouted, fc1, fwd_bwd);
    l.Add(kSRouted, fc2, fwd_bwd);
    // EP dispatch (low-precision payload when the GEMMs are) and combine
    // (BF16); backward moves the same volumes in BF16.
    if (c.ep > 1 || c.etp > 1) {
      // (DispatchShape and the ETP exchange in ExpertKindCosts.)
      const Cost dispatch = kc.dispatch;
      const Cost combine = kc.combine;
      ep_fwd_s = dispatch.seconds + combine.seconds;
      ep_total_s = ep_fwd_s + 2 * combine.seconds;
      ep_src = SourceBit(dispatch.source) | SourceBit(combine.source);
    }
  }

  // --- Memory-bound kernels (norms, residuals, RoPE, activations,
  // permute/unpermute, casts), per token of the SP shard.
  double mb_fwd_bytes =
      tr * kActivationBytes * (k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
  if (c.low_precision) mb_fwd_bytes += tr * k.mb_quant_elems * (2.0 + c.operand_bytes);
  const Cost mb_f = cm.MemoryBound(mb_fwd_bytes);

  l.Add(kSMemBound, mb_f, 1.0 + kBackwardMemoryBoundFactor);
  if (c.lora) {
    // LoRA adapters beside the frozen linears: memory-bound, BF16,
    // lora_adapter_hbm_passes x (input + output widths) per token of the CP
    // shard, the widths split by TP.
    l.Add(kSLoraAdapters,
          cm.MemoryBound(c.tokens_cp * k.lora_io_elems / c.tp *
                         c.stack->lora_adapter_hbm_passes * kActivationBytes));
  }
  // Megatron-Core overlaps EP all-to-all with another micro-batch's
  // compute in its combined 1F1B schedule: without pipelining or with the
  // interleaved schedule, and with at least two micro-batches.
  const bool ep_overlap_schedule =
      knobs.overlap.ep_comm && c.micro_batches >= 2 && c.ep_overlap_schedule;
  if (k.moe) {
    const double host = MoeHostSeconds(*c.stack, m.num_routed_experts / c.ep);
    if (c.stack->moe_host_hidden_by_ep_overlap && ep_overlap_schedule && c.ep > 1) {
      // The other micro-batch's layer keeps the GPU busy while this one's
      // host work runs: only host time beyond that compute shows.
      double compute = 0;
      for (int i = kSAttnCore; i <= kSMemBound; ++i) compute += l.s[i];
      l.AddSeconds(kSLaunch, std::max(0.0, host - compute), kPriorBit);
    } else {
      l.AddSeconds(kSLaunch, host, kPriorBit);
    }
  }
  l.AddSeconds(kSLaunch, k.kernels_fwd * (1.0 + kBackwardKernelFactor) * c.launch_s,
               kPriorBit);
  if (!knobs.cuda_graphs) {
    // Eager launches: the CPU issues every op; the GPU waits when the ops
    // are shorter than their host cost.
    double gpu = 0;
    for (int i = kSAttnCore; i <= kSLaunch; ++i) gpu += l.s[i];
    const double host = k.kernels_fwd * (1.0 + kBackwardKernelFactor) * c.stack->host_op_s;
    l.AddSeconds(kSLaunch, std::max(0.0, host - gpu), kPriorBit);
  }

  // --- TP all-gather / reduce-scatter of [tc x h] BF16 around each block,
  // forward and backward.
  if (c.tp > 1) {
    const Cost ag = kc.tp_ag;
    const Cost rs = kc.tp_rs;
    const double total = 2.0 * tp_pairs * (ag.seconds + rs.seconds);
    const uint8_t src = SourceBit(ag.source) | SourceBit(rs.source);
    if (knobs.overlap.tp_comm) {
      const double hidden = std::min(total, c.stack->tp_overlap_fraction * block_gemm_s);
      l.AddSeconds(kSTpHidden, hidden, src);
      l.AddSeconds(kSTpExposed, total - hidden, src);
      l.AddSeconds(kSOverlapSlowdown, hidden * (c.overlap_slowdown - 1.0), src);
    } else {
      l.AddSeconds(kSTpExposed, total, src);
    }
  }

  // --- CP ring: K and V of every other CP rank pass by (forward), K, V and
  // their gradients in backward; overlapped with the attention chunks.
  if (c.cp > 1) {
    const Cost ring = kc.cp_ring;
    const double fwd_exposed = std::max(0.0, ring.seconds - attn_f.seconds);
    const double bwd_exposed = std::max(0.0, 2 * ring.seconds - attn_b.seconds);
    l.AddSeconds(kSCpExposed, fwd_exposed + bwd_exposed, SourceBit(ring.source));
    l.AddSeconds(kSCpHidden, 3 * ring.seconds - fwd_exposed - bwd_exposed,
                 SourceBit(ring.source));
  }

  // --- EP overlap: another micro-batch's compute hides the all-to-all.
  if (ep_total_s > 0) {
    double compute = 0;
    for (int i = kSAttnCore; i <= kSMemBound; ++i) compute += l.s[i];
    const double hidden =
        ep_overlap_schedule ? c.stack->ep_overlap_fraction * std::min(ep_total_s, compute)
                            : 0.0;
    l.AddSeconds(kSEpHidden, hidden, ep_src);
    l.AddSeconds(kSEpExposed, ep_total_s - hidden, ep_src);
    l.AddSeconds(kSOverlapSlowdown, hidden * (c.overlap_slowdown - 1.0), ep_src);
  }

  // --- Recompute: forward work repeated before backward.
  const Recompute& rc = knobs.recompute;
  if (rc.mode == RecomputeMode::kFull && recompute_this_layer) {
    double fwd = 0;
    for (int i = kSAttnProj; i <= kSLogits; ++i) fwd += l.s[i] / fwd_bwd;
    fwd += attn_f.seconds + mb_f.seconds + ep_fwd_s;
    l.AddSeconds(kSRecompute, fwd, kPriorBit);
  } else if (rc.mode == RecomputeMode::kSelective) {
    double t = 0;
    const double mb_per_elem =
        mb_f.seconds / std::max(1.0, k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
    if (rc.modules & kRecomputeCoreAttn) t += attn_f.seconds;
    if ((rc.modules & kRecomputeMlaUpProj) && m.attention == AttentionType::kMla) {
      t += 0.5 * qkv.seconds;  // the up projections: about half the QKV MACs
    }
    if (rc.modules & kRecomputeLayerNorm) t += mb_per_elem * 4.0 * h;  // 2 norms
    if ((rc.modules & kRecomputeMoeAct) && k.moe) {
      // Per rank: etp x the rows (ETP gather) at ffn / etp columns each.
      t += mb_per_elem * 3.0 * m.moe_top_k * double(m.moe_ffn_hidden_size);
    }
    if ((rc.modules & kRecomputeMlp) && !k.moe) t += mlp_f.seconds;
    if ((rc.modules & kRecomputeMoe) && k.moe) {
      t += routed_f.seconds + ep_fwd_s + mb_per_elem * k.mb_topk_elems;
    }
    if ((rc.modules & kRecomputeSharedExperts) && k.moe) t += shared_f.seconds;
    l.AddSeconds(kSRecompute, t, kPriorBit);
  }

  // --- Activation offload: D2H in forward, H2D in backward, on the copy
  // engines, hidden behind the layer's compute when it is long enough.
  if (knobs.offload_activations && knobs.offload_modules != 0) {
    double elems = 0;
    const uint32_t o = knobs.offload_modules;
    if (o & kOffloadAttnNorm) elems += h;
    if (o & kOffloadCoreAttn) elems += double(m.num_attention_heads) * m.v_head_dim;
    if (o & kOffloadAttnProj) elems += h;
    if (o & kOffloadMlpNorm) elems += h;
    // Routed rows: etp x as many after the ETP gather, ffn / etp wide.
    if (k.moe && (o & kOffloadExpertFc1)) elems += m.moe_top_k * h * c.etp;
    if (k.moe && (o & kOffloadMoeAct)) elems += m.moe_top_k * double(m.moe_ffn_hidden_size);
    const Cost copy = cm.HostOffload(tr * elems * kActivationBytes);
    // The copy engines run beside everything the layer's stream waits on:
    // its compute and its exposed host time (kSLaunch). Hiding the copies
    // behind compute alone double-counted: more expert work would then hide
    // both the host time and the copies, and a busier GPU would finish
    // sooner (found by moe_load_imbalance 1.25 predicting faster than 1.0).
    double compute = 0;
    for (int i = kSAttnCore; i <= kSLaunch; ++i) compute += l.s[i];
    // Forward holds ~1/3 of the compute, backward ~2/3.
    const double exposed = std::max(0.0, copy.seconds - compute / 3) +
                           std::max(0.0, copy.seconds - 2 * compute / 3);
    l.AddSeconds(kSOffloadExposed, exposed, SourceBit(copy.source));
    l.AddSeconds(kSOffloadHidden, 2 * copy.seconds - exposed, SourceBit(copy.source));
  }
  return l;
}

// Saved activations of one layer for one micro-batch (bytes per GPU).
// Transformer Engine saves GEMM inputs in the GEMM precision (norm outputs,
// permuted expert inputs, activation outputs, core-attention output).
double LayerActivationBytes(const StepModel::LayerKindTables& k,
                            const Context& c, bool full_recompute) {
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  if (full_recompute) return c.tokens_rank * h * kActivationBytes;
  const uint32_t r = c.knobs->recompute.mode == RecomputeMode::kSelective
                         ? c.knobs->recompute.modules
                         : 0u;
  const double gemm_in = c.low_precision ? c.operand_bytes : kActivationBytes;
  const double core_out = double(m.num_attention_heads) * m.v_head_dim;
  double bytes = (k.act_attn - core_out) * kActivationBytes + core_out * gemm_in;
  if (!(r & kRecomputeLayerNorm)) bytes += k.act_norm * gemm_in;
  if (!(r & kRecomputeMlaUpProj)) bytes += k.act_mla_up * kActivationBytes;
  if (!k.moe) {
    if (!(r & kRecomputeMlp)) bytes += k.act_mlp * kActivationBytes;
  } else {
    if (!(r & kRecomputeMoe)) {
      // The experts' input rows: etp x top_k per token after the ETP gather.
      const double permuted = m.moe_top_k * h * c.etp;
      bytes += permuted * gemm_in + (k.act_moe - m.moe_top_k * h) * kActivationBytes;
      if (!(r & kRecomputeMoeAct)) bytes += k.act_moe_act * gemm_in;
    }
    if (!(r & kRecomputeSharedExperts)) bytes += k.act_shared * kActivationBytes;
  }
  if (c.knobs->offload_activations) {
    const uint32_t o = c.knobs->offload_modules;
    double off = 0;
    if (o & kOffloadAttnNorm) off += h * kActivationBytes;
    if (o & kOffloadCoreAttn) off += core_out * gemm_in;
    if (o & kOffloadAttnProj) off += h * kActivationBytes;
    if (o & kOffloadMlpNorm) off += h * kActivationBytes;
    if (k.moe && (o & kOffloadExpertFc1) && !(r & kRecomputeMoe)) {
      off += m.moe_top_k * h * c.etp * gemm_in;
    }
    if (k.moe && (o & kOffloadMoeAct) && !(r & kRecomputeMoe) &&
        !(r & kRecomputeMoeAct)) {
      off += k.act_moe_act * gemm_in;
    }
    bytes = std::max(bytes - off, h * kActivationBytes);
  }
  // k.act_* are per token before TP; the SP shard holds tokens_rank tokens.
  double total = c.tokens_rank * bytes;
  // Unfused attention keeps the BF16 probabilities for backward unless
  // core attention is recomputed.
  const bool unfused = k.sliding ? c.sinks_unfused_sliding : c.sinks_unfused_full;
  if (unfused && !(r & kRecomputeCoreAttn)) {
    total += c.tokens_cp * (double(m.num_attention_heads) / c.tp) * c.seq_len *
             kActivationBytes;
  }
  return total;
}

}  // namespace

Cost HierarchicalCollective(const CostModel& cost, CollectiveKind kind, double bytes,
                            int group_size, LinkSpan span, int members_per_domain) {
  const Cost flat = cost.Collective(kind, bytes, group_size, span);
  if (span != LinkSpan::kScaleOut || members_per_domain <= 1 ||
      flat.source == CostSource::kCalibrated) {
    return flat;
  }
  // NCCL builds one ring per NIC: each crosses every domain boundary once,
  // so the m members of a domain share the inter-domain traffic over their
  // m NICs (one per GPU in every preset), while the hops inside a domain
  // carry the whole buffer over NVLink; the slower of the two bounds.
  // nccl-tests all_reduce busbw across H100 nodes with one 400G NIC per GPU:
  // 400-450 GB/s, ~8x one NIC's 50 GB/s (Saturn Cloud / Crusoe, "Validating
  // Multi-Node GPU Clusters with NCCL Tests").
  const Cost nics = cost.Collective(kind, bytes / members_per_domain, group_size, span);
  const Cost nvlink = cost.Collective(kind, bytes, group_size, LinkSpan::kNvlinkDomain);
  return {std::max(nics.seconds, nvlink.seconds), CostSource::kDatasheetPrior};
}

std::string_view StackGenerationName(StackGeneration generation) {
  switch (generation) {
    case StackGeneration::k2602:
      return "26.02";
    case StackGeneration::k2606:
      return "26.06";
  }
  return "unknown";
}

absl::StatusOr<StackGeneration> StackGenerationForContainer(std::string_view container) {
  // YY.MM[.NN]: two-digit year and month, optional patch number.
  auto digits = [&](size_t pos, size_t n) {
    if (pos + n > container.size()) return -1;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (container[i] < '0' || container[i] > '9') return -1;
      v = v * 10 + (container[i] - '0');
    }
    return v;
  };
  const int year = digits(0, 2);
  const int month = digits(3, 2);
  bool ok = year >= 0 && month >= 1 && month <= 12 && container.size() >= 5 &&
            container[2] == '.';
  if (ok && container.size() > 5) {
    ok = container[5] == '.' && container.size() > 6;
    for (size_t i = 6; ok && i < container.size(); ++i) {
      ok = container[i] >= '0' && container[i] <= '9';
    }
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "container version '", std::string(container), "' is not YY.MM[.NN] (e.g. 26.04.01)"));
  }
  return year * 100 + month >= 2606 ? StackGeneration::k2606 : StackGeneration::k2602;
}

absl::StatusOr<StackGeneration> ParseStackGeneration(std::string_view name) {
  if (name == "latest") return kLatestStackGeneration;
  return StackGenerationForContainer(name);
}

StackConstants StackConstantsFor(StackGeneration generation) {
  StackConstants k;
  k.generation = generation;
  switch (generation) {
    case StackGeneration::k2602:
      k.moe_host_hidden_by_ep_overlap = false;
      break;
    case StackGeneration::k2606:
      k.moe_host_hidden_by_ep_overlap = true;
      break;
  }
  return k;
}

struct StepModel::Accumulator {
  Slots slots;  // per step, exposed terms sum to step_time_s
  double step_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  MemoryBreakdown memory;
  double peak_memory_bytes = 0;
  int dp = 0;
  std::vector<int> stage_layers;  // breakdown only: layers per virtual stage
};

absl::StatusOr<StepModel> StepModel::Create(
    const ModelSpec& model, const ClusterSpec& cluster,
    const TrainingShape& shape, std::shared_ptr<const CostModel> cost_model,
    const StackConstants& stack) {
  if (cost_model == nullptr) {
    return absl::InvalidArgumentError("StepModel needs a cost model");
  }
  if (shape.gpus <= 0 || shape.seq_len <= 0 || shape.global_batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("training shape must be positive: gpus=", shape.gpus,
                     " seq_len=", shape.seq_len,
                     " global_batch=", shape.global_batch));
  }
  if (model.num_layers <= 0 || model.hidden_size <= 0 ||
      model.num_attention_heads <= 0 || model.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model.name, "' has non-positive sizes"));
  }
  if (cost_model->cluster().name != cluster.name) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cost model is for cluster '", cost_model->cluster().name,
        "', not '", cluster.name, "'"));
  }
  StepModel s;
  s.stack_ = stack;
  s.model_ = model;
  s.shape_ = shape;
  s.cost_ = std::move(cost_model);
  s.model_flops_per_token_ = ModelFlopsPerToken(model, shape.seq_len);
  s.logits_macs_per_token_ = LogitsMacsPerToken(model);
  s.embedding_params_ = double(model.PaddedVocabSize()) * double(model.hidden_size);

  const double h = double(model.hidden_size);
  const double n = model.num_attention_heads;
  const double gate = model.gated_mlp ? 2.0 : 1.0;
  for (int kind = 0; kind < kNumLayerKinds; ++kind) {
    LayerKindTables& t = s.kinds_[kind];
    t.moe = kind >= 2;
    t.sliding = kind % 2 == 1;
  }
  s.layer_kind_index_.resize(model.num_layers);
  for (int l = 0; l < model.num_layers; ++l) {
    const int kind = (model.IsMoeLayer(l) ? 2 : 0) + (model.IsSlidingLayer(l) ? 1 : 0);
    s.layer_kind_index_[l] = kind;
    LayerKindTables& t = s.kinds_[kind];
    if (t.count++ > 0) continue;
    t.macs = LayerMacsPerToken(model, l, shape.seq_len);
    t.causal_context = AverageCausalContext(model, l, shape.seq_len);
    const double o_macs = n * model.v_head_dim * h;
    t.qkv_out_dim = (t.macs.attention_proj - o_macs) / h;
    t.num_proj_gemms = model.attention == AttentionType::kMla ? 5 : 2;
    t.params = model.AttentionParamsPerLayer() +
               (t.moe ? model.ExpertParams() * model.num_shared_experts +
                            h * model.num_routed_experts
                      : model.DenseMlpParams());
    t.expert_params = t.moe ? model.ExpertParams() * model.num_routed_experts : 0;

    // Element counts per token (forward), see LayerKindTables.
    const double q_dim = n * model.QkHeadDim();
    const double kv_dim = model.attention == AttentionType::kMla
                              ? n * (model.QkHeadDim() + model.v_head_dim)
                              : 2.0 * model.num_kv_heads * model.head_dim;
    const double core_out = n * model.v_head_dim;
    const double latents = model.attention == AttentionType::kMla
                               ? model.q_lora_rank + model.kv_lora_rank +
                                     model.qk_rope_head_dim
                               : 0.0;
    // Attention: norm (read h, write h), residual add (read 2h, write h),
    // RoPE (read + write), MLA latent norms (read + write).
    // RoPE rotates q and k: every head dim for GQA, only the rope dims for
    // MLA (per query head, and the one shared rope key).
    const double rope_elems =
        model.attention == AttentionType::kMla
            ? (n + 1) * model.qk_rope_head_dim
            : (n + model.num_kv_heads) * double(model.head_dim);
    t.mb_attn_elems = 2 * h + 3 * h + 2 * rope_elems + 2 * latents;
    t.mb_quant_elems = h + core_out + latents;
    t.act_norm = 2 * h;  // attention and MLP norm outputs
    t.act_attn = 2 * h + core_out + latents +
                 (model.attention == AttentionType::kMla ? 0.0 : q_dim + kv_dim);
    t.act_mla_up = model.attention == AttentionType::kMla ? q_dim + kv_dim : 0.0;
    t.kernels_fwd = 12 + (model.attention == AttentionType::kMla ? 6 : 0);
    t.lora_io_elems = (h + t.qkv_out_dim) + (core_out + h);
    if (!t.moe) {
      const double f = double(model.ffn_hidden_size);
      // Norm, residual, activation (read gate f, write f).
      t.mb_mlp_elems = 2 * h + 3 * h + (gate + 1) * f;
      t.mb_quant_elems += h + f;
      t.act_mlp = (gate + 1) * f + h;
      t.lora_io_elems += (h + gate * f) + (f + h);
      t.kernels_fwd += 8;
    } else {
      const double fe = double(model.moe_ffn_hidden_size);
      const double fs = fe * model.num_shared_experts;
      const double k = model.moe_top_k;
      // Norm, residual, router softmax/top-k (fp32 logits: ~6 elements per
      // expert), shared-expert activation.
      t.mb_mlp_elems = 2 * h + 3 * h + 6.0 * model.num_routed_experts +
                       (fs > 0 ? (gate + 1) * fs : 0.0);
      // Permute (read h, write k h), activation (read gate f, write f) per
      // copy, unpermute with weighted sum (read k h, write h).
      t.mb_topk_elems = (h + k * h) + k * (gate + 1) * fe + (k * h + h);
      t.mb_quant_elems += h + k * h + k * fe + (fs > 0 ? h + fs : 0.0);
      t.act_moe = k * h + k * gate * fe + k * h + 2.0 * model.num_routed_experts;
      t.act_moe_act = k * fe;
      t.act_shared = fs > 0 ? (gate + 1) * fs : 0.0;
      t.lora_io_elems += k * ((h + gate * fe) + (fe + h)) +
                         (fs > 0 ? (h + gate * fs) + (fs + h) : 0.0);
      t.kernels_fwd += 20 + (fs > 0 ? 6 : 0);
    }
  }
  s.mtp_kind_ = s.layer_kind_index_.back();
  // Layers of each kind before layer l, so that a stage's kind counts are two
  // lookups instead of a walk over its layers.
  s.kind_prefix_.assign(size_t(model.num_layers) + 1, {});
  for (int l = 0; l < model.num_layers; ++l) {
    s.kind_prefix_[size_t(l) + 1] = s.kind_prefix_[size_t(l)];
    ++s.kind_prefix_[size_t(l) + 1][size_t(s.layer_kind_index_[size_t(l)])];
  }
  return s;
}

namespace {

// The parts of a Context that depend only on the layout (p with dp
// resolved); SetKnobs adds the rest.
Context LayoutContext(const CostModel* cost, const ModelSpec* model,
                      const TrainingShape& shape, const StackConstants* stack,
                      const ParallelConfig& p, int m_micro) {
  const int domain = cost->cluster().nvlink_domain_gpus;
  const bool lora = shape.objective == Objective::kLora;
  Context c;
  c.cost = cost;
  c.model = model;
  c.knobs = nullptr;
  c.precision = Precision::kBf16;
  c.low_precision = false;
  c.operand_bytes = 0;
  c.tokens_cp = double(p.mbs) * shape.seq_len / p.cp;
  c.tokens_rank = c.tokens_cp / p.tp;
  c.tp = p.tp;
  c.cp = p.cp;
  c.ep = p.ep;
  c.etp = p.etp;
  c.micro_batches = m_micro;
  // Megatron rank order tp-cp-ep-dp-pp: a group of stride s and size g
  // spans s x g consecutive GPUs.
  c.tp_span = p.tp <= domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  c.cp_span = p.tp * p.cp <= domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  c.ep_gpus_per_domain = std::min(p.ep, std::max(1, domain / p.etp));
  // Expert ranks are ordered etp-ep-dp: the ETP group is consecutive GPUs.
  c.etp_span = p.etp <= domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  c.bwd_gemm_factor = lora ? 1.0 : 2.0;
  c.lora = lora;
  c.launch_s = 0;
  c.overlap_slowdown = 1;
  c.stack = stack;
  c.ep_overlap_schedule =
      p.pp == 1 || p.vp > 1 || !stack->ep_overlap_needs_interleaving;
  using Unfused = StackConstants::UnfusedSinkLayers;
  c.sinks_unfused_sliding =
      model->attention_sinks && stack->unfused_sink_layers != Unfused::kNone;
  c.sinks_unfused_full =
      model->attention_sinks && stack->unfused_sink_layers == Unfused::kAll;
  c.seq_len = shape.seq_len;
  return c;
}

void SetPrecision(Context* c, Precision precision) {
  c->precision = precision;
  c->low_precision = precision != Precision::kBf16;
  c->operand_bytes = GemmOperandBytes(precision);
}

void SetKnobs(Context* c, const Knobs& knobs) {
  c->knobs = &knobs;
  SetPrecision(c, knobs.precision);
  c->launch_s = c->cost->KernelLaunchSeconds(knobs.cuda_graphs);
  c->overlap_slowdown = c->cost->OverlapSlowdown(knobs.overlap.num_comm_streams);
}

// Output layer, MTP projection and embedding lookups (see Evaluate).
Cost LogitsGemm(const Context& c, const ModelSpec& m, int tp) {
  return c.cost->DenseGemm(c.tokens_cp, double(m.PaddedVocabSize()) / tp,
                           double(m.hidden_size), c.precision);
}
Cost MtpProjGemm(const Context& c, const ModelSpec& m, int tp) {
  const double h = double(m.hidden_size);
  return c.cost->DenseGemm(c.tokens_cp, h, 2 * h / tp, c.precision);
}
Cost CrossEntropyMem(const Context& c, const ModelSpec& m, int tp) {
  return c.cost->MemoryBound(c.tokens_cp * (double(m.PaddedVocabSize()) / tp) *
                             kCrossEntropyBytesPerLogit);
}
Cost HeadTpGather(const Context& c, const ModelSpec& m, int tp) {
  const double bytes = c.tokens_cp * double(m.hidden_size) * kActivationBytes;
  return c.cost->Collective(CollectiveKind::kAllGather, bytes, tp, c.tp_span);
}
Cost EmbeddingMem(const Context& c, const ModelSpec& m) {
  return c.cost->MemoryBound(c.tokens_rank * double(m.hidden_size) *
                             kActivationBytes * 4);
}
Cost PpSendRecv(const Context& c, const ModelSpec& m, const TrainingShape& shape,
                int pp) {
  const int stride = shape.gpus / pp;
  const int domain = c.cost->cluster().nvlink_domain_gpus;
  const LinkSpan span = stride < domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  return c.cost->Collective(CollectiveKind::kSendRecv,
                            c.tokens_rank * double(m.hidden_size) * kActivationBytes,
                            2, span);
}

}  // namespace

struct StepModel::PreparedLayout::Cache {
  ParallelConfig p;  // dp resolved
  int m_micro = 0;
  Context c;  // layout part
  KindCosts layout_costs[kNumLayerKinds];
  Cost head_mem, head_tp_ag, embed_mem, pp_send;
  struct PerPrecision {
    bool ready = false;
    KindCosts kinds[kNumLayerKinds];  // qkv, oproj, fc1, fc2
    Cost logits, mtp_proj;
    bool experts_ready[2][2] = {};  // [grouped][dedup], balanced routing
    KindCosts experts[2][2];        // gfc1, gfc2, dispatch, combine
  };
  PerPrecision precision[kNumPrecisions];
};

StepModel::PreparedLayout::PreparedLayout() = default;
StepModel::PreparedLayout::~PreparedLayout() = default;
StepModel::PreparedLayout::PreparedLayout(PreparedLayout&&) noexcept = default;
StepModel::PreparedLayout& StepModel::PreparedLayout::operator=(
    PreparedLayout&&) noexcept = default;

void StepModel::Prepare(const ParallelConfig& parallel,
                        PreparedLayout* prepared) const {
  prepared->parallel = parallel;
  prepared->layout = CheckLayout(model_, shape_, parallel);
  if (prepared->layout != Infeasibility::kNone) {
    prepared->cache.reset();
    return;
  }
  if (prepared->cache == nullptr) {
    prepared->cache = std::make_unique<PreparedLayout::Cache>();
  } else {
    *prepared->cache = PreparedLayout::Cache();
  }
  PreparedLayout::Cache& pc = *prepared->cache;
  pc.p = parallel;
  pc.p.dp = ResolvedDp(shape_, pc.p);
  pc.m_micro = NumMicroBatches(shape_, pc.p);
  pc.c = LayoutContext(cost_.get(), &model_, shape_, &stack_, pc.p, pc.m_micro);
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds_[k].count > 0) LayoutKindCosts(kinds_[k], pc.c, &pc.layout_costs[k]);
  }
  pc.head_mem = CrossEntropyMem(pc.c, model_, pc.p.tp);
  if (pc.p.tp > 1) pc.head_tp_ag = HeadTpGather(pc.c, model_, pc.p.tp);
  pc.embed_mem = EmbeddingMem(pc.c, model_);
  if (pc.p.pp > 1) pc.pp_send = PpSendRecv(pc.c, model_, shape_, pc.p.pp);
}

Infeasibility StepModel::Evaluate(const ParallelConfig& p_in, const Knobs& knobs,
                                  Accumulator* acc, bool breakdown,
                                  PreparedLayout* prepared) const {
  PreparedLayout::Cache* pc = nullptr;
  if (prepared != nullptr) {
    if (prepared->layout != Infeasibility::kNone) return prepared->layout;
    pc = prepared->cache.get();
  } else {
    const Infeasibility layout = CheckLayout(model_, shape_, p_in);
    if (layout != Infeasibility::kNone) return layout;
  }
  const ClusterSpec& cluster = cost_->cluster();
  if (!PeakDenseFlopsPerSec(cluster.gpu, knobs.precision).has_value()) {
    return Infeasibility::kPrecisionUnsupported;
  }
  ParallelConfig p_local;
  if (pc == nullptr) {
    p_local = p_in;
    p_local.dp = ResolvedDp(shape_, p_local);
  }
  const ParallelConfig& p = pc != nullptr ? pc->p : p_local;
  const int m_micro = pc != nullptr ? pc->m_micro : NumMicroBatches(shape_, p);
  const int domain = cluster.nvlink_domain_gpus;
  const bool lora = shape_.objective == Objective::kLora;

  Context c = pc != nullptr ? pc->c
                            : LayoutContext(cost_.get(), &model_, shape_, &stack_, p,
                                            m_micro);
  SetKnobs(&c, knobs);

  // The cost-model lookups of each layer kind: from the prepared layout
  // (filled on first use for this precision) or from the cost model.
  KindCosts kc[kNumLayerKinds];
  const bool grouped = knobs.grouped_gemm;
  const bool dedup = knobs.dispatcher == Dispatcher::kFusedDedup;
  const double imbalance = std::max(1.0, knobs.moe_load_imbalance);
  PreparedLayout::Cache::PerPrecision* pr = nullptr;
  if (pc != nullptr) {
    pr = &pc->precision[int(knobs.precision)];
    if (!pr->ready) {
      for (int k = 0; k < kNumLayerKinds; ++k) {
        if (kinds_[k].count > 0) PrecisionKindCosts(kinds_[k], c, &pr->kinds[k]);
      }
      pr->logits = LogitsGemm(c, model_, p.tp);
      if (model_.mtp_layers > 0) pr->mtp_proj = MtpProjGemm(c, model_, p.tp);
      pr->ready = true;
    }
  }
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds_[k].count == 0) continue;
    KindCosts& x = kc[k];
    if (pc != nullptr) {
      x = pc->layout_costs[k];
      const KindCosts& y = pr->kinds[k];
      x.qkv = y.qkv;
      x.oproj = y.oproj;
      x.fc1 = y.fc1;
      x.fc2 = y.fc2;
      if (kinds_[k].moe) {
        if (imbalance == 1.0) {
          KindCosts& e = pr->experts[grouped][dedup];
          if (!pr->experts_ready[grouped][dedup]) {
            ExpertKindCosts(c, grouped, dedup, imbalance, &e);
            pr->experts_ready[grouped][dedup] = true;
          }
          x.gfc1 = e.gfc1;
          x.gfc2 = e.gfc2;
          x.dispatch = e.dispatch;
          x.combine = e.combine;
        } else {
          ExpertKindCosts(c, grouped, dedup, imbalance, &x);
        }
      }
    } else {
      LayoutKindCosts(kinds_[k], c, &x);
      PrecisionKindCosts(kinds_[k], c, &x);
      if (kinds_[k].moe) ExpertKindCosts(c, grouped, dedup, imbalance, &x);
    }
  }

  // Per-kind layer costs, with and without full recompute.
  const bool full = knobs.recompute.mode == RecomputeMode::kFull;
  Slots kind_cost[kNumLayerKinds];
  // Without partial full recompute the no-recompute costs are the same
  // objects (no copies).
  Slots kind_cost_partial[kNumLayerKinds];
  const Slots* kind_cost_norc[kNumLayerKinds] = {};
  double kind_time[kNumLayerKinds] = {};
  double kind_time_norc[kNumLayerKinds] = {};
  double kind_act[kNumLayerKinds] = {};
  double kind_act_norc[kNumLayerKinds] = {};
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds_[k].count == 0) continue;
    kind_cost[k] = LayerCost(kinds_[k], c, /*recompute_this_layer=*/true, kc[k]);
    kind_time[k] = CriticalPath(kind_cost[k]);
    kind_act[k] = LayerActivationBytes(kinds_[k], c, full);
    if (full && knobs.recompute.num_layers > 0) {
      kind_cost_partial[k] = LayerCost(kinds_[k], c, false, kc[k]);
      kind_cost_norc[k] = &kind_cost_partial[k];
      kind_time_norc[k] = CriticalPath(kind_cost_partial[k]);
      kind_act_norc[k] = LayerActivationBytes(kinds_[k], c, false);
    } else {
      kind_cost_norc[k] = &kind_cost[k];
      kind_time_norc[k] = kind_time[k];
      kind_act_norc[k] = kind_act[k];
    }
  }

  // Output layer and loss (last stage), MTP modules (last stage) and the
  // embedding (first stage), per micro-batch.
  const double h = double(model_.hidden_size);
  const double vocab_tp = double(model_.PaddedVocabSize()) / p.tp;
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;
  Slots head;
  {
    const Cost logits = pr != nullptr ? pr->logits : LogitsGemm(c, model_, p.tp);
    const Cost ce_mem = pc != nullptr ? pc->head_mem : CrossEntropyMem(c, model_, p.tp);
    head.Add(kSLogits, logits, fwd_bwd);
    head.Add(kSMemBound, ce_mem);
    if (p.tp > 1) {
      head.Add(kSTpExposed,
               pc != nullptr ? pc->head_tp_ag : HeadTpGather(c, model_, p.tp), 2.0);
    }
    if (model_.mtp_layers > 0) {
      // The MTP module costs what a recomputed layer of its kind costs
      // (LayerCost(kinds_[mtp_kind_], c, true), computed above).
      Slots mtp = kind_cost[mtp_kind_];
      const Cost proj = pr != nullptr ? pr->mtp_proj : MtpProjGemm(c, model_, p.tp);
      mtp.Add(kSAttnProj, proj, fwd_bwd);
      mtp.Add(kSLogits, logits, fwd_bwd);
      mtp.Add(kSMemBound, ce_mem);
      head.AddScaled(mtp, model_.mtp_layers);
    }
  }
  Slots embed;
  embed.Add(kSMemBound, pc != nullptr ? pc->embed_mem : EmbeddingMem(c, model_));
  const double head_time = CriticalPath(head);
  const double embed_time = CriticalPath(embed);

  // --- Pipeline: layers per virtual stage, then per rank.
  const int stages = p.pp * p.vp;
  const int L = model_.num_layers;
  int first = 0, last = 0;
  bool fixed_first = false, fixed_last = false;
  if (p.first_stage_layers || p.last_stage_layers) {
    fixed_first = p.first_stage_layers.has_value();
    fixed_last = p.last_stage_layers.has_value();
    first = p.first_stage_layers.value_or(0);
    last = p.last_stage_layers.value_or(0);
  } else if (stages > L) {
    // One stage holds only the embedding, one only the loss.
    fixed_first = fixed_last = true;
  } else if (stages > 1) {
    // Balance: the last virtual stage also runs the output layer, loss and
    // MTP; the first the embedding (Megatron-Bridge pipeline layouts do the
    // same). Count them in average-layer units.
    double sum = 0;
    for (int l = 0; l < L; ++l) sum += kind_time_norc[layer_kind_index_[l]];
    const double avg = sum / L;
    const double target = (L + (head_time + embed_time) / avg) / stages;
    last = std::max(0, int(std::lround(target - head_time / avg)));
    first = std::max(0, int(std::lround(target - embed_time / avg)));
    fixed_first = fixed_last = true;
    if (first + last > L) first = last = 0, fixed_first = fixed_last = false;
  }
  const int mid_stages = stages - (fixed_first ? 1 : 0) - (fixed_last ? 1 : 0);
  const int rest = L - (fixed_first ? first : 0) - (fixed_last ? last : 0);
  if (mid_stages <= 0 && rest != 0) return Infeasibility::kBadUnevenStages;
  if (mid_stages > 0 && rest < 0) return Infeasibility::kBadUnevenStages;
  // Walk the layers through the virtual stages; rank = stage % pp.
  constexpr int kMaxPp = 256;
  if (p.pp > kMaxPp) return Infeasibility::kTooFewLayers;
  // Only the first pp rows are used; zero just those.
  int counts[kMaxPp][kNumLayerKinds];
  int counts_rc[kMaxPp][kNumLayerKinds];  // of them recomputed (full)
  int layers_on_rank[kMaxPp];
  std::memset(counts, 0, sizeof(counts[0]) * p.pp);
  std::memset(counts_rc, 0, sizeof(counts_rc[0]) * p.pp);
  std::memset(layers_on_rank, 0, sizeof(layers_on_rank[0]) * p.pp);
  {
    int layer = 0;
    int mid_index = 0;
    for (int v = 0; v < stages; ++v) {
      int n_layers;
      if (v == 0 && fixed_first) {
        n_layers = first;
      } else if (v == stages - 1 && fixed_last) {
        n_layers = last;
      } else {
        n_layers = rest / mid_stages + (mid_index < rest % mid_stages ? 1 : 0);
        ++mid_index;
      }
      const int rank = v % p.pp;
      const int end = layer + std::max(0, std::min(n_layers, L - layer));
      if (breakdown) acc->stage_layers.push_back(end - layer);
      const std::array<int, kNumLayerKinds>& lo = kind_prefix_[size_t(layer)];
      const std::array<int, kNumLayerKinds>& hi = kind_prefix_[size_t(end)];
      for (int k = 0; k < kNumLayerKinds; ++k) counts[rank][k] += hi[size_t(k)] - lo[size_t(k)];
      layers_on_rank[rank] += end - layer;
      layer = end;
    }
    if (layer != L) return Infeasibility::kBadUnevenStages;
  }
  const int rc_layers = knobs.recompute.num_layers;
  double rank_time[kMaxPp];
  double sum_time = 0;
  int bottleneck = 0;
  for (int r = 0; r < p.pp; ++r) {
    int left_rc = full ? (rc_layers > 0 ? rc_layers : layers_on_rank[r]) : 0;
    double t = 0;
    for (int k = 0; k < kNumLayerKinds; ++k) {
      const int n_rc = std::min(left_rc, counts[r][k]);
      counts_rc[r][k] = n_rc;
      left_rc -= n_rc;
      t += n_rc * kind_time[k] + (counts[r][k] - n_rc) * kind_time_norc[k];
    }
    if (r == 0) t += embed_time;
    if (r == p.pp - 1) t += head_time;
    rank_time[r] = t;
    sum_time += t;
    if (t > rank_time[bottleneck]) bottleneck = r;
  }

  // PP send/recv: each virtual stage boundary, activation forward and
  // gradient backward, [tr x h] BF16 (sequence-parallel shard).
  Slots pp_slots;
  if (p.pp > 1) {
    const Cost send = pc != nullptr ? pc->pp_send : PpSendRecv(c, model_, shape_, p.pp);
    const double per_mb = 2.0 * p.vp * send.seconds;
    // Megatron overlaps P2P only in the interleaved schedule (vp > 1); the
    // non-interleaved one turns overlap_p2p_comm off (validate_args).
    const bool hidden = knobs.overlap.pp_comm && p.vp > 1;
    pp_slots.Add(hidden ? kSPpHidden : kSPpExposed, {per_mb, send.source});
    // Each virtual-stage visit (forward and backward) also waits on its
    // peer's matching send/recv, exposed whatever the overlap.
    if (stack_.pp_stage_visit_s > 0) {
      pp_slots.AddSeconds(kSPpExposed, 2.0 * p.vp * stack_.pp_stage_visit_s, kPriorBit);
    }
  }
  const double pp_exposed = pp_slots.s[kSPpExposed];
  const double t_max = rank_time[bottleneck] + pp_exposed;
  const double t_avg = sum_time / p.pp + pp_exposed;

  // Per-step slots of the bottleneck rank (the breakdown; Quick needs only
  // the totals below).
  Slots& step = acc->slots;
  // Fill and drain: (pp - 1) / vp stage-times (1F1B / interleaved 1F1B).
  const double bubble = p.pp > 1 ? (p.pp - 1) * t_avg / p.vp : 0.0;
  if (breakdown) {
    step = Slots();
    for (int k = 0; k < kNumLayerKinds; ++k) {
      if (kinds_[k].count == 0) continue;  // zero slots: adds nothing
      const int n_rc = counts_rc[bottleneck][k];
      step.AddScaled(kind_cost[k], double(n_rc) * m_micro);
      step.AddScaled(*kind_cost_norc[k], double(counts[bottleneck][k] - n_rc) * m_micro);
    }
    if (bottleneck == 0) step.AddScaled(embed, m_micro);
    if (bottleneck == p.pp - 1) step.AddScaled(head, m_micro);
    step.AddScaled(pp_slots, m_micro);
    step.AddSeconds(kSBubble, bubble, kPriorBit);
  }

  // --- Parameters per GPU on each rank (for DP traffic and memory).
  auto rank_params = [&](int r, double* dense, double* expert) {
    *dense = 0;
    *expert = 0;
    for (int k = 0; k < kNumLayerKinds; ++k) {
      *dense += counts[r][k] * kinds_[k].params / p.tp;
      *expert += counts[r][k] * kinds_[k].expert_params / (double(p.ep) * p.etp);
    }
    if (r == 0) *dense += embedding_params_ / p.tp;
    if (r == p.pp - 1) {
      if (!model_.tie_word_embeddings || p.pp > 1) *dense += embedding_params_ / p.tp;
      if (model_.mtp_layers > 0) {
        const LayerKindTables& t = kinds_[mtp_kind_];
        *dense += model_.mtp_layers * (t.params + 2 * h * h) / p.tp;
        *expert += model_.mtp_layers * t.expert_params / (double(p.ep) * p.etp);
      }
    }
  };
  const int dp_dense = p.dp * p.cp;                           // grad group
  const int dp_expert = p.tp * p.cp * p.dp / (p.ep * p.etp);  // expert DP
  const LinkSpan dp_span = p.tp * p.cp * p.dp <= domain ? LinkSpan::kNvlinkDomain
                                                        : LinkSpan::kScaleOut;
  double dense_b = 0, expert_b = 0;
  rank_params(bottleneck, &dense_b, &expert_b);

  // --- DP: reduce-scatter gradients, all-gather parameters (distributed
  // optimizer); overlapped with the last backward / first forward.
  double dp_exposed = 0;
  double optimizer_s = 0;
  if (!lora) {
    double dp_total = 0;
    uint8_t src = 0;
    // Group members per NVLink domain: the dense DP (x CP) group strides
    // over tp ranks, the expert DP group over ep x etp.
    const int dense_per_domain = std::max(1, std::min(dp_dense, domain / std::max(1, p.tp)));
    const int expert_per_domain =
        std::max(1, std::min(dp_expert, domain / std::max(1, p.ep * p.etp)));
    for (auto [params, group, per_domain] :
         {std::tuple<double, int, int>{dense_b, dp_dense, dense_per_domain},
          std::tuple<double, int, int>{expert_b, dp_expert, expert_per_domain}}) {
      if (group <= 1 || params <= 0) continue;
      const double bytes = params * kDpCommBytesPerParam;
      const Cost rs = HierarchicalCollective(*cost_, CollectiveKind::kReduceScatter, bytes, group,
                                             dp_span, per_domain);
      const Cost ag = HierarchicalCollective(*cost_, CollectiveKind::kAllGather, bytes, group,
                                             dp_span, per_domain);
      // Distributed optimizer: one reduce-scatter and one all-gather per
      // step. FSDP: per micro-batch, gather for forward and for backward,
      // reduce-scatter after backward.
      dp_total += p.shard_params ? m_micro * (2 * ag.seconds + rs.seconds)
                                 : rs.seconds + ag.seconds;
      src |= SourceBit(rs.source) | SourceBit(ag.source);
    }
    if (dp_total > 0) {
      // Windows: distributed optimizer: backward of the last micro-batch
      // (~2/3 of a stage time) for the reduce-scatter, forward of the first
      // (~1/3) for the gather, together one stage time. FSDP prefetches
      // layer by layer through the whole step.
      const double window = !knobs.overlap.dp_comm ? 0.0
                            : p.shard_params   ? m_micro * t_max
                                               : t_max;
      dp_exposed = std::max(0.0, dp_total - window);
      if (breakdown) {
        step.AddSeconds(kSDpExposed, dp_exposed, src);
        step.AddSeconds(kSDpHidden, dp_total - dp_exposed, src);
      }
    }
    // Optimizer over the local shard.
    const double shard = dense_b / std::max(1, dp_dense) + expert_b / std::max(1, dp_expert);
    const Cost opt = cost_->MemoryBound(shard * kOptimizerBytesPerParam +
                                        (dense_b + expert_b) * kGradNormBytesPerParam);
    // No other term adds to the optimizer slot: it holds exactly opt.
    optimizer_s = opt.seconds;
    if (breakdown) step.Add(kSOptimizer, opt);
  }

  acc->step_time_s = m_micro * t_max + bubble + dp_exposed + optimizer_s;
  acc->tokens_per_sec_per_gpu =
      double(shape_.global_batch) * shape_.seq_len / (acc->step_time_s * shape_.gpus);
  acc->dp = p.dp;

  // --- Memory per GPU: rank 0 holds the most in-flight micro-batches, the
  // last rank the output layer and logits; report the larger.
  const double weight_bytes_per_param =
      2.0 + (c.low_precision ? c.operand_bytes : 0.0);  // bf16 + low-precision copy
  // The layer being recomputed holds its full activations once.
  double one_layer = 0;
  if (full) {
    for (int k = 0; k < kNumLayerKinds; ++k) {
      if (kinds_[k].count > 0) {
        one_layer = std::max(one_layer, LayerActivationBytes(kinds_[k], c, false));
      }
    }
  }
  MemoryBreakdown best;
  double best_total = -1;
  // With pp == 1 the first and last rank are the same (one pass).
  for (int r : {0, p.pp - 1}) {
    if (r == p.pp - 1 && r == 0 && best_total >= 0) break;
    double dense = 0, expert = 0;
    rank_params(r, &dense, &expert);
    MemoryBreakdown mem;
    // FSDP keeps a shard of weights and gradients plus the gathered
    // parameters of about two layers (current + prefetched).
    const double shard_div_dense = p.shard_params ? std::max(1, dp_dense) : 1;
    const double shard_div_expert = p.shard_params ? std::max(1, dp_expert) : 1;
    const double local = dense / shard_div_dense + expert / shard_div_expert;
    const double layers = std::max(1, layers_on_rank[r]);
    const double gathered = p.shard_params ? 2.0 * (dense + expert) / layers : 0.0;
    mem.weights_bytes = (local + gathered) * weight_bytes_per_param;
    if (!lora) {
      const double shard = dense / std::max(1, dp_dense) + expert / std::max(1, dp_expert);
      mem.grads_bytes = (local + gathered) * stack_.grad_buffer_bytes_per_param +
                        shard * kShardMainGradBytes;
      mem.optimizer_bytes = shard * kOptimizerStateBytes;
    }
    // In-flight micro-batches (in virtual-stage units): 1F1B holds pp - r;
    // interleaved 1F1B warms up (pp - r - 1) x 2 + (vp - 1) x pp chunks.
    const double inflight_chunks =
        p.vp == 1 ? std::min(m_micro, p.pp - r)
                  : std::min<double>(double(m_micro) * p.vp,
                                     (p.pp - r - 1) * 2.0 + (p.vp - 1.0) * p.pp + 1.0);
    double act_per_mb = 0;  // all layers of the rank, one micro-batch
    for (int k = 0; k < kNumLayerKinds; ++k) {
      const int n_rc = counts_rc[r][k];
      act_per_mb += n_rc * kind_act[k] + (counts[r][k] - n_rc) * kind_act_norc[k];
    }
    mem.activations_bytes = act_per_mb / p.vp * inflight_chunks;
    if (full) mem.activations_bytes += one_layer;
    if (r == p.pp - 1) {
      mem.activations_bytes += c.tokens_cp * vocab_tp * kLogitsActivationBytes *
                               (1 + model_.mtp_layers);
    }
    mem.comm_buffers_bytes = kNcclBufferBytes;
    if (p.ep > 1) {
      mem.comm_buffers_bytes +=
          2.0 * c.tokens_rank * model_.moe_top_k * h * kActivationBytes;
    }
    if (p.tp > 1 && knobs.overlap.tp_comm) {
      mem.comm_buffers_bytes += 2.0 * c.tokens_cp * h * kActivationBytes;
    }
    mem.reserve_bytes = kFixedReserveBytes + kFragmentationFraction * mem.activations_bytes;
    const double total = mem.Total();
    if (total > best_total) {
      best_total = total;
      best = mem;
    }
  }
  acc->memory = best;
  acc->peak_memory_bytes = best_total;
  return Infeasibility::kNone;
}

Estimate StepModel::Quick(const ParallelConfig& parallel, const Knobs& knobs) const {
  Estimate e;
  Accumulator acc;
  e.reason = Evaluate(parallel, knobs, &acc, /*breakdown=*/false, nullptr);
  if (e.reason != Infeasibility::kNone) return e;
  e.step_time_s = acc.step_time_s;
  e.tokens_per_sec_per_gpu = acc.tokens_per_sec_per_gpu;
  e.peak_memory_bytes = acc.peak_memory_bytes;
  e.fits = acc.peak_memory_bytes <= cost_->cluster().gpu.hbm_bytes;
  return e;
}

Estimate StepModel::Quick(PreparedLayout& prepared, const Knobs& knobs) const {
  Estimate e;
  Accumulator acc;
  e.reason = Evaluate(prepared.parallel, knobs, &acc, /*breakdown=*/false, &prepared);
  if (e.reason != Infeasibility::kNone) return e;
  e.step_time_s = acc.step_time_s;
  e.tokens_per_sec_per_gpu = acc.tokens_per_sec_per_gpu;
  e.peak_memory_bytes = acc.peak_memory_bytes;
  e.fits = acc.peak_memory_bytes <= cost_->cluster().gpu.hbm_bytes;
  return e;
}

absl::StatusOr<Prediction> StepModel::Predict(const ParallelConfig& parallel,
                                              const Knobs& knobs) const {
  if (absl::Status s = Validate(model_, shape_, parallel); !s.ok()) return s;
  Accumulator acc;
  const Infeasibility reason =
      Evaluate(parallel, knobs, &acc, /*breakdown=*/true, nullptr);
  if (reason == Infeasibility::kPrecisionUnsupported) {
    return absl::UnimplementedError(absl::StrCat(
        "GPU ", cost_->cluster().gpu.name, " has no ",
        internal::Sv(PrecisionName(knobs.precision)), " tensor cores"));
  }
  if (reason != Infeasibility::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "infeasible layout: ", internal::Sv(InfeasibilityName(reason)), " (",
        ToString(parallel), ")"));
  }
  Prediction pr;
  pr.step_time_s = acc.step_time_s;
  pr.tokens_per_sec_per_gpu = acc.tokens_per_sec_per_gpu;
  pr.model_flops_per_token =
      model_flops_per_token_ *
      (shape_.objective == Objective::kLora ? kLoraFlopsFraction : 1.0);
  pr.model_tflops_per_gpu =
      pr.model_flops_per_token * pr.tokens_per_sec_per_gpu / units::kTFLOP;
  pr.mfu = pr.model_flops_per_token * pr.tokens_per_sec_per_gpu /
           *PeakDenseFlopsPerSec(cost_->cluster().gpu, knobs.precision);
  pr.memory = acc.memory;
  pr.peak_memory_bytes = acc.peak_memory_bytes;
  pr.hbm_bytes = cost_->cluster().gpu.hbm_bytes;
  pr.fits = pr.peak_memory_bytes <= pr.hbm_bytes;
  bool all_calibrated = true;
  for (int i = 0; i < kNumSlots; ++i) {
    if (acc.slots.s[i] <= 0) continue;
    Term t;
    t.name = kSlots[i].name;
    t.kind = kSlots[i].kind;
    t.seconds = acc.slots.s[i];
    t.source = acc.slots.src[i] == kCalibratedBit ? CostSource::kCalibrated
                                                  : CostSource::kDatasheetPrior;
    all_calibrated = all_calibrated && t.source == CostSource::kCalibrated;
    pr.breakdown.push_back(std::move(t));
  }
  pr.fully_calibrated = all_calibrated;
  pr.interval = IntervalFor(
      pr.tokens_per_sec_per_gpu, model_.IsMoe(),
      UnmeasuredSettings(model_, cost_->cluster(), shape_, parallel, knobs));
  pr.model = model_;
  pr.cluster_name = cost_->cluster().name;
  pr.cluster = cost_->cluster();
  pr.stage_layers = std::move(acc.stage_layers);
  pr.shape = shape_;
  pr.parallel = parallel;
  pr.parallel.dp = acc.dp;
  pr.knobs = knobs;
  return pr;
}

}  // namespace moetune::planner
