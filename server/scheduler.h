// Scheduler: calibration campaigns and the assignment of their probe tasks to
// live agents.
//
// Durable state (campaigns, tasks, results) lives in the Store; assignments
// live in memory only: after a restart every unfinished task is pending again
// and is handed out anew. A task finishes when results for all ranks of one
// attempt are stored; the result that completes it and the task's new state
// are committed in one transaction, before the agent is acknowledged.
//
// Assignment rules, for an agent asking for work:
//  1. it joins a multi-rank attempt of its cluster that is still forming
//     (ranks missing), so that waiting ranks are released quickly;
//  2. otherwise it takes the first pending task, in campaign order, that it
//     may run: pinned to it, or unpinned when no other multi-rank attempt of
//     the cluster is forming and enough agents are live for its world size.
// An attempt is abandoned (its rendezvous prefix closed, its ranks released)
// when one of its ranks reports a failure, when an agent running it is lost,
// or when that agent asks for work while still holding it. A task that fails
// `max_attempts` times is failed, at once when a rank reports InvalidArgument
// (the probe refused its parameters: no retry can help); a campaign ends when every task is done or
// failed.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/common.pb.h"
#include "proto/planner_service.pb.h"
#include "server/agent_registry.h"
#include "server/rendezvous.h"
#include "server/result_writer.h"
#include "server/store.h"

namespace moetune::server {

class Scheduler {
 public:
  struct Options {
    int max_attempts = 3;
    absl::Duration rendezvous_timeout = absl::Seconds(60);
    ResultWriter::Options writer;
  };
  // Live agent ids of a cluster (from the AgentRegistry).
  using LiveAgentsFn = std::function<std::vector<std::string>(const std::string& cluster)>;

  // `epoch` is unique per server process; it makes rendezvous prefixes of
  // attempts from before a restart distinct from new ones.
  Scheduler(Store* store, RendezvousTable* rendezvous, Clock clock, LiveAgentsFn live_agents,
            Options options, std::string epoch);

  // Loads campaigns and tasks from the store.
  absl::Status Recover();

  // Plans the campaign over the cluster's live agents and stores it.
  // FailedPrecondition when the cluster has no live agent.
  absl::StatusOr<moetune::v1::Campaign> StartCampaign(
      const std::string& cluster, moetune::v1::CampaignProfile profile,
      const std::vector<moetune::v1::AgentInfo>& live_agents);

  // The next task for `agent_id`, waiting up to `wait` for one; nullopt if
  // none came.
  std::optional<moetune::v1::ProbeTask> NextTask(const std::string& agent_id,
                                                 const std::string& cluster, absl::Duration wait);

  // Stores a result (idempotent by result_id) and advances its task. Returns
  // false for a duplicate. Store errors pass through (Unavailable): nothing
  // changed and the agent must not consider the result acknowledged.
  //
  // The write goes through the group-commit ResultWriter: concurrent reports
  // share one transaction, and the scheduler's lock is NOT held while it
  // commits (only before, to decide whether the result completes its task,
  // and after, to apply the durable outcome). Reports of the same campaign
  // task are written one after another (the decision needs the previous
  // outcome); everything else proceeds in parallel.
  absl::StatusOr<bool> Report(const std::string& agent_id,
                              const moetune::v1::ProbeResult& result);
  // Several results of one agent (a batch report): per result, what Report
  // answers. Results of distinct tasks share one transaction.
  std::vector<absl::StatusOr<bool>> ReportAll(const std::string& agent_id,
                                              const std::vector<moetune::v1::ProbeResult>& results);

  // Group-commit figures (transactions, writes, largest batch).
  ResultWriter::Stats WriterStats() const { return writer_.stats(); }

  // The agent never received the task it was just handed (its call ended
  // first): the attempt is released without counting as a failure.
  void Unassign(const std::string& agent_id);

  // Abandons the attempts that the lost agents were running.
  void AgentsLost(const std::vector<std::string>& agent_ids);

  // Wakes waiting NextTask calls (e.g. a new agent registered).
  void Notify();

  absl::StatusOr<moetune::v1::Campaign> GetCampaign(const std::string& campaign_id,
                                                    bool with_tasks) const;
  std::vector<moetune::v1::Campaign> ListCampaigns() const;

 private:
  struct TaskRt {
    StoredTask stored;
    std::string cluster;
    int next_attempt = 1;
    int failures = 0;
    // The running attempt (attempt == 0: none).
    int attempt = 0;
    std::string prefix;
    std::vector<std::string> ranks;  // agent per rank, "" = not yet assigned
    std::vector<bool> ranks_busy;    // still running its part
    // Ranks that reported success, per attempt (AttemptKey: attempts of
    // different server processes share numbers, not keys).
    std::map<std::string, std::set<int>> ok_ranks;
    // A report of this task is being committed (the scheduler's lock is not
    // held meanwhile); other reports of it wait, and a failed state decided
    // meanwhile is stored once that write is over (failure_to_store).
    bool writing = false;
    std::optional<TaskUpdate> failure_to_store;
  };
  struct CampaignRt {
    StoredCampaign meta;  // tasks empty; see task_ids
    std::vector<std::string> task_ids;
  };

  bool Forming(const TaskRt& t) const;
  moetune::v1::ProbeTask AssignRankLocked(TaskRt& t, int rank, const std::string& agent_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<moetune::v1::ProbeTask> TryAssignLocked(const std::string& agent_id,
                                                        const std::string& cluster)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `result` answers t's running attempt (its number, and its
  // prefix where the agent sent one: the number alone repeats after a
  // restart).
  static bool OfRunningAttempt(const TaskRt& t, const moetune::v1::ProbeResult& result);
  // Ends the running attempt of t (closes its prefix, frees its agents).
  void ReleaseAttemptLocked(TaskRt& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a failure of the running attempt and releases it; stores the
  // task's failed state when it has no attempts left.
  // `permanent`: retrying cannot help (the probe refused its parameters).
  void FailAttemptLocked(TaskRt& t, const std::string& why, bool permanent = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores t's failed state (decided by FailAttemptLocked).
  void StoreFailureLocked(TaskRt& t, const TaskUpdate& u) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The TaskUpdate that `result` completes t with, if it does.
  std::optional<TaskUpdate> CompletingUpdateLocked(const TaskRt& t,
                                                   const moetune::v1::ProbeResult& result) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Advances t's in-memory state after its report's write returned `stored`.
  void ApplyReportLocked(TaskRt& t, const std::string& agent_id,
                         const moetune::v1::ProbeResult& result,
                         const std::optional<TaskUpdate>& update,
                         const absl::StatusOr<bool>& stored) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateCampaignStateLocked(const std::string& campaign_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  moetune::v1::Campaign ToProtoLocked(const CampaignRt& c, bool with_tasks) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  Store* const store_;
  RendezvousTable* const rendezvous_;
  const Clock clock_;
  const LiveAgentsFn live_agents_;
  const Options options_;
  const std::string epoch_;

  ResultWriter writer_;  // its thread uses only store_

  mutable absl::Mutex mu_;
  std::map<std::string, TaskRt> tasks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, CampaignRt> campaigns_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> campaign_order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> agent_task_ ABSL_GUARDED_BY(mu_);  // agent -> task
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_campaign_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace moetune::server
