// The step model's MaxText terms; see internal/step_model_maxtext.h and,
// for the mapping of knobs onto MaxText keys, step_model_maxtext.h.
//
// Sources for what XLA / MaxText run:
//  - MaxText src/maxtext/configs/base.yml: remat_policy (minimal ... full,
//    custom with per-name remat / device / offload: decoder_layer_input,
//    context, mlpwi, mlpwo, moe_mlpwi_0, moe_mlpwi_1, moe_mlpwo, query_proj,
//    mla_q, mla_kv, out_proj, ...), ragged_buffer_factor (-1: worst-case
//    buffers), weight_dtype float32 / dtype bfloat16, logical_axis_rules;
//    src/maxtext/layers/moe.py (sparse_matmul with ragged_all_to_all under
//    EP, get_ragged_buffer_size, TE grouped GEMM checkpoint names
//    moe_mlpwi_0/1, moe_mlpwo).
//  - XLA GPU flags: xla_gpu_enable_latency_hiding_scheduler,
//    xla_gpu_enable_pipelined_all_gather / _reduce_scatter, async
//    collectives on their own streams; ragged-all-to-all moves the actual
//    rows (xla/backends/gpu/runtime/ragged_all_to_all_thunk.cc): between
//    load/store-accessible peers (one NVLink domain) with the one-shot copy
//    kernel (RaggedAllToAllKernelImpl; its measured rate in
//    MaxTextConstants::ragged_a2a_one_shot_bytes_per_sec, openxla/xla
//    #33386), otherwise as NCCL send/recv pairs.
//  - NVIDIA technical blog 2026-09-14, "Accelerating Dropless MoE Training
//    in JAX with NVIDIA Transformer Engine": the ladder (TE grouped GEMM,
//    multi-stream collectives with NVLink and IB in parallel, MXFP8, host
//    offload of moe_mlpwi_0/1, NCCL EP dispatch/combine with per-node
//    de-duplication).
#include "planner/internal/step_model_maxtext.h"

#include <algorithm>
#include <tuple>

#include "planner/internal/step_model_layers.h"

namespace moetune::planner::step_model_internal {
namespace {

double SlotRange(const Slots& l, int first, int last) {
  double t = 0;
  for (int i = first; i <= last; ++i) t += l.s[i];
  return t;
}

// Rows of the expert-side tensors relative to the balanced routed rows:
// the ragged all-to-all's worst-case receive buffer holds ep x them
// (MaxTextConstants::ragged_buffers_worst_case), NCCL EP the routed rows of
// the busiest GPU (imbalance x).
double ExpertRowsFactor(const Context& c) {
  const Knobs& knobs = *c.knobs;
  const double imbalance = std::max(1.0, knobs.moe_load_imbalance);
  if (c.ep > 1 && knobs.dispatcher == Dispatcher::kAllToAll &&
      c.stack->maxtext.ragged_buffers_worst_case) {
    return double(c.ep);
  }
  return imbalance;
}

// The shapes of XLA's expansion of the routed experts' weight gradients
// (see MaxTextConstants::ragged_dot_wgrad_expanded): g local experts, each a
// dense product over all M rows of the buffer, the rows of the other
// experts masked to zero. M = tr x top_k x etp x the buffer's rows factor;
// fe = the expert FFN width per ETP rank; gate = 2 for a gated MLP.
struct WgradExpansion {
  double h, gate, fe, rows, g;
};
WgradExpansion WgradExpansionOf(const Context& c) {
  const ModelSpec& m = *c.model;
  return {double(m.hidden_size), m.gated_mlp ? 2.0 : 1.0,
          double(m.moe_ffn_hidden_size) / c.etp,
          c.tokens_rank * m.moe_top_k * c.etp * ExpertRowsFactor(c),
          double(m.num_routed_experts / c.ep)};
}

// Its time: for each expert a [k x M] x [M x n] product, fc1 (k = h, n =
// gate x fe) and fc2 (k = fe, n = h): g x (DenseGemm(h, gate fe, M) +
// DenseGemm(fe, h, M)).
Cost RaggedDotWgradExpanded(const Context& c) {
  const WgradExpansion x = WgradExpansionOf(c);
  const Cost fc1 = c.cost->DenseGemm(x.h, x.gate * x.fe, x.rows, c.precision);
  const Cost fc2 = c.cost->DenseGemm(x.fe, x.h, x.rows, c.precision);
  return {x.g * (fc1.seconds + fc2.seconds), CostSource::kDatasheetPrior};
}

// Its materialised masked operands for the largest expert weight gradient,
// fc1: [g, M, h] and [g, M, gate x fe] BF16, g x M x (h + gate x fe) x 2 B
// (fc2's [g, M, fe] and [g, M, h] are smaller). A transient of the layer
// being differentiated, like its working set.
double RaggedDotWgradExpansionBytes(const Context& c) {
  const WgradExpansion x = WgradExpansionOf(c);
  return x.g * x.rows * (x.h + x.gate * x.fe) * kActivationBytes;
}

// XLA's expansion applies: ragged dots (no TE grouped GEMM) under a stack
// with upstream's lowering, and weight gradients to compute.
bool ExpandsRaggedDotWgrad(const Context& c) {
  return c.model->num_routed_experts > 0 && !c.knobs->grouped_gemm &&
         c.stack->maxtext.ragged_dot_wgrad_expanded && !c.lora;
}

bool OffloadsExpertFc1(const Knobs& knobs) {
  return knobs.offload_activations && (knobs.offload_modules & kOffloadExpertFc1) != 0;
}

}  // namespace

int MaxTextSliceGpus(int gpus, int nvlink_domain_gpus) {
  int slice = 1;
  for (int d = 1; d <= std::min(gpus, nvlink_domain_gpus); ++d) {
    if (gpus % d == 0) slice = d;
  }
  return slice;
}

double MaxTextRaggedAllToAllOneShotSeconds(double send_buffer_bytes, double bytes_per_sec) {
  return bytes_per_sec > 0 ? send_buffer_bytes / bytes_per_sec : 0.0;
}

double MaxTextOffloadExposedSeconds(double copy_s, double forward_window_s,
                                    double backward_window_s) {
  return std::max(0.0, copy_s - forward_window_s) + std::max(0.0, copy_s - backward_window_s);
}

double MaxTextLinkContentionSeconds(double ep_link_s, double fsdp_in_flight_s,
                                    double fsdp_link_s, double busy_s) {
  if (ep_link_s <= 0 || fsdp_in_flight_s <= 0 || fsdp_link_s <= 0 || busy_s <= 0) return 0;
  const double u = std::min(1.0, fsdp_link_s / fsdp_in_flight_s);
  const double share = std::max(1.0 - u, 0.5);
  return ep_link_s * std::min(1.0, fsdp_in_flight_s / busy_s) * (1.0 / share - 1.0);
}

bool MaxTextMultiStream(const Knobs& knobs) {
  return knobs.overlap.dp_comm && knobs.overlap.num_comm_streams >= 2;
}

void MaxTextExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                            KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  // TE's cuBLAS grouped GEMM: one call over the experts.
  RoutedExpertGemms(c, /*grouped=*/true, imbalance, kc);
  if (!grouped) {
    // XLA ragged_dot: ragged_dot_time_ratio x the grouped GEMM.
    const double r = c.stack->maxtext.ragged_dot_time_ratio;
    kc->gfc1.seconds *= r;
    kc->gfc2.seconds *= r;
  }
  if (c.ep > 1) {
    const double tokens = c.tokens_rank * imbalance;
    const LinkSpan ep_span =
        c.ep_gpus_per_domain >= c.ep ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
    if (dedup) {
      // NCCL EP (TE): one copy per destination GPU / domain.
      DispatchShape d;
      d.tokens = tokens;
      d.top_k = m.moe_top_k;
      d.ep = c.ep;
      d.ep_gpus_per_domain = c.ep_gpus_per_domain;
      d.dedup = true;
      d.bytes_per_token = h * kActivationBytes;
      kc->dispatch = AddCost(kc->dispatch, cm.Dispatch(d));
      kc->combine = AddCost(kc->combine, cm.Dispatch(d));
    } else {
      // ragged_all_to_all: every (token, expert) copy, BF16. Inside one
      // NVLink domain XLA's one-shot copy kernel moves the whole send buffer
      // at its measured rate (MaxTextRaggedAllToAllOneShotSeconds); across
      // domains NCCL moves the (ep - 1) / ep that leave the GPU (the
      // collective's bus factor).
      const double bytes = tokens * m.moe_top_k * h * kActivationBytes;
      const MaxTextConstants& mt = c.stack->maxtext;
      const Cost a2a =
          mt.ragged_a2a_one_shot && ep_span == LinkSpan::kNvlinkDomain
              ? Cost{MaxTextRaggedAllToAllOneShotSeconds(bytes, mt.ragged_a2a_one_shot_bytes_per_sec),
                     CostSource::kDatasheetPrior}
              : cm.Collective(CollectiveKind::kAllToAll, bytes, c.ep, ep_span);
      kc->dispatch = AddCost(kc->dispatch, a2a);
      kc->combine = AddCost(kc->combine, a2a);
    }
  }
  AddExpertTensorParallelExchange(c, imbalance, kc);
}

double MaxTextOffloadBytes(const StepModel::LayerKindTables& k, const Context& c) {
  const Knobs& knobs = *c.knobs;
  if (!knobs.offload_activations || knobs.offload_modules == 0) return 0;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const uint32_t o = knobs.offload_modules;
  double per_token = 0;  // bytes per token of this GPU's shard
  if (o & kOffloadAttnNorm) per_token += h * kActivationBytes;
  if (o & kOffloadCoreAttn) per_token += double(m.num_attention_heads) * m.v_head_dim * kActivationBytes;
  if (o & kOffloadAttnProj) per_token += h * kActivationBytes;
  if (o & kOffloadMlpNorm) per_token += h * kActivationBytes;
  if (k.moe) {
    const double gate = m.gated_mlp ? 2.0 : 1.0;
    const double rows = m.moe_top_k * ExpertRowsFactor(c) * c.etp;
    const double fe = double(m.moe_ffn_hidden_size) / c.etp;
    // moe_mlpwi_0 and moe_mlpwi_1: the up-projection outputs, BF16.
    if (o & kOffloadExpertFc1) per_token += rows * gate * fe * kActivationBytes;
    if (o & kOffloadMoeAct) per_token += rows * fe * kActivationBytes;
  }
  return c.tokens_rank * per_token;
}

namespace {
// The moe_mlpwi_0/1 part of MaxTextOffloadBytes (0 unless offloaded).
double ExpertFc1OffloadBytes(const StepModel::LayerKindTables& k, const Context& c) {
  if (!k.moe || !OffloadsExpertFc1(*c.knobs)) return 0;
  const ModelSpec& m = *c.model;
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double rows = m.moe_top_k * ExpertRowsFactor(c) * c.etp;
  const double fe = double(m.moe_ffn_hidden_size) / c.etp;
  return c.tokens_rank * rows * gate * fe * kActivationBytes;
}
}  // namespace

namespace {

// Forward seconds of the pieces of one MaxText layer that the comm, remat
// and offload stages read (from MaxTextComputeSlots).
struct MaxTextLayerParts {
  double fwd_bwd = 0;  // 1 + the backward GEMM factor
  double shared_f = 0, gfc1_f = 0, gfc2_f = 0, mlp_f = 0;
  Cost mb_f;                // memory-bound kernels, forward
  double mb_per_elem = 0;   // of mb_f, per activation element
  double ep_fwd = 0;        // dispatch + combine, forward
};

// What remat re-runs for one layer (MaxTextRematSeconds).
struct MaxTextLayerRemat {
  double recompute = 0;
  // The EP exchange that remat re-runs: communication kernels, so they go
  // to the EP slot (a profile counts them as communication), not to
  // recompute; still on the layer's critical path.
  double recompute_ep = 0;
  // What remat re-runs from the routed experts on (their GEMMs and the
  // permute/activation traffic) and whether it does: the re-run before them
  // is the backward window of the moe_mlpwi_0/1 reload.
  double recompute_routed = 0;
  bool routed_rerun = false;
};

void MaxTextComputeSlots(const StepModel::LayerKindTables& k, const Context& c, const KindCosts& kc,
                         Slots* out, MaxTextLayerParts* parts) {
  Slots& l = *out;
  MaxTextLayerParts& pt = *parts;
  const ModelSpec& m = *c.model;
  const CostModel& cm = *c.cost;
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;
  pt.fwd_bwd = fwd_bwd;
  // GEMMs and attention: forward + dgrad + wgrad, as in Megatron.
  l.Add(kSAttnProj, kc.qkv, fwd_bwd);
  l.Add(kSAttnProj, kc.oproj, fwd_bwd);
  l.Add(kSAttnCore, kc.attn_f);
  l.Add(kSAttnCore, kc.attn_b);
  if (!k.moe) {
    pt.mlp_f = kc.fc1.seconds + kc.fc2.seconds;
    l.Add(kSDenseMlp, kc.fc1, fwd_bwd);
    l.Add(kSDenseMlp, kc.fc2, fwd_bwd);
  } else {
    l.Add(kSRouter, kc.router, 3.0);
    if (m.num_shared_experts > 0) {
      pt.shared_f = kc.fc1.seconds + kc.fc2.seconds;
      l.Add(kSShared, kc.fc1, fwd_bwd);
      l.Add(kSShared, kc.fc2, fwd_bwd);
    }
    pt.gfc1_f = kc.gfc1.seconds;
    pt.gfc2_f = kc.gfc2.seconds;
    if (ExpandsRaggedDotWgrad(c)) {
      // Forward and input gradient as ragged dots, weight gradients by the
      // expansion (RaggedDotWgradExpanded).
      l.Add(kSRouted, kc.gfc1, 2.0);
      l.Add(kSRouted, kc.gfc2, 2.0);
      l.Add(kSRouted, RaggedDotWgradExpanded(c));
    } else {
      l.Add(kSRouted, kc.gfc1, fwd_bwd);
      l.Add(kSRouted, kc.gfc2, fwd_bwd);
    }
  }
  // Memory-bound kernels: the same traffic as Megatron's (norms, residuals,
  // RoPE, router, permute/activation/unpermute, casts), forward bytes =
  // tr x 2 B x elements [+ tr x quantized elements x (2 B + operand
  // bytes)], backward kBackwardMemoryBoundFactor x that.
  const double tr = c.tokens_rank;
  double mb_bytes = tr * kActivationBytes * (k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
  if (c.low_precision) mb_bytes += tr * k.mb_quant_elems * (2.0 + c.operand_bytes);
  pt.mb_f = cm.MemoryBound(mb_bytes);
  l.Add(kSMemBound, pt.mb_f, 1.0 + kBackwardMemoryBoundFactor);
  pt.mb_per_elem = pt.mb_f.seconds / std::max(1.0, k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
  // Host: a compiled XLA step, launches only.
  l.AddSeconds(kSLaunch, k.kernels_fwd * (1.0 + kBackwardKernelFactor) * c.launch_s, kPriorBit);
}

void MaxTextCommSlots(const StepModel::LayerKindTables& k, const Context& c, const KindCosts& kc,
                      Slots* out, MaxTextLayerParts* parts) {
  Slots& l = *out;
  MaxTextLayerParts& pt = *parts;
  const ModelSpec& m = *c.model;
  const Knobs& knobs = *c.knobs;
  const double fwd_bwd = pt.fwd_bwd;
  // TP: exposed. CP ring: overlapped with the attention chunks.
  if (c.tp > 1) {
    const double pairs = 1.0 + ((!k.moe || m.num_shared_experts > 0) ? 1.0 : 0.0);
    l.AddSeconds(kSTpExposed, 2.0 * pairs * (kc.tp_ag.seconds + kc.tp_rs.seconds),
                 SourceBit(kc.tp_ag.source) | SourceBit(kc.tp_rs.source));
  }
  if (c.cp > 1) {
    const double fwd_exposed = std::max(0.0, kc.cp_ring.seconds - kc.attn_f.seconds);
    const double bwd_exposed = std::max(0.0, 2 * kc.cp_ring.seconds - kc.attn_b.seconds);
    l.AddSeconds(kSCpExposed, fwd_exposed + bwd_exposed, SourceBit(kc.cp_ring.source));
    l.AddSeconds(kSCpHidden, 3 * kc.cp_ring.seconds - fwd_exposed - bwd_exposed,
                 SourceBit(kc.cp_ring.source));
  }
  // EP: dispatch + combine forward and their transposes backward.
  if (k.moe && (c.ep > 1 || c.etp > 1)) {
    pt.ep_fwd = kc.dispatch.seconds + kc.combine.seconds;
    const double total = 2.0 * pt.ep_fwd;
    const uint8_t src = SourceBit(kc.dispatch.source) | SourceBit(kc.combine.source);
    // ragged_all_to_all is an XLA async collective: with multi-stream
    // collectives the shared experts (not on the routed path) run while it
    // is in flight. TE's NCCL EP dispatch/combine is an FFI custom call on
    // the compute stream: nothing overlaps it (A2A overlap is the blog's
    // announced next step).
    const bool async = knobs.dispatcher == Dispatcher::kAllToAll;
    const double hidden = async && MaxTextMultiStream(knobs) && knobs.overlap.ep_comm
                              ? std::min(total, pt.shared_f * fwd_bwd)
                              : 0.0;
    l.AddSeconds(kSEpHidden, hidden, src);
    l.AddSeconds(kSEpExposed, total - hidden, src);
    l.AddSeconds(kSOverlapSlowdown, hidden * (c.overlap_slowdown - 1.0), src);
  }
}

MaxTextLayerRemat MaxTextRematSeconds(const StepModel::LayerKindTables& k, const Context& c, const KindCosts& kc,
                                 const MaxTextLayerParts& pt, bool recompute_this_layer, const Slots& l) {
  const ModelSpec& m = *c.model;
  const Recompute& rc = c.knobs->recompute;
  const bool fc1_offloaded = k.moe && OffloadsExpertFc1(*c.knobs);
  const double topk_traffic = pt.mb_per_elem * k.mb_topk_elems;
  MaxTextLayerRemat r;
  if (rc.mode == RecomputeMode::kFull && recompute_this_layer) {
    for (int i = kSAttnProj; i <= kSLogits; ++i) r.recompute += l.s[i] / pt.fwd_bwd;
    r.recompute += kc.attn_f.seconds + pt.mb_f.seconds;
    r.recompute_ep += pt.ep_fwd;
    r.routed_rerun = k.moe;
    r.recompute_routed = k.moe ? pt.gfc1_f + pt.gfc2_f + topk_traffic : 0.0;
  } else if (rc.mode == RecomputeMode::kSelective) {
    const double h = double(m.hidden_size);
    if (rc.modules & kRecomputeCoreAttn) r.recompute += kc.attn_f.seconds;  // context
    // The attention projections' forward GEMMs.
    if (rc.modules & kRecomputeMlaUpProj) r.recompute += kc.qkv.seconds;
    // Norms and out_proj.
    if (rc.modules & kRecomputeLayerNorm) r.recompute += pt.mb_per_elem * 4.0 * h + kc.oproj.seconds;
    if ((rc.modules & kRecomputeMoeAct) && k.moe) {
      r.recompute += pt.mb_per_elem * 3.0 * m.moe_top_k * double(m.moe_ffn_hidden_size);
    }
    if ((rc.modules & kRecomputeMlp) && !k.moe) r.recompute += pt.mlp_f;
    if ((rc.modules & kRecomputeSharedExperts) && k.moe) r.recompute += pt.shared_f;
    if ((rc.modules & kRecomputeMoe) && k.moe) {
      // The dispatch re-runs (its output is not a named checkpoint); the
      // up-projection GEMMs only when moe_mlpwi_0/1 are not offloaded.
      r.recompute_ep += kc.dispatch.seconds;
      r.recompute_routed = pt.gfc2_f + (fc1_offloaded ? 0.0 : pt.gfc1_f) + topk_traffic;
      r.recompute += r.recompute_routed;
      r.routed_rerun = true;
    }
  }
  return r;
}

void MaxTextOffloadSlots(const StepModel::LayerKindTables& k, const Context& c, const KindCosts& kc,
                         const MaxTextLayerParts& pt, const MaxTextLayerRemat& r, Slots* out) {
  Slots& l = *out;
  const CostModel& cm = *c.cost;
  // Offload: copies on the copy engines beside the layer's work.
  const double off_bytes = MaxTextOffloadBytes(k, c);
  if (off_bytes > 0) {
    const double compute = SlotRange(l, kSAttnCore, kSRecompute) + r.recompute_ep;
    const double fc1_bytes =
        c.stack->maxtext.pipelined_host_offloading ? 0.0 : ExpertFc1OffloadBytes(k, c);
    // The other offloaded names (or all, with the pipelined host
    // offloading): the whole layer's windows.
    const Cost copy = cm.HostOffload(off_bytes - fc1_bytes);
    double exposed = MaxTextOffloadExposedSeconds(copy.seconds, compute / 3, 2 * compute / 3);
    double hidden = 2 * copy.seconds - exposed;
    uint8_t src = SourceBit(copy.source);
    if (fc1_bytes > 0) {
      // moe_mlpwi_0/1 confined to their own scan iterations. Forward: after
      // the up-projection, the wo GEMM, the activation/unpermute traffic,
      // the combine and the (independent) shared experts. Backward: what
      // remat re-runs before the routed experts, or without their remat
      // the combine's transpose and wo's input gradient before the
      // activation's backward reads them.
      const Cost fc1 = cm.HostOffload(fc1_bytes);
      const double fwd_window =
          pt.gfc2_f + pt.mb_per_elem * k.mb_topk_elems + kc.combine.seconds + pt.shared_f;
      const double bwd_window = r.routed_rerun ? r.recompute - r.recompute_routed + r.recompute_ep
                                             : r.recompute + r.recompute_ep + kc.combine.seconds + pt.gfc2_f;
      const double e = MaxTextOffloadExposedSeconds(fc1.seconds, fwd_window, bwd_window);
      exposed += e;
      hidden += 2 * fc1.seconds - e;
      src |= SourceBit(fc1.source);
    }
    l.AddSeconds(kSOffloadExposed, exposed, src);
    l.AddSeconds(kSOffloadHidden, hidden, src);
  }
}

}  // namespace

Slots MaxTextLayerCost(const StepModel::LayerKindTables& k, const Context& c,
                       bool recompute_this_layer, const KindCosts& kc) {
  Slots l;
  MaxTextLayerParts parts;
  MaxTextComputeSlots(k, c, kc, &l, &parts);
  MaxTextCommSlots(k, c, kc, &l, &parts);
  const MaxTextLayerRemat remat = MaxTextRematSeconds(k, c, kc, parts, recompute_this_layer, l);
  if (remat.recompute > 0) l.AddSeconds(kSRecompute, remat.recompute, kPriorBit);
  if (remat.recompute_ep > 0) {
    l.AddSeconds(kSEpExposed, remat.recompute_ep,
                 SourceBit(kc.dispatch.source) | SourceBit(kc.combine.source));
  }
  MaxTextOffloadSlots(k, c, kc, parts, remat, &l);
  return l;
}

double MaxTextLayerActivationBytes(const StepModel::LayerKindTables& k, const Context& c,
                                   bool full_recompute) {
  const ModelSpec& m = *c.model;
  const Knobs& knobs = *c.knobs;
  const double h = double(m.hidden_size);
  // decoder_layer_input: always kept on the device (the scan carry).
  const double carry = h * kActivationBytes;
  if (full_recompute) return c.tokens_rank * carry;
  const uint32_t r =
      knobs.recompute.mode == RecomputeMode::kSelective ? knobs.recompute.modules : 0u;
  const double gemm_in = c.low_precision ? c.operand_bytes : kActivationBytes;
  const double core_out = double(m.num_attention_heads) * m.v_head_dim;
  double bytes = carry;
  // Attention projections (query_proj / key_proj / value_proj, or MLA's
  // mla_q / mla_kv latents and up-projections): all of act_attn but the two
  // block inputs and the core output, plus the MLA up-projection outputs.
  const double proj_elems = k.act_attn - 2 * h - core_out + k.act_mla_up;
  if (!(r & kRecomputeMlaUpProj)) bytes += proj_elems * kActivationBytes;
  if (!(r & kRecomputeCoreAttn)) bytes += core_out * gemm_in;  // context
  // Norm outputs (GEMM inputs) and out_proj's output (the residual input
  // of the MLP block).
  if (!(r & kRecomputeLayerNorm)) bytes += k.act_norm * gemm_in + h * kActivationBytes;
  if (!k.moe) {
    if (!(r & kRecomputeMlp)) bytes += k.act_mlp * kActivationBytes;
  } else {
    const double rows = m.moe_top_k * ExpertRowsFactor(c) * c.etp;  // per token
    const double fe = double(m.moe_ffn_hidden_size) / c.etp;
    const double gate = m.gated_mlp ? 2.0 : 1.0;
    const bool fc1_offloaded = OffloadsExpertFc1(knobs);
    if (!(r & kRecomputeMoe)) {
      // Sorted inputs and the down-projection output.
      bytes += rows * h * gemm_in + rows * h * kActivationBytes;
    }
    if (!(r & kRecomputeMoe) && !fc1_offloaded) {
      bytes += rows * gate * fe * kActivationBytes;  // moe_mlpwi_0/1
    }
    if (!(r & kRecomputeMoe) && !(r & kRecomputeMoeAct)) bytes += rows * fe * gemm_in;
    if (!(r & kRecomputeSharedExperts)) bytes += k.act_shared * kActivationBytes;
  }
  return c.tokens_rank * bytes;
}

double MaxTextEpSecondsPerStep(const RankLayers& ranks, int rank, const KindResults& kr, int m_micro) {
  double ep_step = 0;
  for (int k = 0; k < kNumLayerKinds; ++k) {
    ep_step += ranks.counts[rank][k] * double(m_micro) *
               (kr.cost[k].s[kSEpExposed] + kr.cost[k].s[kSEpHidden]);
  }
  return ep_step;
}

namespace {

// One collective's time and the seconds it holds NVLink and the NICs.
struct Phased {
  Cost cost;
  double nvlink_s = 0, nics_s = 0;
};

// The step's FSDP (or data-axis) collectives of one rank, before overlap.
struct MaxTextDpTraffic {
  double total = 0;                  // seconds on the collective stream(s)
  double nvlink_s = 0, nics_s = 0;   // of them, holding NVLink / the NICs
  uint8_t src = 0;
};

MaxTextDpTraffic MaxTextDpCollectives(const CostModel& cost, const ParallelConfig& p,
                                      const Knobs& knobs, const MaxTextConstants& mt, int m_micro,
                                      int domain, const RankParams& params) {
  const int dp_dense = DenseDpGroup(p);
  const int dp_expert = ExpertDpGroup(p);
  const bool multi = MaxTextMultiStream(knobs);
  MaxTextDpTraffic t;
  const int dense_per_domain = std::max(1, std::min(dp_dense, domain / std::max(1, p.tp)));
  const int expert_per_domain =
      std::max(1, std::min(dp_expert, domain / std::max(1, p.ep * p.etp)));
  // One collective over `group` ranks, `per_domain` in each NVLink domain:
  // the scale-out phase (each member's NIC carries bytes / per_domain) and
  // the NVLink phase (the whole buffer), in parallel or in sequence.
  // Both groups stride over the tp x cp x dp GPUs of the data-parallel
  // replicas (as the Megatron DP term).
  const LinkSpan span = p.tp * p.cp * p.dp <= domain ? LinkSpan::kNvlinkDomain
                                                     : LinkSpan::kScaleOut;
  auto collective = [&](CollectiveKind kind, double bytes, int group, int per_domain) {
    const Cost flat = cost.Collective(kind, bytes, group, span);
    if (span != LinkSpan::kScaleOut || per_domain <= 1 ||
        flat.source == CostSource::kCalibrated) {
      return span == LinkSpan::kScaleOut ? Phased{flat, 0.0, flat.seconds}
                                         : Phased{flat, flat.seconds, 0.0};
    }
    const Cost nics = cost.Collective(kind, bytes / per_domain, group, span);
    const Cost nvlink = cost.Collective(kind, bytes, per_domain, LinkSpan::kNvlinkDomain);
    const double t = multi ? std::max(nics.seconds, nvlink.seconds)
                           : nics.seconds + nvlink.seconds;
    return Phased{Cost{t, CostSource::kDatasheetPrior}, nvlink.seconds, nics.seconds};
  };
  if (p.shard_params) {
    for (auto [n_params, group, per_domain] :
         {std::tuple<double, int, int>{params.dense, dp_dense, dense_per_domain},
          std::tuple<double, int, int>{params.expert, dp_expert, expert_per_domain}}) {
      if (group <= 1 || n_params <= 0) continue;
      const Phased ag = collective(CollectiveKind::kAllGather,
                                   n_params * mt.fsdp_gather_bytes_per_param, group, per_domain);
      const Phased rs = collective(CollectiveKind::kReduceScatter,
                                   n_params * mt.fsdp_reduce_bytes_per_param, group, per_domain);
      t.total += m_micro * (2 * ag.cost.seconds + rs.cost.seconds);
      t.nvlink_s += m_micro * (2 * ag.nvlink_s + rs.nvlink_s);
      t.nics_s += m_micro * (2 * ag.nics_s + rs.nics_s);
      t.src |= SourceBit(ag.cost.source) | SourceBit(rs.cost.source);
    }
  } else {
    // Replicated weights (pure data axis): one gradient all-reduce per step.
    for (auto [n_params, group, per_domain] :
         {std::tuple<double, int, int>{params.dense, dp_dense, dense_per_domain},
          std::tuple<double, int, int>{params.expert, dp_expert, expert_per_domain}}) {
      if (group <= 1 || n_params <= 0) continue;
      const Phased ar = collective(CollectiveKind::kAllReduce,
                                   n_params * mt.fsdp_reduce_bytes_per_param, group, per_domain);
      t.total += ar.cost.seconds;
      t.nvlink_s += ar.nvlink_s;
      t.nics_s += ar.nics_s;
      t.src |= SourceBit(ar.cost.source);
    }
  }
  return t;
}

}  // namespace

DpAndOptimizer MaxTextFsdpAndOptimizer(const CostModel& cost, const ParallelConfig& p,
                                       const Knobs& knobs, const MaxTextConstants& mt,
                                       int m_micro, double busy_s, double ep_step_s,
                                       const RankParams& params, Slots* step) {
  const int domain = MaxTextSliceGpus(p.tp * p.cp * p.dp * p.pp,
                                      cost.cluster().nvlink_domain_gpus);
  const bool multi = MaxTextMultiStream(knobs);
  DpAndOptimizer out;
  const MaxTextDpTraffic t = MaxTextDpCollectives(cost, p, knobs, mt, m_micro, domain, params);
  const double total = t.total;
  const uint8_t src = t.src;
  if (total > 0) {
    double window = 0;
    if (knobs.overlap.dp_comm) window = multi ? busy_s : std::max(0.0, busy_s - ep_step_s);
    const double exposed = std::max(0.0, total - window);
    // The hidden part runs NCCL kernels on SMs beside the compute, which
    // slows by the cost model's OverlapSlowdown (as the hidden TP/EP terms).
    const double slowdown =
        (total - exposed) * (cost.OverlapSlowdown(knobs.overlap.num_comm_streams) - 1.0);
    // Multi-stream: the EP exchange shares its link with the collectives
    // in flight beside it, where it is bandwidth-bound (NCCL EP, or an NCCL
    // ragged all-to-all; XLA's one-shot kernel inside an NVLink domain runs
    // at ~2% of NVLink, MaxTextConstants::ragged_a2a_one_shot_bytes_per_sec).
    double contention = 0;
    if (multi && p.ep > 1) {
      const bool ep_in_slice = p.tp * p.ep * p.etp <= domain;
      const bool one_shot = knobs.dispatcher == Dispatcher::kAllToAll &&
                            mt.ragged_a2a_one_shot &&
                            p.ep * p.etp <= cost.cluster().nvlink_domain_gpus;
      if (!one_shot) {
        contention = MaxTextLinkContentionSeconds(
            ep_step_s, total, ep_in_slice ? t.nvlink_s : t.nics_s, busy_s);
      }
    }
    out.dp_exposed_s = exposed + slowdown + contention;
    if (step != nullptr) {
      step->AddSeconds(kSDpExposed, exposed, src);
      step->AddSeconds(kSDpHidden, total - exposed, src);
      step->AddSeconds(kSOverlapSlowdown, slowdown, src);
      step->AddSeconds(kSEpExposed, contention, src);
    }
  }
  // MaxText's optax Adam: its own state (MaxTextConstants), Megatron's fp32
  // traffic per parameter.
  const Cost opt = OptimizerStepCost(cost, params, DenseDpGroup(p), ExpertDpGroup(p),
                                     AdamBytesPerParam{}.step_traffic);
  out.optimizer_s = opt.seconds;
  if (step != nullptr) step->Add(kSOptimizer, opt);
  return out;
}

PeakMemory MaxTextPeakMemory(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                             int m_micro, const RankLayers& ranks, const KindResults& kinds) {
  const ModelSpec& m = *plan.model;
  const MaxTextConstants& mt = plan.stack->maxtext;
  const double h = double(m.hidden_size);
  const int dp_dense = DenseDpGroup(p);
  const int dp_expert = ExpertDpGroup(p);
  // The working set of the layer being differentiated: its activations as
  // if nothing were rematerialised (the largest kind).
  Knobs none = *c.knobs;
  none.recompute = Recompute();
  none.offload_activations = false;
  Context cn = c;
  cn.knobs = &none;
  double one_layer = 0;
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (plan.kinds[k].count > 0) {
      one_layer = std::max(one_layer, MaxTextLayerActivationBytes(plan.kinds[k], cn, false));
    }
  }
  PeakMemory best;
  best.total_bytes = -1;
  for (int r : {0, p.pp - 1}) {
    if (r == p.pp - 1 && r == 0 && best.total_bytes >= 0) break;
    const RankParams params = ParamsOnRank(plan, p, ranks.counts[r], r);
    const double div_dense = p.shard_params ? std::max(1, dp_dense) : 1;
    const double div_expert = p.shard_params ? std::max(1, dp_expert) : 1;
    const double local = params.dense / div_dense + params.expert / div_expert;
    const double layers = std::max(1, ranks.layers_on_rank[r]);
    const double one_layer_params = (params.dense + params.expert) / layers;
    const double low = c.low_precision ? c.operand_bytes : 0.0;
    MemoryBreakdown mem;
    mem.weights_bytes = local * mt.master_weight_bytes_per_param +
                        (p.shard_params ? mt.gathered_layers * one_layer_params * (2.0 + low)
                                        : local * (2.0 + low));
    if (!c.lora) {
      mem.grads_bytes = local * mt.grad_bytes_per_param +
                        (p.shard_params ? one_layer_params * mt.fsdp_reduce_bytes_per_param : 0);
      mem.optimizer_bytes = local * mt.adam_state_bytes_per_param;
    }
    // Saved activations: 1F1B in-flight micro-batches as Megatron's.
    const double inflight = std::min(m_micro, p.pp - r);
    double act = 0;
    for (int k = 0; k < kNumLayerKinds; ++k) {
      const int n_rc = ranks.counts_rc[r][k];
      act += n_rc * kinds.act[k] + (ranks.counts[r][k] - n_rc) * kinds.act_norc[k];
    }
    mem.activations_bytes = act / p.vp * inflight + one_layer;
    // Layer kinds 2 and 3 are the MoE kinds (StepModel::layer_kind).
    if (ExpandsRaggedDotWgrad(c) && ranks.counts[r][2] + ranks.counts[r][3] > 0) {
      mem.activations_bytes += RaggedDotWgradExpansionBytes(c);
    }
    if (r == p.pp - 1) {
      mem.activations_bytes += c.tokens_cp * (double(m.PaddedVocabSize()) / p.tp) *
                               kLogitsActivationBytes * (1 + m.mtp_layers);
    }
    mem.comm_buffers_bytes = kNcclBufferBytes;
    if (p.ep > 1) {
      const bool ragged = c.knobs->dispatcher == Dispatcher::kAllToAll &&
                          mt.ragged_buffers_worst_case;
      const double rows = c.tokens_rank * m.moe_top_k;
      mem.comm_buffers_bytes += (ragged ? (1.0 + p.ep) : 2.0) * rows * h * kActivationBytes;
    }
    mem.reserve_bytes = kFixedReserveBytes;
    const double total = mem.Total();
    if (total > best.total_bytes) {
      best.total_bytes = total;
      best.memory = mem;
    }
    if (r == p.pp - 1) {
      best.last_stage = mem;
      best.last_stage_total_bytes = total;
    }
  }
  return best;
}

}  // namespace moetune::planner::step_model_internal
