// What the agent does with a result the server did not acknowledge: send it
// again later, or move it out of the delivery queue for good (the spool's
// dead-letter file, agent/spool.h), so that one result the server will never
// take does not block every result behind it.
//
// Permanent refusals (dead-letter the result):
//   * INVALID_ARGUMENT: the result itself is malformed or implausible;
//   * RESOURCE_EXHAUSTED with a moetune.v1.Refusal of REFUSAL_SCOPE_MESSAGE:
//     it exceeds a per-message limit (samples per measurement, measurements
//     per result, ...; server/limits.h);
//   * RESOURCE_EXHAUSTED without a Refusal for a request larger than the
//     max_message_bytes the server advertised at registration: gRPC's own
//     size check, made before any server code runs.
// Everything else is transient (keep the result, back off, send it again
// with the same result_id): UNAVAILABLE (store or network), NOT_FOUND
// (register again), RESOURCE_EXHAUSTED with REFUSAL_SCOPE_CALLER (too many
// calls in flight), a RESOURCE_EXHAUSTED without a Refusal that the size
// does not explain (an overloaded server), authentication failures (fixed by
// the operator, not by dropping data), deadlines. When in doubt the result
// is kept: nothing is dropped on an ambiguous answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "proto/agent_service.pb.h"
#include "proto/common.pb.h"

namespace moetune::agent {

struct Verdict {
  bool permanent = false;
  std::string reason;  // for the log and the dead-letter record
};

// The Refusal in a gRPC status's error details (a serialized RpcStatus);
// nullopt when there is none or it does not parse.
std::optional<moetune::v1::Refusal> RefusalFromDetails(const std::string& error_details);

// A failed report call. `request_bytes`: the serialized request's size;
// `server_max_message_bytes`: what registration advertised (0: unknown).
Verdict ClassifyCallFailure(absl::StatusCode code, const std::string& message,
                            const std::string& error_details, int64_t request_bytes,
                            int64_t server_max_message_bytes);

// The outcome of one result of a ReportResults batch (code != 0).
Verdict ClassifyOutcome(const moetune::v1::ResultOutcome& outcome);

}  // namespace moetune::agent
