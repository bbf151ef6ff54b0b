#include "planner/framework_rules.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"

namespace moetune::planner {
namespace {

using internal::Sv;


// Indexed by FrameworkRule.
const std::array<FrameworkRuleInfo, kNumFrameworkRules>& Table() {
  static const auto* table = new std::array<FrameworkRuleInfo, kNumFrameworkRules>{{
      {"ep_overlap_needs_interleaving",
       "--overlap-moe-expert-parallel-comm needs virtual pipeline stages when "
       "pp > 1",
       "TransformerConfig.__post_init__: with overlap_moe_expert_parallel_"
       "comm and pipeline_model_parallel_size > 1, virtual_pipeline_model_"
       "parallel_size must be set"},
      {"ep_overlap_with_full_recompute",
       "--overlap-moe-expert-parallel-comm cannot be combined with full "
       "recompute (--recompute-granularity full)",
       "TransformerConfig.__post_init__: overlap_moe_expert_parallel_comm "
       "asserts recompute_granularity != 'full' and no recompute_method"},
      {"ep_overlap_with_moe_recompute",
       "--overlap-moe-expert-parallel-comm cannot be combined with recomputing "
       "the whole MoE layer (--recompute-modules moe)",
       "TransformerConfig.__post_init__: overlap_moe_expert_parallel_comm "
       "asserts 'moe' not in recompute_modules"},
      {"ep_overlap_with_deep_mtp",
       "--overlap-moe-expert-parallel-comm supports at most one MTP layer",
       "TransformerConfig.__post_init__: overlap_moe_expert_parallel_comm "
       "asserts mtp_num_layers in (None, 0, 1)"},
      {"graphs_with_full_recompute",
       "per-layer CUDA graphs (--cuda-graph-impl transformer_engine) cannot be "
       "combined with full recompute; only full-iteration graphs can",
       "TransformerConfig.__post_init__: with cuda_graph_impl != none and "
       "recompute_granularity != 'selective', cuda_graph_impl must be "
       "full_iteration"},
      {"graphs_with_moe_recompute",
       "the moe_router CUDA graph (--cuda-graph-modules moe_router) cannot be "
       "combined with recomputing the whole MoE layer (--recompute-modules moe)",
       "TransformerConfig.__post_init__: with cuda_graph_impl "
       "transformer_engine and 'moe' in recompute_modules, moe_router must not "
       "be in cuda_graph_modules"},
      {"moe_act_recompute_needs_grouped_gemm",
       "--recompute-modules moe_act needs --moe-grouped-gemm",
       "TransformerConfig.__post_init__: 'moe_act in recompute_modules is "
       "only supported with moe_grouped_gemm'"},
      {"mla_up_proj_recompute_needs_mla",
       "--recompute-modules mla_up_proj needs multi-latent attention",
       "TransformerConfig.__post_init__: 'mla_up_proj in recompute_modules "
       "is only supported with multi_latent_attention'"},
      {"attn_proj_offload_needs_core_attn",
       "--offload-modules attn_proj needs core_attn offloaded too",
       "TransformerConfig.__post_init__: attn_proj cannot be in "
       "offload_modules without core_attn"},
      {"offload_inside_recomputed_moe",
       "expert_fc1/moe_act cannot be offloaded while the whole MoE layer is "
       "recomputed (--recompute-modules moe)",
       "TransformerConfig.__post_init__: with 'moe' in recompute_modules, "
       "offload_modules must not contain moe_act, expert_fc1 or "
       "fused_group_mlp"},
      {"interleaved_pp2_needs_p2p_overlap",
       "the interleaved schedule (vp > 1) with P2P overlap off "
       "(--no-overlap-p2p-communication) needs pp > 2",
       "validate_args: with virtual pipeline stages and "
       "overlap_p2p_comm off, pipeline_model_parallel_size must be > 2",
       "megatron/training/arguments.py"},
      {"moe_bias_needs_etp_1",
       "a MoE model with linear biases (GPT-OSS) needs --expert-tensor-parallel-size 1",
       "TransformerConfig.__post_init__: with num_moe_experts and add_bias_linear, "
       "expert_tensor_parallel_size must be 1 ('Bias in Moe is only supported when "
       "ETP==1')"},
  }};
  return *table;
}

uint32_t SelectiveModules(const Knobs& k) {
  return k.recompute.mode == RecomputeMode::kSelective ? k.recompute.modules : 0;
}

constexpr uint32_t kMoeOffloadBits = kOffloadExpertFc1 | kOffloadMoeAct;

}  // namespace

const FrameworkRuleInfo& RuleInfo(FrameworkRule rule) {
  // (A rule added to the enum without a row here would read an empty row;
  // RuleTextTest checks every row is filled.)
  return Table()[static_cast<size_t>(rule)];
}

std::string RuleText(FrameworkRule rule) {
  const FrameworkRuleInfo& info = RuleInfo(rule);
  return absl::StrCat("Megatron-Core: ", Sv(info.message), " (", Sv(info.file), ", ",
                      Sv(info.source), ")");
}

bool EpOverlapActive(const ModelSpec& model, const ParallelConfig& p,
                     const Knobs& k) {
  return model.IsMoe() && p.ep > 1 && k.overlap.ep_comm;
}

bool P2pOverlapActive(const ParallelConfig& p, const Knobs& k) {
  return p.pp > 1 && p.vp > 1 && k.overlap.pp_comm;
}

std::optional<FrameworkRule> MegatronViolation(const ModelSpec& model,
                                               const ParallelConfig& p,
                                               const Knobs& k) {
  const bool full = k.recompute.mode == RecomputeMode::kFull;
  const uint32_t modules = SelectiveModules(k);
  const bool moe_rc = model.IsMoe() && (modules & kRecomputeMoe);
  const uint32_t offload = k.offload_activations ? k.offload_modules : 0;
  if (EpOverlapActive(model, p, k)) {
    if (p.pp > 1 && p.vp == 1) return FrameworkRule::kEpOverlapNeedsInterleaving;
    if (full) return FrameworkRule::kEpOverlapWithFullRecompute;
    if (moe_rc) return FrameworkRule::kEpOverlapWithMoeRecompute;
    if (model.mtp_layers > 1) return FrameworkRule::kEpOverlapWithDeepMtp;
  }
  if (k.cuda_graphs && full) return FrameworkRule::kGraphsWithFullRecompute;
  if (k.cuda_graphs && moe_rc) return FrameworkRule::kGraphsWithMoeRecompute;
  if ((modules & kRecomputeMoeAct) && !(model.IsMoe() && k.grouped_gemm)) {
    return FrameworkRule::kMoeActRecomputeNeedsGroupedGemm;
  }
  if ((modules & kRecomputeMlaUpProj) && model.attention != AttentionType::kMla) {
    return FrameworkRule::kMlaUpProjRecomputeNeedsMla;
  }
  if ((offload & kOffloadAttnProj) && !(offload & kOffloadCoreAttn)) {
    return FrameworkRule::kAttnProjOffloadNeedsCoreAttn;
  }
  if (moe_rc && (offload & kMoeOffloadBits)) {
    return FrameworkRule::kOffloadInsideRecomputedMoe;
  }
  if (p.pp == 2 && p.vp > 1 && !k.overlap.pp_comm) {
    return FrameworkRule::kInterleavedPp2NeedsP2pOverlap;
  }
  if (model.IsMoe() && model.attention_bias && p.etp > 1) {
    return FrameworkRule::kMoeBiasNeedsEtp1;
  }
  return std::nullopt;
}

NormalizedKnobs NormalizeForMegatron(const ModelSpec& model,
                                     const ParallelConfig& p,
                                     const FixedKnobs& fixed, Knobs k) {
  const bool full = k.recompute.mode == RecomputeMode::kFull;
  const uint32_t modules = SelectiveModules(k);
  const bool moe_rc = model.IsMoe() && (modules & kRecomputeMoe);
  // moe_act recompute runs on the grouped-GEMM path only.
  if ((modules & kRecomputeMoeAct) && model.IsMoe() && !k.grouped_gemm &&
      !fixed.grouped_gemm) {
    k.grouped_gemm = true;
  }
  // EP A2A overlap: off where Megatron cannot schedule it.
  if (EpOverlapActive(model, p, k) && !fixed.overlap &&
      ((p.pp > 1 && p.vp == 1) || full || moe_rc || model.mtp_layers > 1)) {
    k.overlap.ep_comm = false;
  }
  // Per-layer CUDA graphs: off with full recompute or a recomputed MoE.
  if (k.cuda_graphs && !fixed.cuda_graphs && (full || moe_rc)) {
    k.cuda_graphs = false;
  }
  // Nothing inside a recomputed MoE layer is offloaded.
  if (moe_rc && !fixed.offload_modules && (k.offload_modules & kMoeOffloadBits)) {
    k.offload_modules &= ~kMoeOffloadBits;
    k.offload_activations = k.offload_modules != 0;
  }
  // The non-interleaved schedule has no P2P overlap (Megatron turns
  // overlap_p2p_comm off itself, pinned or not); the interleaved one at
  // pp = 2 requires it.
  if (p.pp > 1 && p.vp == 1) k.overlap.pp_comm = false;
  if (p.pp == 2 && p.vp > 1 && !k.overlap.pp_comm && !fixed.overlap) {
    k.overlap.pp_comm = true;
  }
  NormalizedKnobs out;
  out.violation = MegatronViolation(model, p, k);
  out.knobs = k;
  return out;
}

RuleLayoutClass ClassOf(const ParallelConfig& p) {
  RuleLayoutClass c;
  c.expert_parallel = p.ep > 1;
  c.non_interleaved_pp = p.pp > 1 && p.vp == 1;
  c.interleaved_pp2 = p.pp == 2 && p.vp > 1;
  c.expert_tensor_parallel = p.etp > 1;
  return c;
}

ParallelConfig RepresentativeLayout(const RuleLayoutClass& c) {
  ParallelConfig p;
  p.ep = c.expert_parallel ? 2 : 1;
  if (c.non_interleaved_pp) {
    p.pp = 2;
    p.vp = 1;
  } else if (c.interleaved_pp2) {
    p.pp = 2;
    p.vp = 2;
  }
  if (c.expert_tensor_parallel) p.etp = 2;
  return p;
}

}  // namespace moetune::planner
