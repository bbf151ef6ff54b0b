// What the target training framework accepts: one place for the rules that
// the search space, `predict` and the emitters share, so that the step model
// never prices a combination the framework refuses.
//
// Framework: Megatron-Core / Megatron-LM as of the shared tree's commit
// (../shared/third_party/megatron-lm/.megatron-commit, main 2026-08-22).
// Each rule names the check it mirrors (file and condition, in our words).
//
// Two uses:
//   MegatronViolation()  strict: the first rule a (layout, knobs) pair
//                        breaks. `predict` and every pinned value go through
//                        it; the search asserts it on every plan it derives.
//   NormalizeForMegatron()  for the searched (unpinned) axes: what the
//                        framework runs for a combination -- a feature it
//                        cannot combine with the rest is off (e.g. EP A2A
//                        overlap with full recompute). Pinned values are
//                        never changed; a conflict among them is a
//                        violation.
// Normalization only switches features off or, where a feature is required
// (grouped GEMM for moe_act recompute, P2P overlap for an interleaved pp = 2),
// on; it never changes a memory axis (recompute, offload, overlap level) in a
// way that differs between the members of one search block (search_space.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/framework.h"
#include "planner/model_spec.h"
#include "planner/search_space.h"
#include "planner/training_config.h"

namespace moetune::planner {

enum class FrameworkRule {
  kEpOverlapNeedsInterleaving,   // EP A2A overlap, pp > 1, vp == 1
  kEpOverlapWithFullRecompute,   // EP A2A overlap + full recompute
  kEpOverlapWithMoeRecompute,    // EP A2A overlap + recompute module 'moe'
  kEpOverlapWithDeepMtp,         // EP A2A overlap + more than one MTP layer
  kGraphsWithFullRecompute,      // per-layer CUDA graphs + full recompute
  kGraphsWithMoeRecompute,       // moe_router graph + recompute module 'moe'
  kMoeActRecomputeNeedsGroupedGemm,
  kMlaUpProjRecomputeNeedsMla,
  kAttnProjOffloadNeedsCoreAttn,
  kOffloadInsideRecomputedMoe,   // expert_fc1/moe_act offload + 'moe' recompute
  kInterleavedPp2NeedsP2pOverlap,
  kMoeBiasNeedsEtp1,             // MoE with linear biases (GPT-OSS), etp > 1
  kTpCommOverlapWithNvfp4,       // --tp-comm-overlap + NVFP4 (no userbuffers path)
  // Layer-wise CPU offloading (Knobs::offload_layers > 0):
  kLayerOffloadTooManyLayers,    // offload_layers >= num_layers
  kLayerOffloadNeedsPp1,         // with pp > 1
  kLayerOffloadWithRecompute,    // with any activation recompute
  kLayerOffloadWithModuleOffload,  // with --fine-grained-activation-offloading
  kLayerOffloadWithGraphs,       // with per-layer CUDA graphs
  // Layout rule (MegatronLayoutViolations): --use-tp-pp-dp-mapping with
  // pp > 1 needs ep x etp == tp x cp on a MoE model.
  kDpOutermostExpertGrid,
  // MaxText (MaxTextViolation / MaxTextLayoutViolation below).
  kMaxTextEtpIsTp,               // expert FFN dim is sharded over 'tensor'
  kMaxTextExpertAxisInData,      // the expert axis shards the batch: dp % ep
  kMaxTextPipelineEvenStages,    // pp x vp must divide the pipelined layers
  kMaxTextPipelineNoUnevenStages,  // first/last stage sizes not expressible
  kMaxTextPipelineMicrobatches,  // micro-batches % pp
  kMaxTextUnnamedAlwaysRemat,    // norms/activations have no checkpoint name
  kMaxTextOffloadNeedsName,      // offload of a tensor without a name
  kMaxTextFullRematNoOffload,    // remat_policy full cannot offload
  kMaxTextNoRankOrder,           // dp_outermost: MaxText has no rank order
  kMaxTextOptimizerStatesFp32,   // optimizer_states=bf16: no MaxText setting
  kMaxTextNoLayerOffload,        // offload_layers > 0: no MaxText setting
  kMaxTextNoOptimizerOffload,    // optimizer_offload_fraction > 0: none either
};
inline constexpr int kNumFrameworkRules =
    static_cast<int>(FrameworkRule::kMaxTextNoOptimizerOffload) + 1;

struct FrameworkRuleInfo {
  std::string_view name;     // "ep_overlap_needs_interleaving"
  std::string_view message;  // what the user reads, with the flag names
  std::string_view source;   // the Megatron check it mirrors
  // The Megatron file holding that check.
  std::string_view file = "megatron/core/transformer/transformer_config.py";
  Framework framework = Framework::kMegatron;  // whose rule it is
};
const FrameworkRuleInfo& RuleInfo(FrameworkRule rule);
// "Megatron-Core: <message> (<file>, <source>)", or "MaxText: ...".
std::string RuleText(FrameworkRule rule);

// True when the plan runs Megatron-Core's EP all-to-all overlap
// (--overlap-moe-expert-parallel-comm): a MoE model, ep > 1 and the ep_comm
// overlap knob on. (The step model hides EP time only with at least two
// micro-batches; the flag is still emitted.)
bool EpOverlapActive(const ModelSpec& model, const ParallelConfig& parallel,
                     const Knobs& knobs);
// True when P2P overlap is in effect: Megatron overlaps PP send/recv only in
// the interleaved schedule (vp > 1); with vp == 1 it turns
// overlap_p2p_comm off itself (arguments.py, validate_args).
bool P2pOverlapActive(const ParallelConfig& parallel, const Knobs& knobs);

// The first rule broken, or nullopt. `full_iteration_graphs`: the run's CUDA
// graphs capture the whole iteration (--cuda-graph-impl full_iteration, what
// `predict --cuda-graph-scope full_iteration` prices) rather than Transformer
// Engine's per-layer graphs (what moetune's Megatron files write): Megatron-
// Core refuses full recompute, a recomputed whole MoE layer under the
// moe_router graph and layer-wise CPU offloading only with per-layer graphs
// (TransformerConfig.__post_init__), so those three rules do not apply.
std::optional<FrameworkRule> MegatronViolation(const ModelSpec& model,
                                               const ParallelConfig& parallel,
                                               const Knobs& knobs,
                                               bool full_iteration_graphs = false);

// The knobs Megatron-Core runs for `knobs` on `parallel`, changing only axes
// not pinned in `fixed`; then the first rule still broken (a conflict among
// pinned values), if any.
struct NormalizedKnobs {
  Knobs knobs;
  std::optional<FrameworkRule> violation;
};
NormalizedKnobs NormalizeForMegatron(const ModelSpec& model,
                                     const ParallelConfig& parallel,
                                     const FixedKnobs& fixed, Knobs knobs,
                                     bool full_iteration_graphs = false);

// --- MaxText --------------------------------------------------------------
// MaxText as of AI-Hypercomputer/maxtext commit
// e591f30cbbf217ed67ef71263ec0538239f9c3b8 (2026-08-22); the files cited are
// under src/maxtext/ there (configs/base.yml, configs/types.py, layers/).
// The plan's layout maps onto MaxText's mesh as: tensor = tp, expert = ep,
// context = cp, pipeline = pp (vp = num_pipeline_repeats, MaxText's circular
// pipeline), and the rest of dp (dp / ep) = fsdp when shard_params, else
// data. Knobs: dispatcher all-to-all = ragged all-to-all, fused_dedup =
// Transformer Engine NCCL-EP dispatch/combine; grouped GEMM false = XLA
// ragged dot, true = TE/cuBLAS grouped GEMM; recompute/offload = a custom
// remat policy over MaxText's named checkpoints (MaxTextRematNames).

// The layout rules (they depend on the layout and the shape only): the first
// broken, or nullopt. The search drops such layouts; a pinned one is bad
// input naming the rule.
std::optional<FrameworkRule> MaxTextLayoutViolation(const ModelSpec& model,
                                                    const TrainingShape& shape,
                                                    const ParallelConfig& parallel);
// Every layout rule broken, as bits 1 << FrameworkRule (the search names the
// rule every layout of a pinned request breaks).
uint32_t MaxTextLayoutViolations(const ModelSpec& model, const TrainingShape& shape,
                                 const ParallelConfig& parallel);
// Megatron's layout rules (layout only; today the rank-order rule
// kDpOutermostExpertGrid), as bits 1 << FrameworkRule; the search drops such
// layouts as it drops MaxText's, and a pinned one is bad input naming the
// rule.
uint32_t MegatronLayoutViolations(const ModelSpec& model, const ParallelConfig& parallel);
// The layout rules of `framework`: MegatronLayoutViolations or
// MaxTextLayoutViolations.
uint32_t FrameworkLayoutViolations(Framework framework, const ModelSpec& model,
                                   const TrainingShape& shape, const ParallelConfig& parallel);
// The first rule of a set of bits: the rank-order rules, then MaxText's
// pipeline rules, then the rest; nullopt when none.
std::optional<FrameworkRule> FirstRule(uint32_t rules);
static_assert(kNumFrameworkRules <= 32, "rule sets are 32-bit masks");
// True for the layout rules (MaxTextLayoutViolation's and
// MegatronLayoutViolations'; layout and shape only).
bool IsLayoutRule(FrameworkRule rule);
// The knob rules: the first broken, or nullopt.
std::optional<FrameworkRule> MaxTextViolation(const ModelSpec& model,
                                              const ParallelConfig& parallel,
                                              const Knobs& knobs);
// What MaxText runs for `knobs`, changing only unpinned axes: the tensors no
// named checkpoint covers (norm outputs, activation-function outputs) are
// always recomputed, so every recompute set gains layernorm (and moe_act on
// a MoE model); offload of such tensors is dropped; remat_policy full keeps
// nothing to offload. Then the first knob rule still broken.
NormalizedKnobs NormalizeForMaxText(const ModelSpec& model, const ParallelConfig& parallel,
                                    const FixedKnobs& fixed, Knobs knobs);

// The transformer layers MaxText's pipeline splits over its stages: for a
// model with leading dense layers (MaxText's DeepSeek decoder block) only the
// MoE layers (types.py: pipeline_parallel_layers defaults to
// num_decoder_layers - first_num_dense_layers for decoder_block deepseek),
// else all layers.
int MaxTextPipelinedLayers(const ModelSpec& model);

// Per named checkpoint of MaxText's custom remat policy (configs/types.py,
// tensors of remat_policy 'custom'): 'remat', 'device' or 'offload'.
struct MaxTextRematName {
  std::string_view name;    // "decoder_layer_input", "context", ...
  std::string_view policy;  // "remat", "device", "offload"
};
// remat_policy ("full" or "custom") and, for custom, the names the model has
// with their placement; the mapping from the knobs is in the .cc, per name.
struct MaxTextRemat {
  std::string_view remat_policy;
  std::vector<MaxTextRematName> names;
};
MaxTextRemat MaxTextRematOf(const ModelSpec& model, const Knobs& knobs);

// Framework-generic forms: Megatron's or MaxText's rules
// (full_iteration_graphs: Megatron only, as above).
std::optional<FrameworkRule> FrameworkViolation(Framework framework, const ModelSpec& model,
                                                const ParallelConfig& parallel,
                                                const Knobs& knobs,
                                                bool full_iteration_graphs = false);
NormalizedKnobs NormalizeFor(Framework framework, const ModelSpec& model,
                             const ParallelConfig& parallel, const FixedKnobs& fixed,
                             Knobs knobs, bool full_iteration_graphs = false);

// What in a layout the normalization depends on (besides the model and the
// pins): the search builds one knob set per class.
struct RuleLayoutClass {
  bool expert_parallel = false;  // ep > 1
  bool non_interleaved_pp = false;  // pp > 1 and vp == 1
  bool interleaved_pp2 = false;     // pp == 2 and vp > 1
  bool expert_tensor_parallel = false;  // etp > 1
  bool tensor_parallel = false;  // tp > 1 (kTpCommOverlapWithNvfp4)
  // pp > 1 (kLayerOffloadNeedsPp1); implied by the two pipeline classes.
  bool pipelined = false;
  int Index() const {
    return (expert_parallel ? 1 : 0) | (non_interleaved_pp ? 2 : 0) |
           (interleaved_pp2 ? 4 : 0) | (expert_tensor_parallel ? 8 : 0) |
           (tensor_parallel ? 16 : 0) | (pipelined ? 32 : 0);
  }
  // False for the indices no layout has (a pipeline class without pp > 1,
  // or both pipeline classes).
  bool Consistent() const {
    return !(non_interleaved_pp && interleaved_pp2) &&
           (pipelined || (!non_interleaved_pp && !interleaved_pp2));
  }
};
inline constexpr int kNumRuleLayoutClasses = 64;
RuleLayoutClass ClassOf(const ParallelConfig& parallel);
// A representative layout of the class (for normalizing a knob set).
ParallelConfig RepresentativeLayout(const RuleLayoutClass& c);

}  // namespace moetune::planner
