// Per-caller limits of the service. Past a limit the caller gets
// RESOURCE_EXHAUSTED naming the limit; nothing else is affected, so the server
// keeps serving everyone else.
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

namespace moetune::server {

struct ServiceLimits {
  // Largest request gRPC accepts (bigger ones get RESOURCE_EXHAUSTED from
  // gRPC itself before any handler runs).
  int max_message_bytes = 16 << 20;
  // Per probe result.
  int max_measurements_per_result = 4096;
  int max_samples_per_measurement = 100000;
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
