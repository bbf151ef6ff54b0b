#include "planner/framework_rules.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"
#include "planner/precision.h"

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
      {"tp_comm_overlap_with_nvfp4",
       "--tp-comm-overlap (userbuffers) has no NVFP4 path: NVFP4 plans with tp > 1 run "
       "their TP collectives unoverlapped",
       "fill_userbuffers_buffer_for_all_gather builds buffers for FP8 and MXFP8 "
       "quantizers only and raises 'Unsupported quantizer for Userbuffers' "
       "otherwise (TE d0067d0da); every Megatron-Bridge NVFP4 recipe sets "
       "tp_comm_overlap=False (planner/precision.h TpCommOverlapSupports)",
       "transformer_engine/pytorch/module/base.py"},
      {"layer_offload_too_many_layers",
       "--cpu-offloading-num-layers must be below the model's number of layers",
       "TransformerConfig.__post_init__: with cpu_offloading, cpu_offloading_num_layers "
       "must be in [0, num_layers) ('CPU offloading can be done only for layers less than "
       "num_layers')"},
      {"layer_offload_needs_pp_1",
       "--cpu-offloading-num-layers (layer-wise CPU offloading) needs pp = 1",
       "TransformerConfig.__post_init__: cpu_offloading with pipeline_model_parallel_size > 1 "
       "raises 'Currently there is no support for Pipeline parallelism with CPU offloading'"},
      {"layer_offload_with_recompute",
       "--cpu-offloading-num-layers (layer-wise CPU offloading) cannot be combined with "
       "activation recompute (--recompute-granularity)",
       "TransformerConfig.__post_init__: cpu_offloading with recompute_granularity set raises "
       "'CPU offloading does not work when activation recomputation is enabled'"},
      {"layer_offload_with_module_offload",
       "--cpu-offloading-num-layers (layer-wise CPU offloading) cannot be combined with "
       "--fine-grained-activation-offloading",
       "TransformerConfig.__post_init__: fine_grained_activation_offloading asserts 'not "
       "cpu_offloading'"},
      {"layer_offload_with_graphs",
       "--cpu-offloading-num-layers (layer-wise CPU offloading) cannot be combined with "
       "per-layer CUDA graphs (--cuda-graph-impl transformer_engine / local)",
       "TransformerConfig.__post_init__: with cuda_graph_impl != none, cpu_offloading needs "
       "cuda_graph_impl full_iteration ('CUDA graphs not supported with CPU offloading.')"},
      {"dp_outermost_expert_grid",
       "--use-tp-pp-dp-mapping (dp_outermost) with pp > 1 needs the expert grid to match the "
       "dense one: expert_model_parallel_size x expert_tensor_parallel_size must equal "
       "tensor_model_parallel_size x context_parallel_size",
       "initialize_model_parallel: unless the order ends with pp (or pp == 1) it asserts "
       "expert_data_parallel_size == data_parallel_size ('When not using pp-last rank "
       "ordering, ...'), and the expert and dense pipeline groups must be the same; in order "
       "tp-cp-ep-pp-dp a pipeline group strides over tp x cp dense ranks and etp x ep expert "
       "ranks",
       "megatron/core/parallel_state.py"},
      // MaxText rows: file under src/maxtext/ at commit e591f30.
      {"maxtext_etp_is_tp",
       "expert weights are sharded over the tensor axis like the dense MLP, so "
       "expert tensor parallelism equals tp (etp != tp cannot be expressed)",
       "logical_axis_rules: 'mlp_moe' maps to ['fsdp_transpose', 'tensor', ...] and "
       "the expert kernels wi/wo are laid out ('exp', 'embed_moe', 'mlp_moe') in "
       "layers/moe.py",
       "configs/base.yml", Framework::kMaxText},
      {"maxtext_expert_axis_in_data",
       "the expert axis also shards the batch (like data/fsdp), so ep must divide "
       "dp = gpus / (tp x cp x pp)",
       "logical_axis_rules: 'activation_batch' maps to ['data', 'fsdp', "
       "'fsdp_transpose', 'expert']; the mesh is the product of all axes "
       "(maxtext_utils.create_device_mesh)",
       "configs/base.yml", Framework::kMaxText},
      {"maxtext_pipeline_even_stages",
       "pp x vp (stages x num_pipeline_repeats) must divide the pipelined layers "
       "(the MoE layers for a model with leading dense layers)",
       "set_derived_and_validate_values: num_pipeline_repeats = "
       "pipeline_parallel_layers / (num_stages x num_layers_per_pipeline_stage) "
       "with no remainder, and stages x repeats x layers_per_stage == "
       "pipeline_parallel_layers",
       "configs/types.py", Framework::kMaxText},
      {"maxtext_pipeline_no_uneven_stages",
       "every pipeline stage holds num_layers_per_pipeline_stage layers; "
       "first/last stage sizes (first_stage_layers, last_stage_layers) cannot "
       "be expressed",
       "base.yml: one num_layers_per_pipeline_stage for all stages, no per-stage "
       "key; types.py asserts the product equals pipeline_parallel_layers",
       "configs/base.yml", Framework::kMaxText},
      {"maxtext_pipeline_microbatches",
       "the number of pipeline micro-batches (gbs / (mbs x dp)) must be a "
       "multiple of pp",
       "set_derived_and_validate_values: num_pipeline_microbatches % "
       "num_stages == 0",
       "configs/types.py", Framework::kMaxText},
      {"maxtext_unnamed_always_remat",
       "every tensor without a named checkpoint (norm and activation-function "
       "outputs) is recomputed: recompute must include layernorm (and moe_act on "
       "a MoE model); 'none' cannot be expressed",
       "remat_policy 'custom' saves or offloads only the named tensors "
       "(jax.checkpoint_policies.save_and_offload_only_these_names over "
       "tensors_on_device / tensors_to_offload); there is no policy without "
       "jax.checkpoint (RematPolicy has no 'none')",
       "configs/types.py", Framework::kMaxText},
      {"maxtext_offload_needs_name",
       "only named checkpoints can be offloaded: mlp_norm and moe_act outputs "
       "have no name in MaxText",
       "the custom-policy tensor list (decoder_layer_input, context, mlpwi_0/1, "
       "mlpwo, moe_mlpwi_0/1, moe_mlpwo, query/key/value_proj, out_proj, mla_q, "
       "mla_kv, ...) has no post-attention-norm or activation output",
       "configs/types.py", Framework::kMaxText},
      {"maxtext_full_remat_no_offload",
       "remat_policy full saves nothing, so nothing can be offloaded; offload "
       "needs remat_policy custom",
       "decoders.py get_remat_policy: 'full' is jax.checkpoint with no policy; "
       "offload only through save_and_offload_only_these_names",
       "layers/decoders.py", Framework::kMaxText},
      {"maxtext_no_rank_order",
       "dp_outermost (Megatron's --use-tp-pp-dp-mapping) has no MaxText setting: which mesh "
       "axes cross slices is the ici_*/dcn_* split, which moetune emits and prices with the "
       "pipeline axis first over DCN; a data-first DCN split is not modelled for MaxText",
       "the mesh is given per axis as ici_<axis>_parallelism and dcn_<axis>_parallelism over "
       "mesh_axes; there is no rank-order key (maxtext_utils.create_device_mesh builds the "
       "hybrid mesh from those two lists)",
       "configs/base.yml", Framework::kMaxText},
      {"maxtext_optimizer_states_fp32",
       "optimizer_states=bf16 (BF16 Adam moments and main gradients, Megatron's "
       "precision-aware optimizer) has no MaxText setting; use optimizer_states=fp32",
       "optax.adamw keeps nu in the parameters' dtype (weight_dtype float32) and "
       "takes a dtype only for mu (mu_dtype); gradients follow weight_dtype",
       "configs/base.yml", Framework::kMaxText},
      {"maxtext_no_layer_offload",
       "offload_layers (Megatron's layer-wise CPU offloading) has no MaxText setting; "
       "MaxText offloads named tensors (--offload modules) through its remat policy",
       "remat_policy 'custom' places each named checkpoint on device, remat or offload "
       "(tensors_to_offload); there is no per-layer offload key",
       "configs/types.py", Framework::kMaxText},
      {"maxtext_no_optimizer_offload",
       "optimizer_offload_fraction (Megatron's optimizer-state CPU offload, "
       "HybridDeviceOptimizer) has no MaxText setting",
       "MaxText places the optimizer state with the parameters' sharding; there is no key "
       "that steps part of it on the host",
       "configs/base.yml", Framework::kMaxText},
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
  return absl::StrCat(info.framework == Framework::kMaxText ? "MaxText: " : "Megatron-Core: ",
                      Sv(info.message), " (", Sv(info.file), ", ",
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
                                               const Knobs& k, bool full_iteration_graphs) {
  // Per-layer (Transformer Engine) graphs; the whole-iteration graph has
  // none of their exclusions.
  const bool layer_graphs = k.cuda_graphs && !full_iteration_graphs;
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
  if (layer_graphs && full) return FrameworkRule::kGraphsWithFullRecompute;
  if (layer_graphs && moe_rc) return FrameworkRule::kGraphsWithMoeRecompute;
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
  if (p.tp > 1 && k.overlap.tp_comm && !TpCommOverlapSupports(k.precision)) {
    return FrameworkRule::kTpCommOverlapWithNvfp4;
  }
  if (k.offload_layers != 0) {
    if (k.offload_layers < 0 || k.offload_layers >= model.num_layers) {
      return FrameworkRule::kLayerOffloadTooManyLayers;
    }
    if (p.pp > 1) return FrameworkRule::kLayerOffloadNeedsPp1;
    if (k.recompute.mode != RecomputeMode::kNone) return FrameworkRule::kLayerOffloadWithRecompute;
    if (offload != 0) return FrameworkRule::kLayerOffloadWithModuleOffload;
    if (layer_graphs) return FrameworkRule::kLayerOffloadWithGraphs;
  }
  return std::nullopt;
}

NormalizedKnobs NormalizeForMegatron(const ModelSpec& model,
                                     const ParallelConfig& p,
                                     const FixedKnobs& fixed, Knobs k,
                                     bool full_iteration_graphs) {
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
  if (k.cuda_graphs && !full_iteration_graphs && !fixed.cuda_graphs && (full || moe_rc)) {
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
  // Layer-wise CPU offloading runs without per-layer graphs or fine-grained
  // offload (the search's axes already say so; the run defaults need it).
  if (k.offload_layers > 0) {
    if (k.cuda_graphs && !full_iteration_graphs && !fixed.cuda_graphs) k.cuda_graphs = false;
    // Not a Megatron check: TE's offload synchronizer counts one micro-
    // batch's forward, then its backward (cpu_offload.py fwd_step /
    // bwd_step), while the EP A2A overlap's combined 1F1B interleaves two
    // micro-batches layer by layer (pp 1). No run combines them and the
    // step model prices the offload sequentially, so the search leaves
    // the overlap off; a pinned one is kept as given.
    if (k.overlap.ep_comm && !fixed.overlap && !fixed.overlap_exact) k.overlap.ep_comm = false;
    if (k.offload_modules != 0 && !fixed.offload_modules) {
      k.offload_modules = 0;
      k.offload_activations = false;
    }
  }
  // TP comm overlap: no userbuffers path for NVFP4 (TpCommOverlapSupports).
  if (p.tp > 1 && k.overlap.tp_comm && !TpCommOverlapSupports(k.precision) && !fixed.overlap) {
    k.overlap.tp_comm = false;
  }
  NormalizedKnobs out;
  out.violation = MegatronViolation(model, p, k, full_iteration_graphs);
  out.knobs = k;
  return out;
}

int MaxTextPipelinedLayers(const ModelSpec& model) {
  const int moe_layers = model.NumMoeLayers();
  // Leading dense layers (first_k_dense_replace) then MoE layers: MaxText's
  // DeepSeek decoder block.
  if (model.IsMoe() && moe_layers < model.num_layers && model.first_k_dense > 0) {
    return moe_layers;
  }
  return model.num_layers;
}

uint32_t MaxTextLayoutViolations(const ModelSpec& model, const TrainingShape& shape,
                                 const ParallelConfig& p) {
  uint32_t broken = 0;
  auto mark = [&broken](FrameworkRule r) { broken |= 1u << static_cast<int>(r); };
  const int dp = ResolvedDp(shape, p);
  if (p.pp > 1) {
    if (p.first_stage_layers || p.last_stage_layers) {
      mark(FrameworkRule::kMaxTextPipelineNoUnevenStages);
    }
    if (MaxTextPipelinedLayers(model) % (p.pp * p.vp) != 0) {
      mark(FrameworkRule::kMaxTextPipelineEvenStages);
    }
    if (NumMicroBatches(shape, p) % p.pp != 0) mark(FrameworkRule::kMaxTextPipelineMicrobatches);
  }
  if (model.IsMoe() && (dp <= 0 || dp % p.ep != 0)) {
    mark(FrameworkRule::kMaxTextExpertAxisInData);
  }
  if (model.IsMoe() && p.etp != p.tp) mark(FrameworkRule::kMaxTextEtpIsTp);
  if (p.dp_outermost) mark(FrameworkRule::kMaxTextNoRankOrder);
  return broken;
}

// The rank-order rule (parallel_state.py initialize_model_parallel, order
// tp-cp-ep-pp-dp): a pipeline group strides over the GPUs before pp in the
// order, tp x cp on the dense grid and etp x ep on the expert grid
// (RankGenerator with cp = 1); the two grids' pipeline groups (and DP sizes,
// world / (tp x cp x pp) vs world / (etp x ep x pp)) agree only when
// etp x ep == tp x cp. With pp = 1 there are no pipeline groups to differ.
// A dense model has no expert grid of its own: the Megatron emitter sets
// its (unused) expert tensor size to tp x cp (emitters.cc).
namespace {
bool DpOutermostGridsAgree(const ModelSpec& model, const ParallelConfig& p) {
  if (!p.dp_outermost || p.pp <= 1 || !model.IsMoe()) return true;
  return p.ep * p.etp == p.tp * p.cp;
}
}  // namespace

uint32_t MegatronLayoutViolations(const ModelSpec& model, const ParallelConfig& p) {
  uint32_t broken = 0;
  if (!DpOutermostGridsAgree(model, p)) {
    broken |= 1u << static_cast<int>(FrameworkRule::kDpOutermostExpertGrid);
  }
  return broken;
}

uint32_t FrameworkLayoutViolations(Framework framework, const ModelSpec& model,
                                   const TrainingShape& shape, const ParallelConfig& p) {
  return framework == Framework::kMaxText ? MaxTextLayoutViolations(model, shape, p)
                                          : MegatronLayoutViolations(model, p);
}

std::optional<FrameworkRule> FirstRule(uint32_t rules) {
  // The rank-order rules first (only a pin of dp_outermost breaks them, so
  // they name what the user asked for), then in the order
  // MaxTextLayoutViolations checks them: pipeline rules first.
  for (FrameworkRule r : {FrameworkRule::kMaxTextNoRankOrder, FrameworkRule::kDpOutermostExpertGrid,
                          FrameworkRule::kMaxTextPipelineNoUnevenStages,
                          FrameworkRule::kMaxTextPipelineEvenStages,
                          FrameworkRule::kMaxTextPipelineMicrobatches,
                          FrameworkRule::kMaxTextExpertAxisInData, FrameworkRule::kMaxTextEtpIsTp}) {
    if (rules & (1u << static_cast<int>(r))) return r;
  }
  for (int i = 0; i < kNumFrameworkRules; ++i) {
    if (rules & (1u << i)) return static_cast<FrameworkRule>(i);
  }
  return std::nullopt;
}

std::optional<FrameworkRule> MaxTextLayoutViolation(const ModelSpec& model,
                                                    const TrainingShape& shape,
                                                    const ParallelConfig& p) {
  return FirstRule(MaxTextLayoutViolations(model, shape, p));
}

bool IsLayoutRule(FrameworkRule rule) {
  switch (rule) {
    case FrameworkRule::kMaxTextEtpIsTp:
    case FrameworkRule::kMaxTextExpertAxisInData:
    case FrameworkRule::kMaxTextPipelineEvenStages:
    case FrameworkRule::kMaxTextPipelineNoUnevenStages:
    case FrameworkRule::kMaxTextPipelineMicrobatches:
    case FrameworkRule::kMaxTextNoRankOrder:
    case FrameworkRule::kDpOutermostExpertGrid:
      return true;
    default:
      return false;
  }
}

namespace {

// The tensors MaxText recomputes whatever the policy: no checkpoint name.
uint32_t MaxTextAlwaysRecomputed(const ModelSpec& model) {
  return kRecomputeLayerNorm | (model.IsMoe() ? uint32_t{kRecomputeMoeAct} : 0u);
}
constexpr uint32_t kMaxTextUnnamedOffload = kOffloadMlpNorm | kOffloadMoeAct;

}  // namespace

std::optional<FrameworkRule> MaxTextViolation(const ModelSpec& model, const ParallelConfig&,
                                              const Knobs& k) {
  if (k.optimizer_states != OptimizerStates::kFp32) {
    return FrameworkRule::kMaxTextOptimizerStatesFp32;
  }
  if (k.offload_layers != 0) return FrameworkRule::kMaxTextNoLayerOffload;
  if (k.optimizer_offload_fraction > 0) return FrameworkRule::kMaxTextNoOptimizerOffload;
  const uint32_t always = MaxTextAlwaysRecomputed(model);
  const bool full = k.recompute.mode == RecomputeMode::kFull;
  if (!full && (k.recompute.mode == RecomputeMode::kNone ||
                (k.recompute.modules & always) != always)) {
    return FrameworkRule::kMaxTextUnnamedAlwaysRemat;
  }
  const uint32_t offload = k.offload_activations ? k.offload_modules : 0;
  if (offload & kMaxTextUnnamedOffload) return FrameworkRule::kMaxTextOffloadNeedsName;
  if (full && offload != 0) return FrameworkRule::kMaxTextFullRematNoOffload;
  return std::nullopt;
}

NormalizedKnobs NormalizeForMaxText(const ModelSpec& model, const ParallelConfig& p,
                                    const FixedKnobs& fixed, Knobs k) {
  if (!fixed.recompute && k.recompute.mode != RecomputeMode::kFull) {
    k.recompute.mode = RecomputeMode::kSelective;
    k.recompute.modules |= MaxTextAlwaysRecomputed(model);
  }
  if (!fixed.offload_modules) {
    k.offload_modules &= ~kMaxTextUnnamedOffload;
    if (k.recompute.mode == RecomputeMode::kFull) k.offload_modules = 0;
    k.offload_activations = k.offload_modules != 0;
  }
  NormalizedKnobs out;
  out.violation = MaxTextViolation(model, p, k);
  out.knobs = k;
  return out;
}

MaxTextRemat MaxTextRematOf(const ModelSpec& m, const Knobs& k) {
  MaxTextRemat out;
  if (k.recompute.mode == RecomputeMode::kFull) {
    out.remat_policy = "full";
    return out;
  }
  out.remat_policy = "custom";
  const uint32_t r = k.recompute.mode == RecomputeMode::kSelective ? k.recompute.modules : 0;
  const uint32_t o = k.offload_activations ? k.offload_modules : 0;
  auto place = [](bool remat, bool offload) -> std::string_view {
    return offload ? "offload" : remat ? "remat" : "device";
  };
  auto add = [&](std::string_view name, bool remat, bool offload) {
    out.names.push_back({name, place(remat, offload)});
  };
  // The layer input is the remat start point: never recomputed; Megatron's
  // attn_norm offload offloads it (the norm's input).
  add("decoder_layer_input", false, o & kOffloadAttnNorm);
  // Attention: 'context' is the attention kernel's output (core_attn).
  add("context", r & kRecomputeCoreAttn, o & kOffloadCoreAttn);
  if (m.attention == AttentionType::kMla) {
    add("mla_q", r & kRecomputeMlaUpProj, false);
    add("mla_kv", r & kRecomputeMlaUpProj, false);
  } else {
    add("query_proj", r & kRecomputeCoreAttn, false);
    add("key_proj", r & kRecomputeCoreAttn, false);
    add("value_proj", r & kRecomputeCoreAttn, false);
  }
  add("out_proj", r & kRecomputeCoreAttn, o & kOffloadAttnProj);
  // Dense MLP (dense layers and shared experts run MaxText's MlpBlock).
  const bool has_dense = !m.IsMoe() || m.NumMoeLayers() < m.num_layers;
  if (has_dense || m.num_shared_experts > 0) {
    const bool mlp_remat = r & (kRecomputeMlp | kRecomputeSharedExperts);
    add("mlpwi_0", mlp_remat, false);
    add("mlpwi_1", mlp_remat, false);
    add("mlpwo", mlp_remat, false);
  }
  if (m.IsMoe()) {
    const bool moe_remat = r & kRecomputeMoe;
    add("moe_mlpwi_0", moe_remat, o & kOffloadExpertFc1);
    add("moe_mlpwi_1", moe_remat, o & kOffloadExpertFc1);
    add("moe_mlpwo", moe_remat, false);
  }
  return out;
}

std::optional<FrameworkRule> FrameworkViolation(Framework framework, const ModelSpec& model,
                                                const ParallelConfig& p, const Knobs& k,
                                                bool full_iteration_graphs) {
  return framework == Framework::kMaxText
             ? MaxTextViolation(model, p, k)
             : MegatronViolation(model, p, k, full_iteration_graphs);
}

NormalizedKnobs NormalizeFor(Framework framework, const ModelSpec& model,
                             const ParallelConfig& p, const FixedKnobs& fixed, Knobs k,
                             bool full_iteration_graphs) {
  return framework == Framework::kMaxText
             ? NormalizeForMaxText(model, p, fixed, k)
             : NormalizeForMegatron(model, p, fixed, k, full_iteration_graphs);
}

RuleLayoutClass ClassOf(const ParallelConfig& p) {
  RuleLayoutClass c;
  c.expert_parallel = p.ep > 1;
  c.non_interleaved_pp = p.pp > 1 && p.vp == 1;
  c.interleaved_pp2 = p.pp == 2 && p.vp > 1;
  c.expert_tensor_parallel = p.etp > 1;
  c.tensor_parallel = p.tp > 1;
  c.pipelined = p.pp > 1;
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
  } else if (c.pipelined) {
    p.pp = 4;  // interleaved, pp > 2
    p.vp = 2;
  }
  if (c.expert_tensor_parallel) p.etp = 2;
  if (c.tensor_parallel) p.tp = 2;
  return p;
}

}  // namespace moetune::planner
