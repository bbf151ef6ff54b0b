// Debian's absl is built with its own absl::string_view (not an alias of
// std::string_view); these adapters keep the public headers on
// std::string_view.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace moetune::planner::internal {

inline absl::string_view Sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline std::string Lower(std::string_view s) {
  return absl::AsciiStrToLower(Sv(s));
}

}  // namespace moetune::planner::internal
