#include "testing/status_matchers.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/probe_status.h"

namespace moetune::testing {
namespace {

using ::moetune::kernels::ProbeCode;
using ::moetune::kernels::ProbeStatus;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(StatusMatchersTest, AbslStatusAndStatusOr) {
  const absl::Status bad = absl::InvalidArgumentError("tp=3 does not divide 8 GPUs");
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tp=3")));
  EXPECT_THAT(bad, Not(StatusIs(absl::StatusCode::kNotFound, HasSubstr("tp=3"))));
  EXPECT_THAT(bad, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pp"))));
  EXPECT_THAT(bad, Not(IsOk()));
  EXPECT_THAT(absl::OkStatus(), IsOk());

  const absl::StatusOr<int> value = 7;
  const absl::StatusOr<int> missing = absl::NotFoundError("no preset 'x'");
  EXPECT_THAT(value, IsOk());
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound, HasSubstr("'x'")));
  EXPECT_THAT(missing, Not(IsOk()));
}

TEST(StatusMatchersTest, ProbeStatusCodesAreAbslCodes) {
  const ProbeStatus s(ProbeCode::kUnavailable, "no CUDA device");
  EXPECT_THAT(s, StatusIs(ProbeCode::kUnavailable, HasSubstr("CUDA")));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("CUDA")));
  EXPECT_THAT(s, Not(StatusIs(ProbeCode::kUnimplemented, HasSubstr("CUDA"))));
  EXPECT_THAT(s, Not(IsOk()));
  EXPECT_THAT(ProbeStatus::Ok(), IsOk());
}

TEST(StatusMatchersTest, ExplainsAMismatch) {
  ::testing::StringMatchResultListener listener;
  const absl::Status bad = absl::InternalError("boom");
  EXPECT_FALSE(::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("boom")), bad, &listener));
  EXPECT_THAT(listener.str(), HasSubstr("INTERNAL: boom"));
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tp"))),
            "has status code INVALID_ARGUMENT and a message that has substring \"tp\"");
}

TEST(StatusMatchersTest, AssertOkAndAssign) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(const int v, absl::StatusOr<int>(41));
  EXPECT_EQ(v + 1, 42);
}

}  // namespace
}  // namespace moetune::testing
