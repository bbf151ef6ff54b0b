#include "planner/software_stack.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace moetune::planner {

absl::StatusOr<SoftwareStack> ParseSoftwareStack(std::string_view text) {
  SoftwareStack s;
  if (text.empty() || text == "latest") return s;
  absl::StatusOr<StackGeneration> g = StackGenerationForContainer(text);
  if (!g.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "software stack '", std::string(text),
        "' is not a container version YY.MM[.NN] (e.g. 26.02, 26.04.01, 26.06) or 'latest'"));
  }
  s.container = std::string(text);
  s.generation = *g;
  return s;
}

absl::StatusOr<SoftwareStack> ParseSoftwareStack(Framework framework, std::string_view text) {
  if (framework == Framework::kMegatron) return ParseSoftwareStack(text);
  SoftwareStack s;
  s.framework = framework;
  if (text.empty() || text == "latest") return s;
  // maxtext-YYYY-MM-DD: the NVIDIA JAX container tags (ghcr.io/nvidia/jax).
  constexpr std::string_view kPrefix = "maxtext-";
  bool ok = text.size() == kPrefix.size() + 10 && text.substr(0, kPrefix.size()) == kPrefix;
  for (size_t i = kPrefix.size(); ok && i < text.size(); ++i) {
    const size_t k = i - kPrefix.size();
    ok = (k == 4 || k == 7) ? text[i] == '-' : (text[i] >= '0' && text[i] <= '9');
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "software stack '", std::string(text),
        "' is not a MaxText container tag maxtext-YYYY-MM-DD (e.g. maxtext-2026-09-10) "
        "or 'latest'"));
  }
  s.container = std::string(text);
  return s;
}

std::string_view CudaGraphScopeName(CudaGraphScope scope) {
  switch (scope) {
    case CudaGraphScope::kModules:
      return "modules";
    case CudaGraphScope::kFullIteration:
      return "full_iteration";
  }
  return "modules";
}

absl::StatusOr<CudaGraphScope> ParseCudaGraphScope(std::string_view text) {
  for (CudaGraphScope s : {CudaGraphScope::kModules, CudaGraphScope::kFullIteration}) {
    if (text == CudaGraphScopeName(s)) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "CUDA graph scope '", std::string(text), "' is not one of: modules, full_iteration"));
}

std::string ToString(const SoftwareStack& stack) {
  if (stack.framework == Framework::kMaxText) {
    return absl::StrCat("MaxText ", stack.container);
  }
  const absl::StatusOr<bool> older = ContainerPredatesGenerations(stack.container);
  return absl::StrCat(stack.container, " (",
                      older.ok() && *older ? "older than every generation described; " : "",
                      "modelled as generation ",
                      std::string(StackGenerationName(stack.generation)), ")");
}

absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            const SearchOptions& options,
                                            StackGeneration generation) {
  return Search(problem, std::move(cost_model), options, StackConstantsFor(generation));
}

StackConstants StackConstantsFor(const SoftwareStack& stack) {
  if (stack.framework == Framework::kMaxText) return MaxTextStackConstants();
  StackConstants k = StackConstantsFor(stack.generation);
  k.features.graph_full_iteration = stack.cuda_graph_scope == CudaGraphScope::kFullIteration;
  const absl::StatusOr<bool> older = ContainerPredatesGenerations(stack.container);
  if (older.ok() && *older) k.predating_container = stack.container;
  return k;
}

absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            SearchOptions options, const SoftwareStack& stack) {
  options.framework = stack.framework;
  return Search(problem, std::move(cost_model), options, StackConstantsFor(stack));
}

}  // namespace moetune::planner
