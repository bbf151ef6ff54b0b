// What software the user runs, as an input: a Megatron-Core / Megatron-Bridge
// container version ("26.04.01") or "latest", and the step-model generation
// it selects (StackGeneration, step_model.h). The CLI (--stack), the API
// (software_stack) and the emitted configs' header carry it; Search() models
// the latest generation, SearchForStack() the given one.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "planner/framework.h"  // Framework, FrameworkName, ParseFramework
#include "planner/search.h"
#include "planner/step_model.h"

namespace moetune::planner {

// What a run's CUDA graphs capture.
//  kModules: the modules moetune's Megatron file names (--cuda-graph-impl
//    transformer_engine --cuda-graph-modules attn moe_router
//    moe_preprocess for MoE; whole layers for dense models): a dropless
//    MoE keeps its data-dependent expert shapes eager. The default, and
//    the only scope `plan` emits.
//  kFullIteration: the whole step (--cuda-graph-impl full_iteration with a
//    static MoE token budget), as Megatron-Bridge's 26.06+ MoE performance
//    recipes run (MegatronFeatures::graph_full_iteration); a budget can
//    drop tokens, so moetune prices it for runs that use it (predict) but
//    never emits it.
enum class CudaGraphScope { kModules, kFullIteration };
// "modules", "full_iteration".
std::string_view CudaGraphScopeName(CudaGraphScope scope);
// Case-sensitive; InvalidArgument naming the text and the choices otherwise.
absl::StatusOr<CudaGraphScope> ParseCudaGraphScope(std::string_view text);

struct SoftwareStack {
  Framework framework = Framework::kMegatron;
  std::string container = "latest";  // as given, e.g. "26.04.01"
  StackGeneration generation = kLatestStackGeneration;
  // What the run's CUDA graphs capture (when the plan uses them); see
  // CudaGraphScope. The validator sets kFullIteration for the published
  // rows whose recipes ran it.
  CudaGraphScope cuda_graph_scope = CudaGraphScope::kModules;
};

// "" or "latest" -> the latest generation; "YY.MM[.NN]" -> its generation
// (StackGenerationForContainer). InvalidArgument naming the text otherwise.
absl::StatusOr<SoftwareStack> ParseSoftwareStack(std::string_view text);
// The stack of `framework`: for Megatron as above; for MaxText "" or
// "latest", or an NVIDIA JAX MaxText container tag "maxtext-YYYY-MM-DD"
// (e.g. maxtext-2026-09-10, the seed run's container). A MaxText stack keeps
// the latest Megatron generation's constants (the step model tells MaxText
// apart by StackConstants::framework). InvalidArgument naming the text.
absl::StatusOr<SoftwareStack> ParseSoftwareStack(Framework framework, std::string_view text);

// "26.04.01 (modelled as generation 26.02)", "latest (modelled as generation
// 26.06)", "25.04.01 (older than every generation described; modelled as
// generation 26.02)"; MaxText: "MaxText maxtext-2026-09-10".
std::string ToString(const SoftwareStack& stack);

// Search() with the step model of `generation` (same contract as Search).
absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            const SearchOptions& options,
                                            StackGeneration generation);
// Search() for `stack`: the search's rules (options.framework) and the step
// model's constants (StackConstants::framework) both take stack.framework.
absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            SearchOptions options, const SoftwareStack& stack);
// The step-model constants of a stack: its generation's, with its framework,
// its CUDA-graph scope (MegatronFeatures::graph_full_iteration =
// cuda_graph_scope == kFullIteration) and, for a container older than every
// generation described, that container (StackConstants::predating_container:
// the prediction's interval then spans the errors of settings no published
// 2026 run measured).
StackConstants StackConstantsFor(const SoftwareStack& stack);

}  // namespace moetune::planner
