// Store: the server's durable state behind one narrow interface, so that a
// networked database can replace the SQLite file (server/sqlite_store.h).
//
// Contract shared by every implementation:
//  * a call returns OK only once its effect is durable (committed);
//  * a failed write changes nothing and returns Unavailable (retry later);
//  * probe results are keyed by their client-generated result_id: storing an
//    id again changes nothing and reports a duplicate (idempotent re-sends).
// Data travels as the API's protobuf messages (no RPC code here).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/common.pb.h"
#include "proto/planner_service.pb.h"

namespace moetune::server {

enum class TaskState { kPending, kDone, kFailed };
const char* TaskStateName(TaskState s);  // "pending", "done", "failed"

// A campaign's probe task as planned, with its durable progress. `task` is the
// template: rank, attempt and rendezvous fields are set per assignment.
struct StoredTask {
  moetune::v1::ProbeTask task;
  TaskState state = TaskState::kPending;
  int attempts = 0;
  std::string last_error;
};

struct StoredCampaign {
  std::string campaign_id;
  std::string cluster;
  moetune::v1::CampaignProfile profile = moetune::v1::CAMPAIGN_PROFILE_STANDARD;
  moetune::v1::CampaignState state = moetune::v1::CAMPAIGN_STATE_RUNNING;
  int64_t created_unix_ms = 0;
  std::vector<StoredTask> tasks;  // in planned order
};

// A change to one task written in the same transaction as a result.
struct TaskUpdate {
  std::string campaign_id;
  std::string task_id;
  TaskState state = TaskState::kDone;
  int attempts = 0;
  std::string last_error;
};

// One result to store and the task change committed with it. `result` is
// borrowed: it must outlive the PutResults call.
struct ResultWrite {
  const moetune::v1::ProbeResult* result = nullptr;
  std::optional<TaskUpdate> task_update;
};

struct ResultFilter {
  std::string cluster;      // empty = any
  std::string campaign_id;  // empty = any
  int limit = 0;            // 0 = all; otherwise the newest `limit`, oldest first
};

// Rendered tuned configs of a finished job: (plan rank, format) -> text.
using JobConfigs = std::map<std::pair<int, moetune::v1::ConfigFormat>, std::string>;

class Store {
 public:
  virtual ~Store() = default;

  // Agents (the registry's durable mirror: survives restarts as LOST agents).
  virtual absl::Status PutAgent(const moetune::v1::AgentInfo& agent) = 0;
  virtual absl::StatusOr<std::vector<moetune::v1::AgentInfo>> ListAgents() = 0;

  // Stores each write's result (received_unix_ms must be set) together with
  // its task_update, all in ONE transaction (one commit, one fsync: the
  // group commit of server/result_writer.h). Per write, in order: true when
  // stored now, false when its result_id was already stored (then nothing of
  // that write changes, task_update included), or that write's own error
  // (InvalidArgument for an empty result_id, NotFound for a task_update of a
  // task that is not stored), which undoes only that write. The call itself
  // fails (Unavailable) when the transaction cannot be committed: then
  // nothing of any write is stored and no caller may be acknowledged.
  virtual absl::StatusOr<std::vector<absl::StatusOr<bool>>> PutResults(
      const std::vector<ResultWrite>& writes) = 0;
  // One write on its own (its own transaction).
  absl::StatusOr<bool> PutResult(const moetune::v1::ProbeResult& result,
                                 const std::optional<TaskUpdate>& task_update) {
    absl::StatusOr<std::vector<absl::StatusOr<bool>>> out =
        PutResults({ResultWrite{&result, task_update}});
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  virtual absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ListResults(
      const ResultFilter& filter) = 0;
  virtual absl::StatusOr<int64_t> CountResults(const ResultFilter& filter) = 0;

  // Campaigns and their tasks.
  virtual absl::Status CreateCampaign(const StoredCampaign& campaign) = 0;
  virtual absl::Status UpdateTask(const TaskUpdate& update) = 0;
  virtual absl::Status SetCampaignState(const std::string& campaign_id,
                                        moetune::v1::CampaignState state) = 0;
  virtual absl::StatusOr<std::vector<StoredCampaign>> LoadCampaigns() = 0;

  // Plan jobs. PutJob inserts or replaces; FinishJob replaces the job and
  // stores its rendered configs in one transaction.
  virtual absl::Status PutJob(const moetune::v1::Job& job) = 0;
  virtual absl::Status FinishJob(const moetune::v1::Job& job, const JobConfigs& configs) = 0;
  // NotFound naming the id when absent.
  virtual absl::StatusOr<moetune::v1::Job> GetJob(const std::string& job_id) = 0;
  virtual absl::StatusOr<std::vector<moetune::v1::Job>> ListJobs() = 0;
  // NotFound naming the job, rank and format when absent.
  virtual absl::StatusOr<std::string> GetJobConfig(const std::string& job_id, int plan_rank,
                                                   moetune::v1::ConfigFormat format) = 0;
};

}  // namespace moetune::server
