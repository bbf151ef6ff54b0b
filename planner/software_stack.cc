#include "planner/software_stack.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace moetune::planner {

std::string_view FrameworkName(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kMaxText:
      return "maxtext";
  }
  return "unknown";
}

absl::StatusOr<Framework> ParseFramework(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  for (Framework f : {Framework::kMegatron, Framework::kMaxText}) {
    if (lower == FrameworkName(f)) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown framework '", std::string(name), "' (known: megatron, maxtext)"));
}

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

std::string ToString(const SoftwareStack& stack) {
  return absl::StrCat(stack.container, " (modelled as generation ",
                      std::string(StackGenerationName(stack.generation)), ")");
}

absl::StatusOr<SearchResult> SearchForStack(const SearchProblem& problem,
                                            std::shared_ptr<const CostModel> cost_model,
                                            const SearchOptions& options,
                                            StackGeneration generation) {
  return Search(problem, std::move(cost_model), options, StackConstantsFor(generation));
}

}  // namespace moetune::planner
