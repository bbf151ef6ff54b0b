// gmock matchers for statuses, the one copy every test in the tree uses
// (Debian's Abseil ships none). Test-only.
//   EXPECT_THAT(status_or, StatusIs(absl::StatusCode::kInvalidArgument,
//                                   HasSubstr("tp")));
//   EXPECT_THAT(probe_status, StatusIs(ProbeCode::kUnavailable, _));
//   EXPECT_THAT(status, IsOk());
//   MOETUNE_ASSERT_OK_AND_ASSIGN(Plan plan, MakePlan());
// A status is an absl::Status, an absl::StatusOr<T> (its status()), or any
// type with ok(), code(), message() and ToString() whose codes have
// absl::StatusCode's numeric values (kernels::ProbeStatus, the std-only status
// of the probe code, which mirrors them one to one).
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace moetune::testing {
namespace internal_status {

// The status of a StatusOr (anything with status()), else the value itself.
template <typename S>
auto StatusOf(const S& s, int) -> decltype(s.status()) {
  return s.status();
}
template <typename S>
const S& StatusOf(const S& s, long) {
  return s;
}

template <typename Code>
std::string CodeName(Code code) {
  return std::string(absl::StatusCodeToString(static_cast<absl::StatusCode>(code)));
}

}  // namespace internal_status

MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "doesn't have" : "has") + " status code " +
               internal_status::CodeName(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const auto& status = internal_status::StatusOf(arg, 0);
  *result_listener << "whose status is " << status.ToString();
  return static_cast<int>(status.code()) == static_cast<int>(code) &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

MATCHER(IsOk, negation ? "isn't OK" : "is OK") {
  const auto& status = internal_status::StatusOf(arg, 0);
  *result_listener << "whose status is " << status.ToString();
  return status.ok();
}

}  // namespace moetune::testing

// Unwraps a StatusOr in a test, or fails the test with its status.
#define MOETUNE_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  MOETUNE_ASSERT_OK_AND_ASSIGN_IMPL(MOETUNE_STATUS_CONCAT(status_or_, __LINE__), lhs, expr)
#define MOETUNE_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                  \
  lhs = std::move(tmp).value()
#define MOETUNE_STATUS_CONCAT(a, b) MOETUNE_STATUS_CONCAT_IMPL(a, b)
#define MOETUNE_STATUS_CONCAT_IMPL(a, b) a##b
