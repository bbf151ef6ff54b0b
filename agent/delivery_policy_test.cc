#include "agent/delivery_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::agent {
namespace {

namespace v1 = ::moetune::v1;
using ::testing::HasSubstr;

// Error details as the server sends them (server/grpc_status.h).
std::string Details(v1::Refusal::Scope scope, const std::string& limit, int64_t value) {
  v1::Refusal r;
  r.set_scope(scope);
  r.set_limit(limit);
  r.set_limit_value(value);
  v1::RpcStatus s;
  s.set_code(8);
  google::protobuf::Any* any = s.add_details();
  any->set_type_url("type.googleapis.com/moetune.v1.Refusal");
  any->set_value(r.SerializeAsString());
  return s.SerializeAsString();
}

TEST(DeliveryPolicyTest, CallFailures) {
  const std::string message_scope =
      Details(v1::Refusal::REFUSAL_SCOPE_MESSAGE, "max_samples_per_measurement", 1000);
  const std::string caller_scope =
      Details(v1::Refusal::REFUSAL_SCOPE_CALLER, "concurrent calls per agent", 16);
  struct Case {
    const char* what;
    absl::StatusCode code;
    std::string details;
    int64_t request_bytes;
    int64_t server_max;
    bool permanent;
  };
  const Case cases[] = {
      {"malformed result", absl::StatusCode::kInvalidArgument, "", 100, 1000, true},
      {"per-message limit", absl::StatusCode::kResourceExhausted, message_scope, 100, 1000, true},
      {"per-agent concurrency", absl::StatusCode::kResourceExhausted, caller_scope, 100, 1000, false},
      // No Refusal: gRPC's size check explains it only when the request is
      // larger than the advertised limit.
      {"over max_message_bytes", absl::StatusCode::kResourceExhausted, "", 1001, 1000, true},
      {"at max_message_bytes", absl::StatusCode::kResourceExhausted, "", 1000, 1000, false},
      {"limit not advertised", absl::StatusCode::kResourceExhausted, "", 1 << 30, 0, false},
      {"undecodable details", absl::StatusCode::kResourceExhausted, "\xff\xff", 100, 1000, false},
      {"store down", absl::StatusCode::kUnavailable, "", 100, 1000, false},
      {"session unknown", absl::StatusCode::kNotFound, "", 100, 1000, false},
      {"bad token", absl::StatusCode::kUnauthenticated, "", 100, 1000, false},
      {"deadline", absl::StatusCode::kDeadlineExceeded, "", 100, 1000, false},
      // A Refusal on another code does not turn it permanent.
      {"unavailable with detail", absl::StatusCode::kUnavailable, message_scope, 100, 1000, false},
  };
  for (const Case& c : cases) {
    Verdict v = ClassifyCallFailure(c.code, "msg", c.details, c.request_bytes, c.server_max);
    EXPECT_EQ(v.permanent, c.permanent) << c.what << ": " << v.reason;
    EXPECT_THAT(v.reason, HasSubstr("msg")) << c.what;
  }
}

TEST(DeliveryPolicyTest, ReasonsNameTheLimit) {
  Verdict v = ClassifyCallFailure(
      absl::StatusCode::kResourceExhausted, "samples_seconds has 1001 entries, limit 1000",
      Details(v1::Refusal::REFUSAL_SCOPE_MESSAGE, "max_samples_per_measurement", 1000), 10, 0);
  EXPECT_EQ(v.reason,
            "RESOURCE_EXHAUSTED: samples_seconds has 1001 entries, limit 1000 (per-message limit "
            "max_samples_per_measurement = 1000)");
  v = ClassifyCallFailure(absl::StatusCode::kResourceExhausted, "Received message larger than max",
                          "", 300000, 262144);
  EXPECT_THAT(v.reason, HasSubstr("request of 300000 bytes; the server accepts at most 262144"));
}

TEST(DeliveryPolicyTest, BatchOutcomes) {
  v1::ResultOutcome o;
  o.set_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  o.mutable_refusal()->set_scope(v1::Refusal::REFUSAL_SCOPE_MESSAGE);
  EXPECT_TRUE(ClassifyOutcome(o).permanent);
  o.mutable_refusal()->set_scope(v1::Refusal::REFUSAL_SCOPE_CALLER);
  EXPECT_FALSE(ClassifyOutcome(o).permanent);
  o.clear_refusal();
  EXPECT_FALSE(ClassifyOutcome(o).permanent);  // no size to explain it: keep
  o.set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(ClassifyOutcome(o).permanent);
}

TEST(DeliveryPolicyTest, RefusalFromDetails) {
  EXPECT_FALSE(RefusalFromDetails("").has_value());
  std::optional<v1::Refusal> r =
      RefusalFromDetails(Details(v1::Refusal::REFUSAL_SCOPE_CALLER, "x", 3));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->scope(), v1::Refusal::REFUSAL_SCOPE_CALLER);
  EXPECT_EQ(r->limit_value(), 3);
}

}  // namespace
}  // namespace moetune::agent
