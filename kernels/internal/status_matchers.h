// Test-only matchers: EXPECT_THAT(s, StatusIs(ProbeCode::kInvalidArgument,
// HasSubstr("top_k"))) for ProbeStatus, absl::Status and absl::StatusOr<T>.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "kernels/probe_status.h"

namespace moetune::kernels {

inline void PrintTo(const ProbeStatus& s, std::ostream* os) { *os << s.ToString(); }

namespace testing_internal {

inline int CodeOf(const ProbeStatus& s) { return static_cast<int>(s.code()); }
inline int CodeOf(const absl::Status& s) { return static_cast<int>(s.code()); }
template <typename T>
int CodeOf(const absl::StatusOr<T>& s) { return static_cast<int>(s.status().code()); }

inline std::string MessageOf(const ProbeStatus& s) { return s.message(); }
inline std::string MessageOf(const absl::Status& s) { return std::string(s.message()); }
template <typename T>
std::string MessageOf(const absl::StatusOr<T>& s) { return std::string(s.status().message()); }

}  // namespace testing_internal

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const int actual = testing_internal::CodeOf(arg);
  const std::string message = testing_internal::MessageOf(arg);
  if (actual != static_cast<int>(code)) {
    *result_listener << "code " << actual << " (" << ProbeCodeName(static_cast<ProbeCode>(actual))
                     << "), message: " << message;
    return false;
  }
  return ::testing::ExplainMatchResult(message_matcher, message, result_listener);
}

}  // namespace moetune::kernels
