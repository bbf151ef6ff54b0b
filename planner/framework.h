// The training framework a plan is for: what the search may propose (its
// rules, framework_rules.h), how the step model prices it (StackConstants::
// framework) and which config the emitters write. Megatron-Core /
// Megatron-Bridge (PyTorch + Transformer Engine) or MaxText (JAX + XLA +
// Transformer Engine). Its own header so that the step model's constants,
// the search options and the prediction can carry it without depending on
// the software-stack parser (software_stack.h).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace moetune::planner {

enum class Framework { kMegatron, kMaxText };
std::string_view FrameworkName(Framework framework);  // "megatron", "maxtext"
// Case-insensitive; InvalidArgument naming the text and the known names.
absl::StatusOr<Framework> ParseFramework(std::string_view name);

}  // namespace moetune::planner
