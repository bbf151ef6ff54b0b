// Per-layer costs of the step model; see internal/step_model_layers.h.
#include "planner/internal/step_model_layers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>

#include "planner/flops.h"
#include "planner/internal/step_model_maxtext.h"
#include "planner/internal/step_model_memory.h"

namespace moetune::planner::step_model_internal {

double AttentionForwardKernels(const ModelSpec& m) {
  return 12 + (m.attention == AttentionType::kMla ? 6 : 0) +
         (m.attention == AttentionType::kGqa && m.arch.qk_layernorm ? 2 : 0);
}

double CpForwardExtraKernels(int cp) { return 4.0 * cp - 2.0; }

double CpBackwardExtraKernels(int cp) {
  return kCudnnAttnBwdKernels * (cp - 1) + 4.0 * cp + 2.0;
}

double CpExtraKernels(int cp) { return CpForwardExtraKernels(cp) + CpBackwardExtraKernels(cp); }

double CpForwardMergeBytes(int cp, double o_bytes, double kv_bytes) {
  return 2.0 * kv_bytes + (2.0 + 2.25 * (cp - 1)) * o_bytes;
}

double CpBackwardMergeBytes(int cp, double q_bytes, double kv_bytes) {
  return 3.0 * cp * (q_bytes + kv_bytes);
}

void FillLayerKindTables(const ModelSpec& model, int layer, int seq_len,
                         LayerKindTables* t) {
  const double h = double(model.hidden_size);
  const double n = model.num_attention_heads;
  const double gate = model.gated_mlp ? 2.0 : 1.0;
  t->macs = LayerMacsPerToken(model, layer, seq_len);
  t->causal_context = AverageCausalContext(model, layer, seq_len);
  const double o_macs = n * model.v_head_dim * h;
  t->qkv_out_dim = (t->macs.attention_proj - o_macs) / h;
  t->num_proj_gemms = model.attention == AttentionType::kMla ? 5 : 2;
  t->params = model.AttentionParamsPerLayer() +
              (t->moe ? model.ExpertParams() * model.num_shared_experts +
                            h * model.num_routed_experts
                      : model.DenseMlpParams());
  t->expert_params = t->moe ? model.ExpertParams() * model.num_routed_experts : 0;

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
  // Qwen3's per-head q and k RMSNorms (GQA with qk_layernorm: Megatron-
  // Core's q_layernorm / k_layernorm, TENorm modules of their own): read +
  // write every q and k element -- for GQA the elements RoPE rotates -- two
  // kernels. (MLA's qk_layernorm is its latent norms, counted above.)
  const double qk_norm_elems =
      model.attention == AttentionType::kGqa && model.arch.qk_layernorm ? rope_elems : 0.0;
  t->mb_attn_elems = 2 * h + 3 * h + 2 * rope_elems + 2 * latents + 2 * qk_norm_elems;
  t->mb_quant_elems = h + core_out + latents;
  t->act_norm = 2 * h;  // attention and MLP norm outputs
  t->act_attn = 2 * h + core_out + latents +
                (model.attention == AttentionType::kMla ? 0.0 : q_dim + kv_dim);
  t->act_mla_up = model.attention == AttentionType::kMla ? q_dim + kv_dim : 0.0;
  t->core_attn_qkv = q_dim + kv_dim;
  t->kernels_fwd = AttentionForwardKernels(model);
  t->lora_io_elems = (h + t->qkv_out_dim) + (core_out + h);
  if (!t->moe) {
    const double f = double(model.ffn_hidden_size);
    // Norm, residual, activation (read gate f, write f).
    t->mb_mlp_elems = 2 * h + 3 * h + (gate + 1) * f;
    t->mb_quant_elems += h + f;
    t->act_mlp = (gate + 1) * f + h;
    t->lora_io_elems += (h + gate * f) + (f + h);
    t->kernels_fwd += 8;
  } else {
    const double fe = double(model.moe_ffn_hidden_size);
    const double fs = fe * model.num_shared_experts;
    const double k = model.moe_top_k;
    // Norm, residual, router softmax/top-k (fp32 logits: ~6 elements per
    // expert), shared-expert activation.
    t->mb_mlp_elems = 2 * h + 3 * h + 6.0 * model.num_routed_experts +
                      (fs > 0 ? (gate + 1) * fs : 0.0);
    // Permute (read h, write k h), activation (read gate f, write f) per
    // copy, unpermute with weighted sum (read k h, write h).
    t->mb_topk_elems = (h + k * h) + k * (gate + 1) * fe + (k * h + h);
    t->mb_quant_elems += h + k * h + k * fe + (fs > 0 ? h + fs : 0.0);
    // Saved for backward: the permuted inputs (fc1's), fc1's output (the
    // activation's input) and the routing scores; Megatron-Core applies the
    // routing probabilities inside the activation (experts.py,
    // activation_func_with_probs), so the unpermute only sums and the
    // expert outputs are not kept.
    t->act_moe = k * h + k * gate * fe + 2.0 * model.num_routed_experts;
    t->act_moe_act = k * fe;
    t->moe_fc1_out = k * gate * fe;
    t->act_shared = fs > 0 ? (gate + 1) * fs : 0.0;
    t->lora_io_elems += k * ((h + gate * fe) + (fe + h)) +
                        (fs > 0 ? (h + gate * fs) + (fs + h) : 0.0);
    t->kernels_fwd += 20 + (fs > 0 ? 6 : 0);
  }
}

double AttentionTpGatherWidth(const ModelSpec& m) {
  const double h = double(m.hidden_size);
  if (m.attention != AttentionType::kMla) return h;
  const double q = m.q_lora_rank > 0 ? double(m.q_lora_rank) : h;
  return q + double(m.kv_lora_rank) + double(m.qk_rope_head_dim);
}

double CombinedOneFOneBPairedFraction(int pp, int vp, int micro_batches) {
  if (micro_batches < 1 || pp < 1 || vp < 1) return 0.0;
  const double n = double(micro_batches) * (pp > 1 ? vp : 1);
  // The passes that run alone: the first stage's warmup forwards, the same
  // schedules.py count its in-flight chunks are (1 without pipelining).
  const double alone = InflightChunks(pp, vp, /*r=*/0, micro_batches);
  return std::max(0.0, n - std::min(n, alone)) / n;
}

double GemmWaveEfficiency(double m, double n, int sms, int concurrent) {
  if (sms <= 0 || m <= 0 || n <= 0) return 1.0;
  // Integer tile counts (ceil(ceil(m) / t) = ceil(m / t)): the search
  // prices every layout's split GEMMs with this.
  const int64_t c = std::max(1, concurrent);
  const int64_t mi = int64_t(std::ceil(m));
  const int64_t ni = int64_t(std::ceil(n));
  constexpr int64_t kRows = int64_t(kGemmTileRows);
  constexpr int64_t kCols = int64_t(kGemmTileCols);
  // Tile slots the waves occupy, in output elements, one orientation.
  auto slots = [&](int64_t tr, int64_t tc) {
    const int64_t tiles = c * ((mi + tr - 1) / tr) * ((ni + tc - 1) / tc);
    return double((tiles + sms - 1) / sms) * sms * double(tr * tc);
  };
  const double fewest = std::min(slots(kRows, kCols), slots(kCols, kRows));
  return std::min(1.0, double(c) * m * n / fewest);
}

double TpOverlapChunkingSeconds(
    const std::function<double(double, double, double, int)>& gemm_s, double tokens, int tp,
    double column_n, double row_k, double hidden) {
  if (tp <= 1) return 0;
  const double chunk = tokens / tp;
  const double pipe = tokens / kTpPipelineSplits;
  // Ring exchange: tp chunks of the column fprop and of the row dgrad.
  const double column_fprop =
      tp * gemm_s(chunk, column_n, hidden, tp) - gemm_s(tokens, column_n, hidden, 1);
  const double row_dgrad = tp * gemm_s(chunk, row_k, hidden, tp) - gemm_s(tokens, row_k, hidden, 1);
  // Pipeline: kTpPipelineSplits chunks of the row fprop.
  const double row_fprop = kTpPipelineSplits * gemm_s(pipe, hidden, row_k, kTpPipelineSplits) -
                           gemm_s(tokens, hidden, row_k, 1);
  return std::max(0.0, column_fprop) + std::max(0.0, row_dgrad) + std::max(0.0, row_fprop);
}

double TpPairExposedSeconds(const TpBlockCollectives& t, double column_s, double row_s,
                            double wgrad_share, double fraction) {
  auto shows = [&](double comm_s, double gemm_s) {
    return std::max(0.0, comm_s - fraction * gemm_s);
  };
  return shows(t.fwd_ag_s, column_s) + shows(t.fwd_rs_s, row_s) + shows(t.bwd_ag_s, row_s) +
         shows(t.bwd_regather_s, column_s) + shows(t.bwd_rs_s, column_s * wgrad_share);
}

bool TpOverlapSurvivesEpOverlap(GpuGeneration generation, bool ep_overlap_schedule) {
  return !(ep_overlap_schedule && generation == GpuGeneration::kHopper);
}

double EpOverlapAchievedFraction(const StackConstants& stack, double nvlink_share) {
  const double phi = std::clamp(nvlink_share, 0.0, 1.0);
  return (1.0 - phi) * stack.ep_overlap_fraction + phi * stack.ep_overlap_nvlink_fraction;
}

PairedWindow OverlapWindow(double comm_s, double compute_s, double slowdown) {
  PairedWindow w;
  const double s = std::max(1.0, slowdown);
  w.hidden_s = std::max(0.0, std::min(comm_s, compute_s * s));
  w.exposed_s = std::max(0.0, comm_s - w.hidden_s);
  w.slowdown_s = w.hidden_s * (1.0 - 1.0 / s);
  return w;
}

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
  c.dp_outermost = p.dp_outermost;
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
  c.ep_paired_fraction = CombinedOneFOneBPairedFraction(p.pp, p.vp, m_micro);
  using Unfused = StackConstants::UnfusedSinkLayers;
  c.sinks_unfused_sliding =
      model->attention_sinks && stack->unfused_sink_layers != Unfused::kNone;
  c.sinks_unfused_full =
      model->attention_sinks && stack->unfused_sink_layers == Unfused::kAll;
  c.seq_len = shape.seq_len;
  return c;
}

namespace {
void SetPrecision(Context* c, Precision precision) {
  c->precision = precision;
  c->low_precision = precision != Precision::kBf16;
  c->operand_bytes = GemmOperandBytes(precision);
}
}  // namespace

void SetKnobs(Context* c, const Knobs& knobs) {
  c->knobs = &knobs;
  SetPrecision(c, knobs.precision);
  c->launch_s = c->cost->KernelLaunchSeconds(knobs.cuda_graphs);
  c->overlap_slowdown = c->cost->OverlapSlowdown(knobs.overlap.num_comm_streams);
}

// Lookups that depend only on the layout.
void LayoutKindCosts(const LayerKindTables& k, const Context& c,
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
    const double w = AttentionTpGatherWidth(m);
    kc->tp_attn_rs =
        w == h ? kc->tp_rs
               : cm.Collective(CollectiveKind::kReduceScatter, c.tokens_cp * w * kActivationBytes,
                               c.tp, c.tp_span);
  }
  if (c.cp > 1) {
    const double kv_elems =
        m.attention == AttentionType::kMla
            ? double(m.num_attention_heads) * (m.QkHeadDim() + m.v_head_dim)
            : 2.0 * m.num_kv_heads * m.head_dim;
    const double chunk = c.tokens_cp * kv_elems / c.tp * kActivationBytes;
    kc->cp_ring =
        cm.Collective(CollectiveKind::kAllGather, chunk * c.cp, c.cp, c.cp_span);
    const double heads = double(m.num_attention_heads) / c.tp;
    const double q_bytes = c.tokens_cp * heads * m.QkHeadDim() * kActivationBytes;
    const double o_bytes = c.tokens_cp * heads * m.v_head_dim * kActivationBytes;
    kc->cp_merge_f = cm.MemoryBound(CpForwardMergeBytes(c.cp, o_bytes, chunk));
    kc->cp_merge_b = cm.MemoryBound(CpBackwardMergeBytes(c.cp, q_bytes, chunk));
  }
}

// Dense GEMMs at c.precision.
void PrecisionKindCosts(const LayerKindTables& k, const Context& c,
                        KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const double tc = c.tokens_cp;
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double o_k = double(m.num_attention_heads) * m.v_head_dim / c.tp;
  kc->qkv = cm.DenseGemm(tc, k.qkv_out_dim / c.tp, h, c.precision);
  kc->oproj = cm.DenseGemm(tc, h, o_k, c.precision);
  // The MLP block's width per rank: the dense MLP, or the shared experts of
  // a MoE layer (0: none).
  const double mlp_n = !k.moe ? double(m.ffn_hidden_size) / c.tp
                       : m.num_shared_experts > 0
                           ? double(m.moe_ffn_hidden_size) * m.num_shared_experts / c.tp
                           : 0.0;
  if (mlp_n > 0) {
    kc->fc1 = cm.DenseGemm(tc, gate * mlp_n, h, c.precision);
    kc->fc2 = cm.DenseGemm(tc, h, mlp_n, c.precision);
  }
  if (c.tp > 1) {
    const double in_bytes = c.low_precision ? c.operand_bytes : kActivationBytes;
    kc->tp_in_ag = cm.Collective(CollectiveKind::kAllGather, tc * h * in_bytes, c.tp, c.tp_span);
    const double w = AttentionTpGatherWidth(m);
    kc->tp_attn_in_ag =
        m.attention == AttentionType::kMla
            ? cm.Collective(CollectiveKind::kAllGather, tc * w * kActivationBytes, c.tp, c.tp_span)
        : w == h ? kc->tp_in_ag
                 : cm.Collective(CollectiveKind::kAllGather, tc * w * in_bytes, c.tp, c.tp_span);
    // The overlap's split GEMMs (TpOverlapChunkingSeconds): the attention
    // block's qkv [tc x h] x [h x qkv / tp] and proj [tc x o_k] x [o_k x h],
    // and the MLP block's where the layer has one.
    const int sms = cm.cluster().gpu.sm_count;
    auto gemm = [&](double rows, double n, double kdim, int pieces) {
      // One of `pieces` chunks runs beside up to kUbComputeStreams - 1
      // others; the whole GEMM (pieces 1) alone.
      const int concurrent = std::max(1, std::min(kUbComputeStreams, pieces));
      return cm.DenseGemm(rows, n, kdim, c.precision).seconds /
             GemmWaveEfficiency(rows, n, sms, concurrent);
    };
    double chunking = TpOverlapChunkingSeconds(gemm, tc, c.tp, k.qkv_out_dim / c.tp, o_k, h);
    if (mlp_n > 0) chunking += TpOverlapChunkingSeconds(gemm, tc, c.tp, gate * mlp_n, mlp_n, h);
    kc->tp_overlap_chunking = {chunking, kc->qkv.source};
  }
}

namespace {
// Linear interpolation of a measured table (rows in increasing key) at
// `key`, clamped to the first and last rows.
EpLibraryRates InterpolateRates(const EpLibraryRates* rows, int n, double key) {
  if (key <= rows[0].key) return rows[0];
  for (int i = 1; i < n; ++i) {
    if (key <= rows[i].key) {
      const EpLibraryRates& a = rows[i - 1];
      const EpLibraryRates& b = rows[i];
      const double t = (key - a.key) / double(b.key - a.key);
      auto mix = [t](double x, double y) { return x + t * (y - x); };
      return {int(key), mix(a.dispatch_fp8_bytes_per_sec, b.dispatch_fp8_bytes_per_sec),
              mix(a.dispatch_bf16_bytes_per_sec, b.dispatch_bf16_bytes_per_sec),
              mix(a.combine_bytes_per_sec, b.combine_bytes_per_sec)};
    }
  }
  return rows[n - 1];
}
}  // namespace

EpLibraryRates HybridEpRatesForRanks(int ranks) {
  constexpr int n = sizeof(kHybridEpGb200Sm32) / sizeof(kHybridEpGb200Sm32[0]);
  return InterpolateRates(kHybridEpGb200Sm32, n, ranks);
}

DispatcherNvlinkCaps DeepEpMnnvlCaps(int num_sms, bool low_precision) {
  constexpr int n = sizeof(kDeepEpGb200Ranks24BySms) / sizeof(kDeepEpGb200Ranks24BySms[0]);
  const EpLibraryRates at = InterpolateRates(kDeepEpGb200Ranks24BySms, n, num_sms);
  const EpLibraryRates guide = InterpolateRates(kDeepEpGb200Ranks24BySms, n, kDeepEpMnnvlGuideSms);
  DispatcherNvlinkCaps caps;
  caps.dispatch_bytes_per_sec =
      kDeepEpMnnvlDispatchBytesPerSec *
      (low_precision ? at.dispatch_fp8_bytes_per_sec / guide.dispatch_fp8_bytes_per_sec
                     : at.dispatch_bf16_bytes_per_sec / guide.dispatch_bf16_bytes_per_sec);
  caps.combine_bytes_per_sec =
      kDeepEpMnnvlCombineBytesPerSec * at.combine_bytes_per_sec / guide.combine_bytes_per_sec;
  return caps;
}

DispatcherNvlinkCaps NvlinkDispatchCaps(const StackConstants& stack, bool dedup,
                                        int ep_gpus_per_domain, bool low_precision) {
  DispatcherNvlinkCaps caps;
  using Backend = MegatronFeatures::FlexBackend;
  const bool deepep_or_nccl = !dedup || stack.features.flex_backend == Backend::kDeepEp;
  if (deepep_or_nccl && ep_gpus_per_domain > kDeepEpNativeNvlinkDomain) {
    // DeepEP with the stack's SM count; the NCCL all-to-all at the guide's
    // figures (it "did not get the communication benefits" either way).
    caps = DeepEpMnnvlCaps(dedup ? stack.features.deepep_num_sms : kDeepEpMnnvlGuideSms,
                           low_precision);
  } else if (!deepep_or_nccl && ep_gpus_per_domain >= kHybridEpMeasuredMinRanks) {
    const EpLibraryRates r = HybridEpRatesForRanks(ep_gpus_per_domain);
    caps.dispatch_bytes_per_sec =
        low_precision ? r.dispatch_fp8_bytes_per_sec : r.dispatch_bf16_bytes_per_sec;
    caps.combine_bytes_per_sec = r.combine_bytes_per_sec;
  }
  return caps;
}

double QuantizeHostSeconds(const MegatronFeatures& f, double launch_s, bool after_norm) {
  // The quantize kernel (none after a norm that writes MXFP8 itself), the
  // scale swizzle (one fused kernel per GEMM, else one per operand), and
  // without the fused allocation four torch.empty/zeros calls, two of which
  // launch a fill kernel.
  double launches = (after_norm && f.quant_fused_norm ? 0.0 : 1.0) +
                    (f.fused_swizzle_pdl ? 1.0 : double(kGemmOperands));
  double seconds = 0;
  if (!f.mxfp8_fused_allocation) {
    seconds += kMxfp8TensorsPerQuantization * kTorchCallHostS;
    launches += kMxfp8ZeroFilledTensors;
  }
  return seconds + launches * launch_s;
}

double CheckpointWithoutOutputHostSeconds(double inputs, double outputs, double launch_s,
                                          double host_factor) {
  const double calls = kCheckpointFixedTorchCalls + kCheckpointTorchCallsPerInput * inputs +
                       kCheckpointTorchCallsPerOutput * outputs;
  const double restore_copies = outputs;  // untyped_storage().copy_, one kernel each
  return (calls * kTorchCallHostS + restore_copies * (kTorchCallHostS + launch_s)) * host_factor;
}

double UpProjRecomputeHostSeconds(double launch_s, double host_factor) {
  const double light_ops = kUpProjRecomputeLightOps + kUpProjRecomputeTeModules * kTeModuleLightOps;
  return CheckpointWithoutOutputHostSeconds(kUpProjRecomputeInputs, kUpProjRecomputeOutputs,
                                            launch_s, host_factor) +
         (light_ops * (kTorchCallHostS + launch_s) + kUpProjRecomputeTorchCalls * kTorchCallHostS) *
             host_factor;
}

double MoeActRecomputeHostSeconds(double launch_s, double host_factor) {
  return CheckpointWithoutOutputHostSeconds(kMoeActRecomputeInputs, kMoeActRecomputeOutputs,
                                            launch_s, host_factor) +
         kMoeActRecomputeLightOps * (kTorchCallHostS + launch_s) * host_factor;
}

int RecomputedNormsPerLayer(const ModelSpec& m, bool pre_mlp_norm) {
  return (m.attention == AttentionType::kMla ? 1 : 0) + (pre_mlp_norm ? 1 : 0);
}

bool PreMlpNormRecomputed(bool cuda_graphs, const MegatronFeatures& f, Dispatcher dispatcher) {
  if (!cuda_graphs || !f.graph_moe_router || f.graph_full_iteration) return true;
  return f.graph_moe_preprocess && dispatcher == Dispatcher::kAllToAll;
}

double NormRecomputeHostSeconds(double launch_s, double host_factor) {
  return CheckpointWithoutOutputHostSeconds(kNormRecomputeInputs, kNormRecomputeOutputs, launch_s,
                                            host_factor) +
         kTeModuleLightOps * (kTorchCallHostS + launch_s) * host_factor;
}

double MlaUpProjRecomputeMacsPerToken(const ModelSpec& m) {
  if (m.attention != AttentionType::kMla) return 0;
  const double n = m.num_attention_heads;
  const double q_in = m.q_lora_rank > 0 ? double(m.q_lora_rank) : double(m.hidden_size);
  return q_in * n * m.QkHeadDim() +
         double(m.kv_lora_rank) * n * (m.qk_nope_head_dim + m.v_head_dim);
}

double MlaUpProjRecomputeMemoryElemsPerToken(const ModelSpec& m) {
  if (m.attention != AttentionType::kMla) return 0;
  const double n = m.num_attention_heads;
  const double norms = 2.0 * (m.q_lora_rank + m.kv_lora_rank);
  const double up_out = n * m.QkHeadDim() + n * (m.qk_nope_head_dim + m.v_head_dim);
  const double qkv = 2.0 * n * m.QkHeadDim() + n * m.v_head_dim;  // query, key, value
  const double rope_and_assembly = up_out + m.qk_rope_head_dim + qkv;
  const double restore_copy = 2.0 * qkv;
  return norms + rope_and_assembly + restore_copy;
}

double RouterPreprocessHostOps(const MegatronFeatures& f, bool dedup) {
  const double router_fusion_saving = kRouterKernelsUnfused - kRouterKernelsFused;
  if (dedup) {
    return kFlexRouterPreprocessKernels + (f.router_fusion ? 0.0 : router_fusion_saving);
  }
  return (f.router_fusion ? kRouterKernelsFused : kRouterKernelsUnfused) +
         kAllToAllPreprocessOps;
}

double HostFactor(const StackConstants& stack) {
  return stack.features.cpu_numa_binding ? 1.0 : kUnboundHostOpFactor;
}

double HostOpSeconds(const StackConstants& stack) { return stack.host_op_s * HostFactor(stack); }

bool MoeHostHidden(const StackConstants& stack, bool combined_layout, int ep,
                   bool cuda_graphs) {
  return stack.moe_host_hidden_by_ep_overlap && combined_layout && ep > 1 && cuda_graphs &&
         stack.features.graph_full_iteration;
}

// The routed experts' two grouped GEMMs (fc1: h -> gate x f / etp, fc2
// back) over the rank's tokens x top_k rows, spread over its local experts,
// the busiest GPU's share scaled by `imbalance`; `grouped` false prices a
// loop of per-expert GEMMs.
void RoutedExpertGemms(const Context& c, bool grouped, double imbalance, KindCosts* kc) {
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
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
}

// ETP > 1: the expert tensor-parallel all-gather before the experts and
// reduce-scatter after them (ExpertTensorParallelExchange), added to the
// dispatch and combine.
void AddExpertTensorParallelExchange(const Context& c, double imbalance, KindCosts* kc) {
  if (c.etp <= 1) return;
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const EtpExchange x = ExpertTensorParallelExchange(
      c.tokens_rank * m.moe_top_k * imbalance, double(m.hidden_size),
      c.low_precision ? c.operand_bytes : 2.0, c.etp);
  kc->dispatch = AddCost(
      kc->dispatch, cm.Collective(CollectiveKind::kAllGather, x.gather_bytes, c.etp, c.etp_span));
  kc->combine = AddCost(kc->combine, cm.Collective(CollectiveKind::kReduceScatter,
                                                   x.scatter_bytes, c.etp, c.etp_span));
}

// Routed experts and EP dispatch/combine (MoE kinds) at c.precision.
void ExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                     KindCosts* kc) {
  if (IsMaxText(*c.stack)) return MaxTextExpertKindCosts(c, grouped, dedup, imbalance, kc);
  const CostModel& cm = *c.cost;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  RoutedExpertGemms(c, grouped, imbalance, kc);
  if (c.ep > 1) {
    DispatchShape d;
    d.tokens = c.tokens_rank * imbalance;
    d.top_k = m.moe_top_k;
    d.ep = c.ep;
    d.ep_gpus_per_domain = c.ep_gpus_per_domain;
    d.dedup = dedup;
    d.router_groups = m.arch.router_num_groups;
    d.router_group_topk = m.arch.router_group_topk;
    d.bytes_per_token = h * (c.low_precision ? c.operand_bytes : 2.0);
    const DispatcherNvlinkCaps caps = NvlinkDispatchCaps(*c.stack, dedup, c.ep_gpus_per_domain, c.low_precision);
    d.nvlink_rate_cap_bytes_per_sec = caps.dispatch_bytes_per_sec;
    kc->dispatch = cm.Dispatch(d);
    kc->dispatch_nvlink_share = cm.DispatchNvlinkShare(d);
    d.bytes_per_token = h * kActivationBytes;
    d.nvlink_rate_cap_bytes_per_sec = caps.combine_bytes_per_sec;
    kc->combine = cm.Dispatch(d);
    kc->combine_nvlink_share = cm.DispatchNvlinkShare(d);
  }
  AddExpertTensorParallelExchange(c, imbalance, kc);
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

namespace {

// Host-side time of one MoE layer for one micro-batch (forward + 2x
// backward of the per-pass ops, plus the per-local-expert ops), at
// stack.host_op_s per op. In the 26.02-26.04 stacks it is serialised with
// the GPU work by the token-count synchronisation: the host issues the ops
// of a layer while the GPU idles (this additive form fits the Megatron-Bridge
// rows better than max(host, GPU): MAPE 12.6% vs 19.9% on runs.json).
double MoeHostSeconds(const StackConstants& stack, int local_experts) {
  return (stack.moe_host_ops_forward * (1.0 + kBackwardKernelFactor) +
          stack.grouped_gemm_host_ops_per_expert * local_experts) *
         HostOpSeconds(stack);
}

// Host seconds of one PyTorch op issued from Python that launches one
// kernel: the Python/ATen call (kTorchCallHostS) and the CUDA launch (the
// cost model's eager launch time), x the NUMA factor (HostFactor).
double LightOpSeconds(const Context& c) {
  return (kTorchCallHostS + c.cost->KernelLaunchSeconds(false)) * HostFactor(*c.stack);
}

// Host seconds (forward + backward) of `n` MXFP8 quantizations of GEMM
// inputs, `after_norm` of them directly after a norm, each with a quantized
// gradient in backward (x (1 + kBackwardKernelFactor)). Zero at BF16.
double QuantizationsHostSeconds(const Context& c, const MegatronFeatures& f, double n,
                                double after_norm) {
  if (!c.low_precision || n <= 0) return 0;
  const double launch_s = c.cost->KernelLaunchSeconds(false);
  return (1.0 + kBackwardKernelFactor) * HostFactor(*c.stack) *
         ((n - after_norm) * QuantizeHostSeconds(f, launch_s, false) +
          after_norm * QuantizeHostSeconds(f, launch_s, true));
}

// What an older stack's quantizations cost beyond the latest's (the
// latest's are inside grouped_gemm_host_ops_per_expert).
double ExtraQuantizationsHostSeconds(const Context& c, double n, double after_norm) {
  return QuantizationsHostSeconds(c, c.stack->features, n, after_norm) -
         QuantizationsHostSeconds(c, MegatronFeatures(), n, after_norm);
}

// Permute / unpermute calls per forward of a MoE layer: the flex
// dispatcher permutes once after its communication and unpermutes once
// before it; the NCCL all-to-all adds the global permutation before the
// exchange and its inverse after (token_dispatcher.py permute,
// sort_chunks_by_idxs x 2, unpermute). Without --moe-permute-fusion each is
// kUnfusedPermuteOps PyTorch ops instead of one fused kernel.
double PermuteHostSeconds(const Context& c) {
  const bool a2a = c.knobs->dispatcher == Dispatcher::kAllToAll && c.ep > 1;
  const double calls = a2a ? 4.0 : 2.0;
  const double ops = c.stack->features.permute_fusion ? 1.0 : kUnfusedPermuteOps;
  return (1.0 + kBackwardKernelFactor) * calls * ops * LightOpSeconds(c);
}
// The latest stack's (fused permute, flex dispatcher: inside
// moe_host_ops_forward).
double LatestPermuteHostSeconds(const Context& c) {
  return (1.0 + kBackwardKernelFactor) * 2.0 * LightOpSeconds(c);
}

// Host time (seconds, forward + backward) of the parts of a layer that CUDA
// graphs can capture -- attention, dense MLP, router + EP preprocess, shared
// experts -- for the parts the stack's graph scope leaves out (all of them
// without CUDA graphs): one light PyTorch op (LightOpSeconds) per forward
// kernel, plus the MXFP8 quantizations' launches and allocations
// (QuantizeHostSeconds). Captured parts replay without host work (their
// launches are in the kernel-launch term).
double StaticHostSeconds(const LayerKindTables& k, const Context& c) {
  const MegatronFeatures& f = c.stack->features;
  const ModelSpec& m = *c.model;
  const bool graphs = c.knobs->cuda_graphs;
  const bool mla = m.attention == AttentionType::kMla;
  const double op_s = LightOpSeconds(c);
  const double passes = 1.0 + kBackwardKernelFactor;
  double host = 0;
  // Attention block: the model's forward kernels of it (kernels_fwd's
  // attention share), one op each.
  const double attn_ops = AttentionForwardKernels(m);
  const bool attn_captured = graphs && f.graph_attn;
  if (!attn_captured) {
    // Context parallelism's extra kernels, one light op each (a lower
    // bound: its ring's c10d calls and stream waits cost more).
    if (c.cp > 1) host += CpExtraKernels(c.cp) * op_s;
    host += passes * attn_ops * op_s +
            QuantizationsHostSeconds(c, f, mla ? kMlaQuantizedInputs : kGqaQuantizedInputs,
                                     mla ? kMlaQuantizedAfterNorm : kGqaQuantizedAfterNorm);
  }
  // Selective recompute of the MLA up projections re-runs them in backward
  // (once per micro-batch) outside any graph unless attention is captured:
  // the checkpoint's calls, the re-run (UpProjRecomputeHostSeconds) and its
  // two quantizations, both after a norm (one pass: no gradient).
  if (mla && c.knobs->recompute.mode == RecomputeMode::kSelective &&
      (c.knobs->recompute.modules & kRecomputeMlaUpProj) && !attn_captured) {
    host += UpProjRecomputeHostSeconds(c.cost->KernelLaunchSeconds(false), HostFactor(*c.stack)) +
            QuantizationsHostSeconds(c, f, 2, 2) / passes;
  }
  // Selective recompute of the norms (RecomputedNormsPerLayer): the input
  // norm's checkpoint runs inside the attention graph where attention is
  // captured; a MoE layer's pre-MLP norm is recomputed outside the graphs
  // only where the router is not captured (captured, the recompute runs in
  // the graph or Megatron-Core turns it off: PreMlpNormRecomputed).
  if (c.knobs->recompute.mode == RecomputeMode::kSelective &&
      (c.knobs->recompute.modules & kRecomputeLayerNorm)) {
    const int ungraphed = (mla && !attn_captured ? 1 : 0) +
                          (k.moe && !(graphs && f.graph_moe_router) ? 1 : 0);
    host += ungraphed *
            NormRecomputeHostSeconds(c.cost->KernelLaunchSeconds(false), HostFactor(*c.stack));
  }
  if (!k.moe) {
    // Dense MLP: captured with the layer under CUDA graphs (dense models
    // run whole-layer graphs).
    if (!graphs) host += passes * 8 * op_s + QuantizationsHostSeconds(c, f, 2, 1);
    return host;
  }
  // EP 1 has no dispatcher communication: priced as the flex path.
  const bool dedup = c.knobs->dispatcher == Dispatcher::kFusedDedup || c.ep <= 1;
  // moe_preprocess captures the flex dispatcher's preprocess; the NCCL
  // all-to-all's needs the host-side splits, so only its router is
  // captured.
  if (!(graphs && f.graph_moe_router)) {
    host += passes * RouterPreprocessHostOps(f, dedup) * op_s;
  } else if (!dedup) {
    host += passes * kAllToAllPreprocessOps * op_s;
  } else if (!f.graph_moe_preprocess) {
    host += passes * (kFlexRouterPreprocessKernels - kFlexRouterOnlyKernels) * op_s;
  }
  if (m.num_shared_experts > 0 && !(graphs && f.graph_moe_router && f.graph_shared_experts)) {
    host += passes * 6 * op_s + QuantizationsHostSeconds(c, f, 2, 1);
  }
  return host;
}

// The GEMM-bound part of a layer, what the communication terms after it
// overlap with (or repeat, under recompute).
struct GemmTerms {
  Cost qkv, attn_f, attn_b;
  Cost mlp_f, shared_f, routed_f;  // forward, {fc1 + fc2, fc1's source}
  int tp_pairs = 1;         // TP all-gather + reduce-scatter pairs per forward
  double ep_fwd_s = 0;      // dispatch + combine, forward
  double ep_total_s = 0;    // forward + backward (combine volume twice)
  uint8_t ep_src = 0;
};

// Attention and MLP/MoE blocks. Attention: QKV projection(s) [tc x h] x
// [h x qkv/tp] and the output projection [tc x n v/tp] x [n v/tp x h],
// backward = dgrad (+ wgrad), i.e. x (1 + bwd_gemm_factor); core attention
// over the causal (or window) context, heads split by TP. (Lookups in
// PrecisionKindCosts / LayoutKindCosts.)
GemmTerms AddGemmTerms(const LayerKindTables& k, const Context& c, const KindCosts& kc,
                       Slots* l) {
  const ModelSpec& m = *c.model;
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;
  GemmTerms g;
  g.qkv = kc.qkv;
  l->Add(kSAttnProj, kc.qkv, fwd_bwd);
  l->Add(kSAttnProj, kc.oproj, fwd_bwd);
  g.attn_f = kc.attn_f;
  g.attn_b = kc.attn_b;
  l->Add(kSAttnCore, kc.attn_f);
  l->Add(kSAttnCore, kc.attn_b);
  if (!k.moe) {
    // fc1 [tc x h] x [h x gate f/tp], fc2 [tc x f/tp] x [f/tp x h].
    g.mlp_f = {kc.fc1.seconds + kc.fc2.seconds, kc.fc1.source};
    l->Add(kSDenseMlp, kc.fc1, fwd_bwd);
    l->Add(kSDenseMlp, kc.fc2, fwd_bwd);
    ++g.tp_pairs;
    return g;
  }
  // Router [tr x h] x [h x E] in BF16 (fwd + dgrad + wgrad).
  l->Add(kSRouter, kc.router, 3.0);
  if (m.num_shared_experts > 0) {
    g.shared_f = {kc.fc1.seconds + kc.fc2.seconds, kc.fc1.source};
    l->Add(kSShared, kc.fc1, fwd_bwd);
    l->Add(kSShared, kc.fc2, fwd_bwd);
    if (c.tp > 1) ++g.tp_pairs;
  }
  // Routed experts: E/ep local experts; under balanced routing each GPU
  // processes tr x top_k (x etp, with ffn / etp) token-expert rows.
  // (GroupedGemmShape in ExpertKindCosts.)
  g.routed_f = {kc.gfc1.seconds + kc.gfc2.seconds, kc.gfc1.source};
  l->Add(kSRouted, kc.gfc1, fwd_bwd);
  l->Add(kSRouted, kc.gfc2, fwd_bwd);
  // EP dispatch (low-precision payload when the GEMMs are) and combine
  // (BF16); backward moves the same volumes in BF16: dispatch + 3 combine.
  // (DispatchShape and the ETP exchange in ExpertKindCosts.)
  if (c.ep > 1 || c.etp > 1) {
    g.ep_fwd_s = kc.dispatch.seconds + kc.combine.seconds;
    g.ep_total_s = g.ep_fwd_s + 2 * kc.combine.seconds;
    g.ep_src = SourceBit(kc.dispatch.source) | SourceBit(kc.combine.source);
  }
  return g;
}

// Forward HBM bytes an older stack moves beyond the latest's (whose
// traffic k.mb_* counts): the NCCL all-to-all dispatcher's global permute
// and unpermute (the flex dispatcher fuses them into its communication,
// guide 2.2.1: read h, write k h; read k h, write h per token), and
// without the cuDNN norm-quantize fusion the BF16 output of each norm before
// a quantized GEMM written and read once more (2 x 2 B per element: two
// h-wide norms, and MLA's q / kv latent norms).
double OlderStackMemoryBoundBytes(const LayerKindTables& k, const Context& c) {
  const MegatronFeatures& f = c.stack->features;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const double tr = c.tokens_rank;
  double bytes = 0;
  if (k.moe) {
    const double permute_elems = 2.0 * (h + m.moe_top_k * h);
    const bool a2a = c.knobs->dispatcher == Dispatcher::kAllToAll && c.ep > 1;
    if (a2a) bytes += tr * kActivationBytes * permute_elems;
  }
  if (c.low_precision && !f.quant_fused_norm) {
    const double latents =
        m.attention == AttentionType::kMla ? double(m.q_lora_rank + m.kv_lora_rank) : 0.0;
    bytes += tr * (2.0 * h + latents) * 2.0 * kActivationBytes;
  }
  return bytes;
}

// Memory-bound kernels (norms, residuals, RoPE, activations,
// permute/unpermute, casts), per token of the SP shard: forward bytes =
// tr x 2 B x (attention + MLP + top-k elements) [+ tr x quantized elements
// x (2 B read + operand bytes written) at low precision]; backward moves
// kBackwardMemoryBoundFactor x that. Returns the forward cost.
Cost AddMemoryBoundTerms(const LayerKindTables& k, const Context& c, Slots* l) {
  const CostModel& cm = *c.cost;
  const double tr = c.tokens_rank;
  double mb_fwd_bytes =
      tr * kActivationBytes * (k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
  if (c.low_precision) mb_fwd_bytes += tr * k.mb_quant_elems * (2.0 + c.operand_bytes);
  const Cost mb_f = cm.MemoryBound(mb_fwd_bytes);
  l->Add(kSMemBound, mb_f, 1.0 + kBackwardMemoryBoundFactor);
  const double extra_bytes = OlderStackMemoryBoundBytes(k, c);
  if (extra_bytes > 0) {
    l->Add(kSMemBound, cm.MemoryBound(extra_bytes), 1.0 + kBackwardMemoryBoundFactor);
  }
  if (c.lora) {
    // LoRA adapters beside the frozen linears: memory-bound, BF16,
    // lora_adapter_hbm_passes x (input + output widths) per token of the CP
    // shard, the widths split by TP.
    l->Add(kSLoraAdapters,
           cm.MemoryBound(c.tokens_cp * k.lora_io_elems / c.tp *
                          c.stack->lora_adapter_hbm_passes * kActivationBytes));
  }
  return mb_f;
}

// Sum of slots [first, last] (compute slots are contiguous in Slot order).
double SlotSum(const Slots& l, int first, int last) {
  double t = 0;
  for (int i = first; i <= last; ++i) t += l.s[i];
  return t;
}

// Host time: a MoE layer's host work (MoeHostSeconds; under the EP-overlap
// schedule of 26.06 on only what exceeds the layer's compute), kernel
// launches (kernels_fwd x (1 + bwd factor) x launch_s), and without CUDA
// graphs the host issue time beyond the GPU time.
// The moe_act recompute's host work in a MoE layer, part of the routed
// experts' (never graph-captured): the checkpoint and the re-run
// (MoeActRecomputeHostSeconds), and at low precision linear_fc2's saved
// BF16 input quantized again per local expert (one pass). 0 without it.
double MoeActRecomputeHostSecondsOf(const Context& c, int local_experts) {
  if (c.knobs->recompute.mode != RecomputeMode::kSelective ||
      !(c.knobs->recompute.modules & kRecomputeMoeAct)) {
    return 0;
  }
  return MoeActRecomputeHostSeconds(c.cost->KernelLaunchSeconds(false), HostFactor(*c.stack)) +
         QuantizationsHostSeconds(c, c.stack->features, local_experts, 0) /
             (1.0 + kBackwardKernelFactor);
}

// The exposed host seconds of a MoE layer outside the 26.06 hiding
// (StackConstants::MoeHostForm): `host` the experts' and permutations' host
// work, `ungraphed` the ops outside CUDA graphs, `compute` the layer's GPU
// compute, all forward + backward.
double ExposedMoeHostSeconds(StackConstants::MoeHostForm form, double host, double ungraphed,
                             double compute) {
  using Form = StackConstants::MoeHostForm;
  switch (form) {
    case Form::kAdditive:
      return host + ungraphed;
    case Form::kUngraphedRunsAhead:
      return host + std::max(0.0, ungraphed - compute);
    case Form::kBackwardRunsAhead: {
      // Backward is kBackwardKernelFactor of the 1 + kBackwardKernelFactor
      // passes, of the host work and of the compute alike.
      const double bwd = kBackwardKernelFactor / (1.0 + kBackwardKernelFactor);
      const double bwd_exposed = std::max(0.0, bwd * (host - compute));
      const double compute_left =
          (1.0 - bwd) * compute + std::max(0.0, bwd * (compute - host));
      return (1.0 - bwd) * host + bwd_exposed + std::max(0.0, ungraphed - compute_left);
    }
    case Form::kMaxHostCompute:
      return std::max(0.0, host + ungraphed - compute);
  }
  return host + ungraphed;
}

// The combined-1F1B EP-overlap schedule's own host work per MoE layer and
// micro-batch (forward + backward): ep_overlap_schedule_host_ops x
// HostOpSeconds where the schedule runs (the knob on, a layout that allows
// it, EP > 1) and its host time is not captured (not MoeHostHidden); 0
// elsewhere. Example: 30 ops x 25 us = 0.75 ms per layer pass, 1.15 s per
// step for PR 1760's 12 layers x 128 micro-batches.
double EpOverlapScheduleHostSeconds(const LayerKindTables& k, const Context& c,
                                    bool ep_overlap_schedule) {
  if (!k.moe || !ep_overlap_schedule || c.ep <= 1) return 0;
  if (MoeHostHidden(*c.stack, ep_overlap_schedule, c.ep, c.knobs->cuda_graphs)) return 0;
  return c.stack->ep_overlap_schedule_host_ops * HostOpSeconds(*c.stack);
}

void AddHostTerms(const LayerKindTables& k, const Context& c, bool ep_overlap_schedule,
                  Slots* l) {
  // Ops outside CUDA graphs (StaticHostSeconds).
  const double static_host = StaticHostSeconds(k, c);
  if (k.moe) {
    const int local = c.model->num_routed_experts / c.ep;
    // The routed experts' host work (fc1 and fc2 inputs quantized per local
    // expert), the permutations', and the layer's ungraphed ops: the
    // token-count synchronisation each MoE layer stops the CPU from running
    // ahead, and the ungraphed parts are chains of kernels shorter than
    // their issue time (guide sec. 2: "large gaps between kernels"), so
    // their host time adds to the GPU's like the experts' (MoeHostSeconds).
    const double host = MoeHostSeconds(*c.stack, local) +
                        ExtraQuantizationsHostSeconds(c, 2.0 * local, 0.0) +
                        (PermuteHostSeconds(c) - LatestPermuteHostSeconds(c)) +
                        MoeActRecomputeHostSecondsOf(c, local);
    const double compute = SlotSum(*l, kSAttnCore, kSMemBound);
    if (MoeHostHidden(*c.stack, ep_overlap_schedule, c.ep, c.knobs->cuda_graphs)) {
      // The other micro-batch's layer keeps the GPU busy while this one's
      // host work runs: only host time beyond that compute shows. That
      // needs the other micro-batch's static parts to cost the CPU nothing
      // (graph replays): without CUDA graphs the one CPU issues both
      // micro-batches' ops in turn and its time adds (the Megatron-Bridge
      // MoE recipes pair moe_a2a_overlap with CUDA graphs); with graphs
      // scoped to parts of the layer it does not happen (MoeHostHidden).
      l->AddSeconds(kSLaunch, std::max(0.0, host - compute), kPriorBit);
      l->AddSeconds(kSLaunch, static_host, kPriorBit);
    } else {
      l->AddSeconds(kSLaunch, ExposedMoeHostSeconds(c.stack->moe_host_form, host, static_host,
                                                    compute),
                    kPriorBit);
    }
  }
  l->AddSeconds(kSLaunch, k.kernels_fwd * (1.0 + kBackwardKernelFactor) * c.launch_s,
                kPriorBit);
  if (!k.moe && static_host > 0) {
    // Dense layers have no synchronisation: the CPU runs ahead and the GPU
    // waits only for host time beyond the layer's GPU time.
    const double gpu = SlotSum(*l, kSAttnCore, kSLaunch);
    l->AddSeconds(kSLaunch, std::max(0.0, static_host - gpu), kPriorBit);
  }
  // Without programmatic dependent launch each quantization kernel's
  // launch latency shows on the GPU timeline.
  if (c.low_precision && !c.stack->features.fused_swizzle_pdl) {
    const ModelSpec& m = *c.model;
    const double quantized =
        (m.attention == AttentionType::kMla ? kMlaQuantizedInputs : kGqaQuantizedInputs) +
        2.0 + (k.moe ? 2.0 * m.num_routed_experts / c.ep : 0.0);
    l->AddSeconds(kSLaunch, quantized * (1.0 + kBackwardKernelFactor) * c.launch_s, kPriorBit);
  }
}

// TP collectives of each block under sequence parallelism
// (TpBlockCollectives): forward, the input's all-gather at the GEMM input's
// bytes (tp_in_ag; MLA's latents in BF16) and the output's reduce-scatter
// (BF16, hidden_size wide); backward, the output gradient's all-gather
// (BF16), the input gathered again for the wgrad (Transformer Engine's
// linears; not MLA's latents) and the input gradient's reduce-scatter (the
// attention block's input side AttentionTpGatherWidth wide). The blocks:
// attention, and the dense MLP or the shared experts (tp_pairs > 1).
//
// With the overlap on, each collective hides behind the one GEMM that
// Transformer Engine's userbuffers pair it with, never behind another
// block's (TpPairExposedSeconds); the hidden part slows the compute by
// overlap_slowdown. At TP 8 on H100 the narrow GEMMs (the attention output
// projection's tp-th of the heads, the qkv projection's tp-th of the
// grouped-query heads) are shorter than their collectives and part of them
// shows. Not on Hopper under the EP overlap (TpOverlapSurvivesEpOverlap),
// and not for NVFP4 GEMMs, which have no userbuffers path
// (TpCommOverlapSupports, precision.h): there the knob changes nothing and
// every TP collective is exposed.
void AddTpTerms(const Context& c, const KindCosts& kc, const GemmTerms& g,
                bool ep_overlap_schedule, Slots* l) {
  if (c.tp <= 1) return;
  const bool te_gathers_attention = c.model->attention != AttentionType::kMla;
  const TpBlockCollectives attn{kc.tp_attn_in_ag.seconds, kc.tp_rs.seconds, kc.tp_ag.seconds,
                                te_gathers_attention ? kc.tp_attn_in_ag.seconds : 0.0,
                                kc.tp_attn_rs.seconds};
  const TpBlockCollectives mlp{kc.tp_in_ag.seconds, kc.tp_rs.seconds, kc.tp_ag.seconds,
                               kc.tp_in_ag.seconds, kc.tp_rs.seconds};
  const bool has_mlp = g.tp_pairs > 1;
  const double total = attn.TotalSeconds() + (has_mlp ? mlp.TotalSeconds() : 0.0);
  const uint8_t src = SourceBit(kc.tp_ag.source) | SourceBit(kc.tp_rs.source) |
                      SourceBit(kc.tp_attn_rs.source) | SourceBit(kc.tp_in_ag.source) |
                      SourceBit(kc.tp_attn_in_ag.source);
  if (c.knobs->overlap.tp_comm && TpCommOverlapSupports(c.precision) &&
      TpOverlapSurvivesEpOverlap(c.cost->cluster().gpu.generation, ep_overlap_schedule)) {
    const double f = c.stack->tp_overlap_fraction;
    // The wgrad of a column-parallel GEMM: bwd_gemm_factor - 1 of it (none
    // under LoRA, whose frozen weights take no wgrad).
    const double wgrad = c.bwd_gemm_factor - 1.0;
    double exposed = TpPairExposedSeconds(attn, kc.qkv.seconds, kc.oproj.seconds, wgrad, f);
    if (has_mlp) exposed += TpPairExposedSeconds(mlp, kc.fc1.seconds, kc.fc2.seconds, wgrad, f);
    const double hidden = total - exposed;
    l->AddSeconds(kSTpHidden, hidden, src);
    l->AddSeconds(kSTpExposed, exposed, src);
    l->AddSeconds(kSOverlapSlowdown, hidden * (c.overlap_slowdown - 1.0), src);
    l->AddSeconds(kSOverlapSlowdown, kc.tp_overlap_chunking.seconds,
                  SourceBit(kc.tp_overlap_chunking.source));
  } else {
    l->AddSeconds(kSTpExposed, total, src);
  }
}

// CP ring: K and V of every other CP rank pass by (forward: 1 ring), K, V and
// their gradients in backward (2 rings); each overlapped with the attention
// chunks: exposed = max(0, ring - attention) per direction. The hidden part
// slows the attention by the SMs its NCCL kernels hold (overlap_slowdown, as
// TP's and EP's). Beyond the ring, the split attention's merges run as
// memory-bound kernels after it (forward) or between its steps (backward),
// and every extra kernel pays a launch (CpForwardExtraKernels,
// CpBackwardExtraKernels; their host side is in StaticHostSeconds).
void AddCpTerms(const Context& c, const KindCosts& kc, const GemmTerms& g, Slots* l) {
  if (c.cp <= 1) return;
  const Cost ring = kc.cp_ring;
  const double fwd_exposed = std::max(0.0, ring.seconds - g.attn_f.seconds);
  const double bwd_exposed = std::max(0.0, 2 * ring.seconds - g.attn_b.seconds);
  const double hidden = 3 * ring.seconds - fwd_exposed - bwd_exposed;
  l->AddSeconds(kSCpExposed, fwd_exposed + bwd_exposed, SourceBit(ring.source));
  l->AddSeconds(kSCpHidden, hidden, SourceBit(ring.source));
  l->AddSeconds(kSOverlapSlowdown, hidden * (c.overlap_slowdown - 1.0), SourceBit(ring.source));
  l->Add(kSMemBound, kc.cp_merge_f);
  l->Add(kSMemBound, kc.cp_merge_b);
  l->AddSeconds(kSLaunch, CpExtraKernels(c.cp) * c.launch_s, kPriorBit);
}

// What a recompute of core attention repeats of the CP attention's forward
// beyond its attention kernels: the merges (launches of recomputed kernels
// are not priced, as nowhere in RecomputeSeconds).
double CpForwardMergeSeconds(const Context& c, const KindCosts& kc) {
  return c.cp > 1 ? kc.cp_merge_f.seconds : 0.0;
}

// EP dispatch/combine under Megatron-Core's combined-1F1B overlap. Per layer
// the schedule (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run) pairs the forward F of one micro-batch
// with the backward B of another in four windows, each a communication of
// one beside a compute of the other:
//   comm: combine_bwd(B)  | dispatch_fwd(F) -> dispatch_bwd(B) | combine_fwd(F)
//   comp: pre_dispatch(F) | mlp_bwd(B)      -> mlp_fwd(F)       | pre_dispatch_bwd(B)
// (dispatch_bwd waits for mlp_bwd, mlp_fwd for dispatch_fwd, so the middle
// window is two pairs). pre_dispatch = attention block, pre-MLP norm, router,
// shared experts and the dispatch preprocess
// (megatron/core/models/gpt/fine_grained_callables.py
// submodule_pre_dispatch_forward); mlp = the routed experts with their
// permute / activation / unpermute. Volumes: dispatch_fwd = kc.dispatch,
// combine_fwd = kc.combine, and both backward exchanges move BF16 gradients
// of the combine's volume. Each pair hides min(comm, compute x slowdown)
// (OverlapWindow), the compute slowed by the SMs the communication kernels
// hold (overlap_slowdown); only the share c.ep_paired_fraction of the layer
// passes has a partner (warmup / cooldown / first and last micro-batch run
// alone, CombinedOneFOneBPairedFraction); each window hides the share
// EpOverlapAchievedFraction of what it schedules: ep_overlap_fraction for the
// NIC-bound part of its exchange, ep_overlap_nvlink_fraction for the part
// bound by SM-issued NVLink copies (kc.*_nvlink_share,
// CostModel::DispatchNvlinkShare; StackConstants has the mechanism and the
// evidence). Without the schedule nothing is hidden.
void AddEpTerms(const LayerKindTables& k, const Context& c, const KindCosts& kc,
                const GemmTerms& g, bool ep_overlap_schedule, Slots* l) {
  if (g.ep_total_s <= 0) return;
  double hidden = 0, slowdown = 0;
  if (ep_overlap_schedule) {
    const double bwd = c.bwd_gemm_factor;
    const double mb_total = l->s[kSMemBound];
    const double mb_fwd = mb_total / (1.0 + kBackwardMemoryBoundFactor);
    const double mb_bwd = mb_total - mb_fwd;
    const double elems = std::max(1.0, k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
    const double mlp_mb_share = k.mb_topk_elems / elems;
    const double attn_proj_f = kc.qkv.seconds + kc.oproj.seconds;
    const double pre_f = g.attn_f.seconds + attn_proj_f + g.shared_f.seconds +
                         kc.router.seconds + (1.0 - mlp_mb_share) * mb_fwd;
    const double pre_b = g.attn_b.seconds + bwd * (attn_proj_f + g.shared_f.seconds) +
                         2.0 * kc.router.seconds + (1.0 - mlp_mb_share) * mb_bwd;
    const double mlp_f = g.routed_f.seconds + mlp_mb_share * mb_fwd;
    const double mlp_b = bwd * g.routed_f.seconds + mlp_mb_share * mb_bwd;
    // --delay-wgrad-compute: the wgrads (one forward's GEMM time each when
    // bwd_gemm_factor is 2; none under LoRA, the router's always) move: the
    // experts' from beside dispatch_fwd to beside dispatch_bwd, the
    // attention side's from beside combine_fwd to the next layer's
    // combine_bwd (b_layer.mlp.backward_dw / pre_dispatch_computation.
    // backward_dw in TransformerLayerSchedulePlan.run).
    const bool delay = c.stack->features.delay_wgrad_compute &&
                       !(c.knobs->cuda_graphs && c.model->AttentionHasBias());
    const double attn_wgrad =
        delay ? (bwd - 1.0) * (attn_proj_f + g.shared_f.seconds) + kc.router.seconds : 0.0;
    const double mlp_wgrad = delay ? (bwd - 1.0) * g.routed_f.seconds : 0.0;
    const double so = c.overlap_slowdown;
    const PairedWindow w[4] = {
        OverlapWindow(kc.combine.seconds, pre_f + attn_wgrad, so),
        OverlapWindow(kc.dispatch.seconds, mlp_b - mlp_wgrad, so),
        OverlapWindow(kc.combine.seconds, mlp_f + mlp_wgrad, so),
        OverlapWindow(kc.combine.seconds, pre_b - attn_wgrad, so)};
    // Window 2 pairs the dispatch, the others a combine-volume exchange.
    const double nvlink_share[4] = {kc.combine_nvlink_share, kc.dispatch_nvlink_share,
                                    kc.combine_nvlink_share, kc.combine_nvlink_share};
    for (int i = 0; i < 4; ++i) {
      const double share =
          c.ep_paired_fraction * EpOverlapAchievedFraction(*c.stack, nvlink_share[i]);
      hidden += share * w[i].hidden_s;
      slowdown += share * w[i].slowdown_s;
    }
  }
  l->AddSeconds(kSEpHidden, hidden, g.ep_src);
  l->AddSeconds(kSEpExposed, g.ep_total_s - hidden, g.ep_src);
  l->AddSeconds(kSOverlapSlowdown, slowdown, g.ep_src);
}

// The norms of this layer the layernorm recompute re-runs and frees under
// the context's graphs and dispatcher (RecomputedNormsPerLayer,
// PreMlpNormRecomputed).
int LayerNormsRecomputed(const LayerKindTables& k, const Context& c) {
  return RecomputedNormsPerLayer(
      *c.model, k.moe && PreMlpNormRecomputed(c.knobs->cuda_graphs, c.stack->features,
                                              c.knobs->dispatcher));
}

// Recompute: forward work repeated before backward. Full: the forward of
// every compute slot plus core attention, memory-bound kernels and the EP
// forward. Selective: the chosen modules' forward, memory-bound ones priced
// per element of the layer's memory-bound traffic.
// nullopt: no recompute term (no recompute, or full recompute of another
// layer).
std::optional<double> RecomputeSeconds(const LayerKindTables& k, const Context& c,
                                       const KindCosts& kc, bool recompute_this_layer,
                                       const GemmTerms& g, const Cost& mb_f, const Slots& l) {
  const ModelSpec& m = *c.model;
  const Recompute& rc = c.knobs->recompute;
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;
  if (rc.mode == RecomputeMode::kFull && recompute_this_layer) {
    double fwd = 0;
    for (int i = kSAttnProj; i <= kSLogits; ++i) fwd += l.s[i] / fwd_bwd;
    fwd += g.attn_f.seconds + CpForwardMergeSeconds(c, kc) + mb_f.seconds + g.ep_fwd_s;
    return fwd;
  }
  if (rc.mode != RecomputeMode::kSelective) return std::nullopt;
  const double h = double(m.hidden_size);
  double t = 0;
  const double mb_per_elem =
      mb_f.seconds / std::max(1.0, k.mb_attn_elems + k.mb_mlp_elems + k.mb_topk_elems);
  if (rc.modules & kRecomputeCoreAttn) t += g.attn_f.seconds + CpForwardMergeSeconds(c, kc);
  if ((rc.modules & kRecomputeMlaUpProj) && m.attention == AttentionType::kMla) {
    // The up projections' share of the QKV GEMM time (their MACs over the
    // projections' h x qkv_out_dim), and the re-run's memory-bound traffic
    // with the restore copy (MlaUpProjRecomputeMemoryElemsPerToken), plus
    // at low precision the two GEMM inputs quantized again (read BF16,
    // write the operand).
    const double qkv_macs = h * k.qkv_out_dim;
    if (qkv_macs > 0) t += MlaUpProjRecomputeMacsPerToken(m) / qkv_macs * g.qkv.seconds;
    double bytes = MlaUpProjRecomputeMemoryElemsPerToken(m) * kActivationBytes;
    if (c.low_precision) {
      bytes += double(m.q_lora_rank + m.kv_lora_rank) * (kActivationBytes + c.operand_bytes);
    }
    t += c.cost->MemoryBound(c.tokens_rank * bytes).seconds;
  }
  if (rc.modules & kRecomputeLayerNorm) {
    // Each recomputed norm reads h and writes h.
    t += mb_per_elem * 2.0 * h * LayerNormsRecomputed(k, c);
  }
  if ((rc.modules & kRecomputeMoeAct) && k.moe) {
    // Per rank: etp x the rows (ETP gather) at ffn / etp columns each: the
    // activation re-run (read gate x ffn, write ffn) and the restore copy
    // into the discarded output (read + write ffn), plus at low precision
    // linear_fc2's saved BF16 input quantized again (read BF16, write the
    // operand: MoeActRecomputeHostSecondsOf has its host side).
    const double rows = m.moe_top_k * double(m.moe_ffn_hidden_size);
    t += mb_per_elem * (3.0 + 2.0) * rows;
    if (c.low_precision) {
      t += c.cost->MemoryBound(c.tokens_rank * rows * (kActivationBytes + c.operand_bytes))
               .seconds;
    }
  }
  if ((rc.modules & kRecomputeMlp) && !k.moe) t += g.mlp_f.seconds;
  if ((rc.modules & kRecomputeMoe) && k.moe) {
    t += g.routed_f.seconds + g.ep_fwd_s + mb_per_elem * k.mb_topk_elems;
  }
  if (SharedExpertsRecomputed(rc.modules) && k.moe) t += g.shared_f.seconds;
  return t;
}

// Activation offload: D2H in forward, H2D in backward, on the copy engines,
// hidden behind the layer's compute when it is long enough: forward holds
// ~1/3 of the compute, backward ~2/3; exposed = max(0, copy - share) each.
void AddOffloadTerms(const LayerKindTables& k, const Context& c, Slots* l) {
  const Knobs& knobs = *c.knobs;
  if (!knobs.offload_activations || knobs.offload_modules == 0) return;
  const Cost copy = c.cost->HostOffload(c.tokens_rank * OffloadedBytesPerToken(k, c));
  // The copy engines run beside everything the layer's stream waits on:
  // its compute and its exposed host time (kSLaunch). Hiding the copies
  // behind compute alone double-counted: more expert work would then hide
  // both the host time and the copies, and a busier GPU would finish
  // sooner (found by moe_load_imbalance 1.25 predicting faster than 1.0).
  const double compute = SlotSum(*l, kSAttnCore, kSLaunch);
  const double exposed = std::max(0.0, copy.seconds - compute / 3) +
                         std::max(0.0, copy.seconds - 2 * compute / 3);
  l->AddSeconds(kSOffloadExposed, exposed, SourceBit(copy.source));
  l->AddSeconds(kSOffloadHidden, 2 * copy.seconds - exposed, SourceBit(copy.source));
}

}  // namespace

Slots LayerCost(const LayerKindTables& k, const Context& c, bool recompute_this_layer,
                const KindCosts& kc) {
  if (IsMaxText(*c.stack)) return MaxTextLayerCost(k, c, recompute_this_layer, kc);
  Slots l;
  const GemmTerms g = AddGemmTerms(k, c, kc, &l);
  const Cost mb_f = AddMemoryBoundTerms(k, c, &l);
  // Megatron-Core overlaps EP all-to-all with another micro-batch's
  // compute in its combined 1F1B schedule: without pipelining or with the
  // interleaved schedule, and with at least two micro-batches.
  const bool combined_schedule_layout = c.micro_batches >= 2 && c.ep_overlap_schedule;
  const bool ep_overlap_schedule = c.knobs->overlap.ep_comm && combined_schedule_layout;
  // The 26.06 host hiding is keyed on the layout, not on the A2A-overlap
  // knob (StackConstants::moe_host_hidden_by_ep_overlap).
  AddHostTerms(k, c, combined_schedule_layout, &l);
  l.AddSeconds(kSLaunch, EpOverlapScheduleHostSeconds(k, c, ep_overlap_schedule), kPriorBit);
  // The EP overlap runs only with EP > 1 (Megatron-Core's requirement); its
  // CUDA_DEVICE_MAX_CONNECTIONS setting holds for the dense layers too.
  AddTpTerms(c, kc, g, ep_overlap_schedule && c.ep > 1, &l);
  AddCpTerms(c, kc, g, &l);
  AddEpTerms(k, c, kc, g, ep_overlap_schedule, &l);
  const std::optional<double> recompute =
      RecomputeSeconds(k, c, kc, recompute_this_layer, g, mb_f, l);
  if (recompute.has_value()) l.AddSeconds(kSRecompute, *recompute, kPriorBit);
  AddOffloadTerms(k, c, &l);
  return l;
}

bool SharedExpertsRecomputed(uint32_t recompute_modules) {
  return (recompute_modules & (kRecomputeSharedExperts | kRecomputeMoe)) != 0;
}

double CoreOutputSavedBytes(bool low_precision, double operand_bytes) {
  // TE FusedAttnFunc / FlashAttention save (q, k, v, out) for backward, out
  // in BF16 unless attention itself runs in FP8 (fp8_dot_product_attention,
  // not modelled). linear_proj takes out as its input: in BF16 it saves the
  // same tensor (no copy); in FP8/MXFP8/NVFP4 it saves its own quantized
  // copy (TE module/linear.py: after the forward GEMM the input keeps only
  // its column-wise data, inputmat.update_usage(rowwise_usage=False,
  // columnwise_usage=True): on Hopper the transposed FP8 copy, on Blackwell
  // the column-wise MXFP8 data, operand_bytes per element).
  return kActivationBytes + (low_precision ? operand_bytes : 0.0);
}

double OffloadedBytesPerToken(const LayerKindTables& k, const Context& c) {
  const Knobs& knobs = *c.knobs;
  if (!knobs.offload_activations) return 0;
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  const uint32_t o = knobs.offload_modules;
  const uint32_t r =
      knobs.recompute.mode == RecomputeMode::kSelective ? knobs.recompute.modules : 0u;
  const double core_out = double(m.num_attention_heads) * m.v_head_dim;
  double bytes = 0;
  if (o & kOffloadAttnNorm) bytes += h * kActivationBytes;
  if ((o & kOffloadCoreAttn) && !(r & kRecomputeCoreAttn)) {
    // q, k, v and the output, as the fused attention saves them (BF16);
    // MLA's q, k, v are not kept when its up projection is recomputed.
    const bool qkv_recomputed =
        m.attention == AttentionType::kMla && (r & kRecomputeMlaUpProj);
    bytes += ((qkv_recomputed ? 0.0 : k.core_attn_qkv) + core_out) * kActivationBytes;
  }
  if ((o & kOffloadAttnProj) && c.low_precision) bytes += core_out * c.operand_bytes;
  if (o & kOffloadMlpNorm) bytes += h * kActivationBytes;
  if (k.moe && !(r & kRecomputeMoe)) {
    // Routed rows: the busiest GPU's (moe_load_imbalance x the mean).
    const double busiest = std::max(1.0, knobs.moe_load_imbalance);
    if (o & kOffloadExpertFc1) {
      // linear_fc1 keeps its quantized input under MXFP8 / NVFP4 and, with
      // this offload, its original BF16 input otherwise (experts.py:
      // set_save_original_input "to avoid the CPU overhead of multiple d2h
      // copies").
      const bool block_scaled =
          knobs.precision == Precision::kMxfp8 || knobs.precision == Precision::kNvfp4;
      bytes += busiest * m.moe_top_k * h * c.etp *
               (block_scaled ? c.operand_bytes : kActivationBytes);
    }
    // The moe_act group wraps the activation (or its checkpoint under
    // moe_act recompute): what it keeps is its input, fc1's BF16 output.
    if (o & kOffloadMoeAct) bytes += busiest * k.moe_fc1_out * kActivationBytes;
  }
  return bytes;
}

// Saved activations of one layer for one micro-batch (bytes per GPU).
// Transformer Engine saves GEMM inputs in the GEMM precision, one copy per
// element (TE module/linear.py keeps only the column-wise quantized input
// after the forward GEMM, row-wise freed): norm outputs, permuted expert
// inputs, activation outputs (fc2's input); the core-attention output is
// held by the attention and by linear_proj (CoreOutputSavedBytes).
double LayerActivationBytes(const LayerKindTables& k,
                            const Context& c, bool full_recompute) {
  if (IsMaxText(*c.stack)) return MaxTextLayerActivationBytes(k, c, full_recompute);
  const ModelSpec& m = *c.model;
  const double h = double(m.hidden_size);
  if (full_recompute) return c.tokens_rank * h * kActivationBytes;
  const uint32_t r = c.knobs->recompute.mode == RecomputeMode::kSelective
                         ? c.knobs->recompute.modules
                         : 0u;
  const double gemm_in = c.low_precision ? c.operand_bytes : kActivationBytes;
  const double core_out = double(m.num_attention_heads) * m.v_head_dim;
  // Under core-attention recompute the attention's own saved output is not
  // kept (only the checkpoint's inputs q, k, v are); linear_proj still
  // saves its input, in the GEMM precision.
  double bytes = (k.act_attn - core_out) * kActivationBytes +
                 core_out * ((r & kRecomputeCoreAttn)
                                 ? gemm_in
                                 : CoreOutputSavedBytes(c.low_precision, c.operand_bytes));
  // The norm outputs, less those the layernorm recompute frees (only norms
  // that are modules of their own, RecomputedNormsPerLayer: a norm fused
  // into the next linear saves its output there).
  const double freed_norms = (r & kRecomputeLayerNorm) ? LayerNormsRecomputed(k, c) : 0;
  bytes += (k.act_norm - freed_norms * h) * gemm_in;
  if (!(r & kRecomputeMlaUpProj)) bytes += k.act_mla_up * kActivationBytes;
  if (!k.moe) {
    // The activation output (ffn wide) is linear_fc2's input, saved in the
    // GEMM precision; fc1's output (the activation's input) stays BF16.
    // act_mlp's h (the MLP block's input) is the input of the pre-MLP norm
    // that linear_fc1 (TE LayerNormLinear) saves, already one of act_attn's
    // two h-wide norm inputs (as for MoE layers): not counted twice.
    const double act_out = double(m.ffn_hidden_size);
    if (!(r & kRecomputeMlp)) {
      bytes += (k.act_mlp - act_out - h) * kActivationBytes + act_out * gemm_in;
    }
  } else {
    if (!(r & kRecomputeMoe)) {
      // The experts' input rows: etp x top_k per token after the ETP gather.
      // Dropless routing: the busiest GPU holds moe_load_imbalance x the
      // mean routed rows (permuted inputs, fc1 and activation outputs);
      // the router's probabilities and indices (2 x experts per token) are
      // per token, not routed.
      const double busiest = std::max(1.0, c.knobs->moe_load_imbalance);
      const double router = 2.0 * m.num_routed_experts;
      const double permuted = m.moe_top_k * h * c.etp;
      bytes += busiest * (permuted * gemm_in +
                          (k.act_moe - m.moe_top_k * h - router) * kActivationBytes) +
               router * kActivationBytes;
      if (!(r & kRecomputeMoeAct)) bytes += busiest * k.act_moe_act * gemm_in;
    }
    if (!SharedExpertsRecomputed(r) && k.act_shared > 0) {
      // As the dense MLP: the activation output is fc2's (quantized) input.
      const double shared_out = double(m.moe_ffn_hidden_size) * m.num_shared_experts;
      bytes += (k.act_shared - shared_out) * kActivationBytes + shared_out * gemm_in;
    }
  }
  if (c.knobs->offload_activations) {
    bytes = std::max(bytes - OffloadedBytesPerToken(k, c), h * kActivationBytes);
  }
  // k.act_* are per token before TP; the SP shard holds tokens_rank tokens.
  double total = c.tokens_rank * bytes;
  // Unfused attention keeps the BF16 probabilities for backward unless
  // core attention is recomputed (only where the stack runs the unfused
  // kernel, not where the sink layers' time is priced as it).
  const bool unfused = k.sliding ? c.sinks_unfused_sliding : c.sinks_unfused_full;
  if (unfused && c.stack->sink_attention_stores_probabilities && !(r & kRecomputeCoreAttn)) {
    total += c.tokens_cp * (double(m.num_attention_heads) / c.tp) * c.seq_len *
             kActivationBytes;
  }
  return total;
}

void KindLayerCosts(const LayerKindTables kinds[], const Context& c, const KindCosts kc[],
                    KindResults* r) {
  const Knobs& knobs = *c.knobs;
  const bool full = knobs.recompute.mode == RecomputeMode::kFull;
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds[k].count == 0) continue;
    r->cost[k] = LayerCost(kinds[k], c, /*recompute_this_layer=*/true, kc[k]);
    r->time[k] = CriticalPath(r->cost[k]);
    r->act[k] = LayerActivationBytes(kinds[k], c, full);
    if (full && knobs.recompute.num_layers > 0) {
      r->cost_partial[k] = LayerCost(kinds[k], c, false, kc[k]);
      r->cost_norc[k] = &r->cost_partial[k];
      r->time_norc[k] = CriticalPath(r->cost_partial[k]);
      r->act_norc[k] = LayerActivationBytes(kinds[k], c, false);
    } else {
      r->cost_norc[k] = &r->cost[k];
      r->time_norc[k] = r->time[k];
      r->act_norc[k] = r->act[k];
    }
    // A fully recomputed layer saves only its input: nothing to offload.
    const bool every_layer_recomputed = full && knobs.recompute.num_layers <= 0;
    r->fine_offload_norc[k] =
        every_layer_recomputed ? 0.0 : c.tokens_rank * OffloadedBytesPerToken(kinds[k], c);
  }
}

Slots HeadSlots(const Context& c, const ModelSpec& m, const Cost& logits, const Cost& ce_mem,
                const Cost& tp_gather, const Cost& mtp_proj, const Slots& mtp_layer) {
  const double fwd_bwd = 1.0 + c.bwd_gemm_factor;
  Slots head;
  head.Add(kSLogits, logits, fwd_bwd);
  head.Add(kSMemBound, ce_mem);
  if (c.tp > 1) head.Add(kSTpExposed, tp_gather, 2.0);
  if (m.mtp_layers > 0) {
    Slots mtp = mtp_layer;
    mtp.Add(kSAttnProj, mtp_proj, fwd_bwd);
    mtp.Add(kSLogits, logits, fwd_bwd);
    mtp.Add(kSMemBound, ce_mem);
    head.AddScaled(mtp, m.mtp_layers);
  }
  return head;
}

}  // namespace moetune::planner::step_model_internal
