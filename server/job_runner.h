// JobRunner: plan jobs on a pool of worker threads.
//
// Submit() validates the request first (InvalidArgument naming the field;
// nothing is stored for a bad request), stores the job as QUEUED and returns
// its id at once. A worker runs the plan function, then stores the plans and
// their rendered configs together with the SUCCEEDED state in one
// transaction, so a job is never reported done without its result. Jobs left
// QUEUED or RUNNING by a stopped server are queued again by Recover().
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/planner_service.pb.h"
#include "server/agent_registry.h"
#include "server/store.h"

namespace moetune::server {

struct PlanOutput {
  std::vector<moetune::v1::Plan> plans;  // best first, rank 1..
  JobConfigs configs;                     // (rank, format) -> text
  std::string method;                     // what produced the plans
  std::string calibration_note;           // calibrated or datasheet priors
};
using ProgressFn = std::function<void(int64_t done, int64_t total)>;
using PlanFn = std::function<absl::StatusOr<PlanOutput>(const moetune::v1::SubmitPlanRequest&,
                                                        const ProgressFn&)>;
using ValidateFn = std::function<absl::Status(const moetune::v1::SubmitPlanRequest&)>;

class JobRunner {
 public:
  JobRunner(Store* store, Clock clock, ValidateFn validate, PlanFn plan, int workers);
  // Stops taking jobs and joins the workers (a running plan finishes first).
  ~JobRunner();

  absl::Status Recover();
  absl::StatusOr<std::string> Submit(const moetune::v1::SubmitPlanRequest& request);
  absl::StatusOr<moetune::v1::Job> Get(const std::string& job_id);
  // The job once its version is newer than `seen_version` (0 = any), or as is
  // after `wait`. The returned version feeds the next call.
  absl::StatusOr<std::pair<moetune::v1::Job, uint64_t>> Watch(const std::string& job_id,
                                                              uint64_t seen_version,
                                                              absl::Duration wait);
  absl::StatusOr<std::string> Config(const std::string& job_id, int plan_rank,
                                     moetune::v1::ConfigFormat format);

  static bool Finished(const moetune::v1::Job& job) {
    return job.state() == moetune::v1::JOB_STATE_SUCCEEDED ||
           job.state() == moetune::v1::JOB_STATE_FAILED;
  }

 private:
  void Work();
  void Update(const std::string& job_id, const std::function<void(moetune::v1::Job&)>& change)
      ABSL_LOCKS_EXCLUDED(mu_);

  Store* const store_;
  const Clock clock_;
  const ValidateFn validate_;
  const PlanFn plan_;

  absl::Mutex mu_;
  struct Entry {
    moetune::v1::Job job;
    uint64_t version = 1;
  };
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<std::thread> workers_;
};

}  // namespace moetune::server
