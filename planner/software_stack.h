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
#include "planner/search.h"
#include "planner/step_model.h"

namespace moetune::planner {

// The training framework a plan is for: what the search may propose (its
// rules), how the step model prices it and which config the emitters write.
// Megatron-Core / Megatron-Bridge (PyTorch + Transformer Engine) or MaxText
// (JAX + XLA + Transformer Engine).
// (enum class Framework is declared in step_model.h, beside StackGeneration,
// because the step model's constants carry it.)
std::string_view FrameworkName(Framework framework);  // "megatron", "maxtext"
// Case-insensitive; InvalidArgument naming the text and the known names.
absl::StatusOr<Framework> ParseFramework(std::string_view name);

struct SoftwareStack {
  Framework framework = Framework::kMegatron;
  std::string container = "latest";  // as given, e.g. "26.04.01"
  StackGeneration generation = kLatestStackGeneration;
};

// "" or "latest" -> the latest generation; "YY.MM[.NN]" -> its generation
// (StackGenerationForContainer). InvalidArgument naming the text otherwise.
absl::StatusOr<SoftwareStack> ParseSoftwareStack(std::string_view text);

// "26.04.01 (modelled as generation 26.02)", "latest (generation 26.06)".
std::string ToString(const SoftwareStack& stack);

// Search() with the step model of `generation` (same contract as Search).
absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            const SearchOptions& options,
                                            StackGeneration generation);

}  // namespace moetune::planner
