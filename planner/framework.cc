#include "planner/framework.h"

#include <string>

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

}  // namespace moetune::planner
