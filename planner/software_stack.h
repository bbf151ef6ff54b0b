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

struct SoftwareStack {
  Framework framework = Framework::kMegatron;
  std::string container = "latest";  // as given, e.g. "26.04.01"
  StackGeneration generation = kLatestStackGeneration;
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

// "26.04.01 (modelled as generation 26.02)", "latest (generation 26.06)";
// MaxText: "MaxText maxtext-2026-09-10".
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
// The step-model constants of a stack: its generation's, with its framework.
StackConstants StackConstantsFor(const SoftwareStack& stack);

}  // namespace moetune::planner
