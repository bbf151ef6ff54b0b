#include "agent/delivery_policy.h"

#include "absl/strings/str_cat.h"

namespace moetune::agent {
namespace {

namespace v1 = ::moetune::v1;

constexpr char kRefusalTypeUrl[] = "type.googleapis.com/moetune.v1.Refusal";

std::string Describe(absl::StatusCode code, const std::string& message) {
  return absl::StrCat(absl::StatusCodeToString(code), ": ", message);
}

Verdict Classify(absl::StatusCode code, const std::string& message,
                 const std::optional<v1::Refusal>& refusal, int64_t request_bytes,
                 int64_t server_max_message_bytes) {
  const std::string what = Describe(code, message);
  if (code == absl::StatusCode::kInvalidArgument) return {true, what};
  if (code != absl::StatusCode::kResourceExhausted) return {false, what};
  if (refusal) {
    if (refusal->scope() == v1::Refusal::REFUSAL_SCOPE_MESSAGE) {
      return {true, absl::StrCat(what, " (per-message limit ", refusal->limit(), " = ",
                                 refusal->limit_value(), ")")};
    }
    return {false, what};  // a caller limit, or a scope this agent does not know
  }
  if (server_max_message_bytes > 0 && request_bytes > server_max_message_bytes) {
    return {true, absl::StrCat(what, " (request of ", request_bytes,
                               " bytes; the server accepts at most ", server_max_message_bytes,
                               ")")};
  }
  return {false, what};
}

}  // namespace

std::optional<v1::Refusal> RefusalFromDetails(const std::string& error_details) {
  if (error_details.empty()) return std::nullopt;
  v1::RpcStatus status;
  if (!status.ParseFromString(error_details)) return std::nullopt;
  for (const google::protobuf::Any& any : status.details()) {
    v1::Refusal r;
    if (any.type_url() == kRefusalTypeUrl && r.ParseFromString(any.value())) return r;
  }
  return std::nullopt;
}

Verdict ClassifyCallFailure(absl::StatusCode code, const std::string& message,
                            const std::string& error_details, int64_t request_bytes,
                            int64_t server_max_message_bytes) {
  return Classify(code, message, RefusalFromDetails(error_details), request_bytes,
                  server_max_message_bytes);
}

Verdict ClassifyOutcome(const v1::ResultOutcome& outcome) {
  std::optional<v1::Refusal> refusal;
  if (outcome.has_refusal()) refusal = outcome.refusal();
  // Sizes do not apply: the result reached the server.
  return Classify(static_cast<absl::StatusCode>(outcome.code()), outcome.message(), refusal, 0, 0);
}

}  // namespace moetune::agent
