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

#include <optional>
#include <string>
#include <string_view>

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
};
inline constexpr int kNumFrameworkRules =
    static_cast<int>(FrameworkRule::kMoeBiasNeedsEtp1) + 1;

struct FrameworkRuleInfo {
  std::string_view name;     // "ep_overlap_needs_interleaving"
  std::string_view message;  // what the user reads, with the flag names
  std::string_view source;   // the Megatron check it mirrors
  // The Megatron file holding that check.
  std::string_view file = "megatron/core/transformer/transformer_config.py";
};
const FrameworkRuleInfo& RuleInfo(FrameworkRule rule);
// "Megatron-Core: <message> (<source>)".
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

// The first rule broken, or nullopt.
std::optional<FrameworkRule> MegatronViolation(const ModelSpec& model,
                                               const ParallelConfig& parallel,
                                               const Knobs& knobs);

// The knobs Megatron-Core runs for `knobs` on `parallel`, changing only axes
// not pinned in `fixed`; then the first rule still broken (a conflict among
// pinned values), if any.
struct NormalizedKnobs {
  Knobs knobs;
  std::optional<FrameworkRule> violation;
};
NormalizedKnobs NormalizeForMegatron(const ModelSpec& model,
                                     const ParallelConfig& parallel,
                                     const FixedKnobs& fixed, Knobs knobs);

// What in a layout the normalization depends on (besides the model and the
// pins): the search builds one knob set per class.
struct RuleLayoutClass {
  bool expert_parallel = false;  // ep > 1
  bool non_interleaved_pp = false;  // pp > 1 and vp == 1
  bool interleaved_pp2 = false;     // pp == 2 and vp > 1
  bool expert_tensor_parallel = false;  // etp > 1
  int Index() const {
    return (expert_parallel ? 1 : 0) | (non_interleaved_pp ? 2 : 0) |
           (interleaved_pp2 ? 4 : 0) | (expert_tensor_parallel ? 8 : 0);
  }
};
inline constexpr int kNumRuleLayoutClasses = 16;
RuleLayoutClass ClassOf(const ParallelConfig& parallel);
// A representative layout of the class (for normalizing a knob set).
ParallelConfig RepresentativeLayout(const RuleLayoutClass& c);

}  // namespace moetune::planner
