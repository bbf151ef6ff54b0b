// gmock matchers for absl::Status and absl::StatusOr (Debian's absl ships
// none). Test-only.
//   EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
//                                HasSubstr("tp")));
//   EXPECT_THAT(status_or, IsOk());
#pragma once

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace moetune::planner::testing {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + std::string(absl::StatusCodeToString(code)) +
               " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status.ToString();
  return status.code() == code &&
         ::testing::ExplainMatchResult(
             message_matcher, std::string(status.message()), result_listener);
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status.ToString();
  return status.ok();
}

}  // namespace moetune::planner::testing

// Unwraps a StatusOr in a test or fails it.
#define MOETUNE_ASSERT_OK_AND_ASSIGN(lhs, expr)                    \
  MOETUNE_ASSERT_OK_AND_ASSIGN_IMPL(                               \
      MOETUNE_STATUS_CONCAT(status_or_, __LINE__), lhs, expr)
#define MOETUNE_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                  \
  lhs = std::move(tmp).value()
#define MOETUNE_STATUS_CONCAT(a, b) MOETUNE_STATUS_CONCAT_IMPL(a, b)
#define MOETUNE_STATUS_CONCAT_IMPL(a, b) a##b
