// Per-caller limits of the service. Past a limit the caller gets
// RESOURCE_EXHAUSTED naming the limit; nothing else is affected, so the server
// keeps serving everyone else.
//
// Every RESOURCE_EXHAUSTED the server makes itself carries a
// moetune.v1.Refusal (proto/common.proto) as an absl::Status payload, which
// ToGrpc (server/grpc_status.h) sends as a gRPC error detail. Its scope says
// what the caller should do next:
//   REFUSAL_SCOPE_MESSAGE: this request exceeds a per-message limit
//     (measurements per result, samples per measurement, map entries,
//     results per batch): it will never be accepted; do not re-send it.
//   REFUSAL_SCOPE_CALLER: this caller has too much in flight (calls per
//     agent, WatchJob streams or plan jobs per user): re-send after a backoff.
// The one RESOURCE_EXHAUSTED without a Refusal is gRPC's own refusal of a
// request larger than max_message_bytes (before any handler runs); agents
// learn that limit at registration (RegisterResponse.max_message_bytes).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/common.pb.h"

namespace moetune::server {

// The absl::Status payload key of a Refusal (also its google.protobuf.Any
// type URL in the gRPC error details).
inline constexpr char kRefusalTypeUrl[] = "type.googleapis.com/moetune.v1.Refusal";

// RESOURCE_EXHAUSTED with `message`, carrying a Refusal of REFUSAL_SCOPE_MESSAGE
// (permanent) or REFUSAL_SCOPE_CALLER (transient) for `limit`.
absl::Status MessageLimitError(absl::string_view message, absl::string_view limit,
                               int64_t limit_value, int64_t actual);
absl::Status CallerLimitError(absl::string_view message, absl::string_view limit,
                              int64_t limit_value, int64_t actual);
// The Refusal a status carries, if any.
std::optional<moetune::v1::Refusal> RefusalOf(const absl::Status& status);

struct ServiceLimits {
  // Largest request gRPC accepts (bigger ones get RESOURCE_EXHAUSTED from
  // gRPC itself before any handler runs).
  int max_message_bytes = 16 << 20;
  // Per probe result.
  int max_measurements_per_result = 4096;
  int max_samples_per_measurement = 100000;
  // Results in one ReportResults call.
  int max_results_per_report = 1024;
  // Calls of one agent (by agent id) in flight at once: its heartbeat, task
  // long poll, report and the rendezvous calls of a probe need a few.
  int max_concurrent_calls_per_agent = 16;
  // WatchJob streams of one user open at once.
  int max_watch_streams_per_user = 16;
  // Plan jobs of one user queued or running at once.
  int max_jobs_in_flight_per_user = 4;
};

// Counts calls in flight per key; Acquire fails past `limit` per key.
class ConcurrencyLimiter {
 public:
  class Lease {
   public:
    Lease() = default;
    Lease(ConcurrencyLimiter* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    Lease(Lease&& o) noexcept : owner_(o.owner_), key_(std::move(o.key_)) { o.owner_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

   private:
    ConcurrencyLimiter* owner_ = nullptr;
    std::string key_;
  };

  // `what` names the limit in messages ("concurrent calls per agent").
  ConcurrencyLimiter(int limit, std::string what) : limit_(limit), what_(std::move(what)) {}

  // ResourceExhausted naming the key and the limit when `key` already has
  // `limit` leases; limit <= 0 means unlimited.
  absl::StatusOr<Lease> Acquire(const std::string& key);
  int InFlight(const std::string& key) const;

 private:
  void Release(const std::string& key);
  const int limit_;
  const std::string what_;
  mutable absl::Mutex mu_;
  std::map<std::string, int> in_flight_ ABSL_GUARDED_BY(mu_);
};

// Plan jobs per user that are not finished yet.
class JobQuota {
 public:
  // `finished(job_id)`: true once the job succeeded or failed (or is gone).
  JobQuota(int limit, std::function<bool(const std::string&)> finished)
      : limit_(limit), finished_(std::move(finished)) {}

  // Reserves a slot for a submission of `user`; ResourceExhausted with the
  // count and the limit when the user has `limit` unfinished jobs (counting
  // reservations). Then call Commit (job created) or Cancel (it was not).
  absl::Status Reserve(const std::string& user);
  void Commit(const std::string& user, const std::string& job_id);
  void Cancel(const std::string& user);
  int InFlight(const std::string& user);

 private:
  int PruneLocked(const std::string& user) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const int limit_;
  const std::function<bool(const std::string&)> finished_;
  absl::Mutex mu_;
  struct PerUser {
    std::set<std::string> jobs;
    int reserved = 0;
  };
  std::map<std::string, PerUser> users_ ABSL_GUARDED_BY(mu_);
};

}  // namespace moetune::server
