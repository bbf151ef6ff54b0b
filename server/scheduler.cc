#include "server/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/campaign_planner.h"

namespace moetune::server {
namespace {
namespace v1 = ::moetune::v1;

// The attempt a result belongs to: its task's rendezvous prefix (unique per
// server process and attempt), or "#<attempt>" from an agent that sends none.
std::string AttemptKey(const v1::ProbeResult& result) {
  return result.rendezvous_prefix().empty() ? absl::StrCat("#", result.attempt())
                                            : result.rendezvous_prefix();
}
}  // namespace

Scheduler::Scheduler(Store* store, RendezvousTable* rendezvous, Clock clock,
                     LiveAgentsFn live_agents, Options options, std::string epoch)
    : store_(store),
      rendezvous_(rendezvous),
      clock_(std::move(clock)),
      live_agents_(std::move(live_agents)),
      options_(options),
      epoch_(std::move(epoch)),
      writer_(store, options.writer) {}

absl::Status Scheduler::Recover() {
  absl::StatusOr<std::vector<StoredCampaign>> loaded = store_->LoadCampaigns();
  if (!loaded.ok()) return loaded.status();
  absl::MutexLock lock(&mu_);
  for (StoredCampaign& c : *loaded) {
    CampaignRt rt;
    for (StoredTask& st : c.tasks) {
      TaskRt t;
      t.cluster = c.cluster;
      t.next_attempt = st.attempts + 1;
      t.stored = std::move(st);
      rt.task_ids.push_back(t.stored.task.task_id());
      tasks_[t.stored.task.task_id()] = std::move(t);
    }
    c.tasks.clear();
    rt.meta = std::move(c);
    std::string id = rt.meta.campaign_id;
    campaign_order_.push_back(id);
    campaigns_[id] = std::move(rt);
    UpdateCampaignStateLocked(id);
  }
  ++version_;
  return absl::OkStatus();
}

absl::StatusOr<v1::Campaign> Scheduler::StartCampaign(const std::string& cluster,
                                                      v1::CampaignProfile profile,
                                                      const std::vector<v1::AgentInfo>& agents) {
  if (profile == v1::CAMPAIGN_PROFILE_UNSPECIFIED) profile = v1::CAMPAIGN_PROFILE_STANDARD;
  absl::Time now = clock_();
  std::string id;
  {
    absl::MutexLock lock(&mu_);
    id = absl::StrFormat("cal-%d-%s-%d", absl::ToUnixSeconds(now), epoch_, next_campaign_++);
  }
  absl::StatusOr<std::vector<v1::ProbeTask>> planned = PlanCampaign(id, profile, agents);
  if (!planned.ok()) {
    return absl::Status(planned.status().code(),
                        absl::StrCat("cluster '", cluster, "': ", planned.status().message()));
  }
  StoredCampaign c;
  c.campaign_id = id;
  c.cluster = cluster;
  c.profile = profile;
  c.state = v1::CAMPAIGN_STATE_RUNNING;
  c.created_unix_ms = absl::ToUnixMillis(now);
  for (v1::ProbeTask& task : *planned) {
    StoredTask& st = c.tasks.emplace_back();
    st.task = std::move(task);
  }
  if (absl::Status st = store_->CreateCampaign(c); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  CampaignRt rt;
  for (StoredTask& st : c.tasks) {
    TaskRt t;
    t.cluster = cluster;
    t.stored = std::move(st);
    rt.task_ids.push_back(t.stored.task.task_id());
    tasks_[t.stored.task.task_id()] = std::move(t);
  }
  c.tasks.clear();
  rt.meta = std::move(c);
  campaign_order_.push_back(id);
  auto& inserted = campaigns_[id] = std::move(rt);
  ++version_;
  return ToProtoLocked(inserted, /*with_tasks=*/false);
}

bool Scheduler::Forming(const TaskRt& t) const {
  if (t.attempt == 0) return false;
  return std::any_of(t.ranks.begin(), t.ranks.end(), [](const std::string& a) { return a.empty(); });
}

v1::ProbeTask Scheduler::AssignRankLocked(TaskRt& t, int rank, const std::string& agent_id) {
  t.ranks[rank] = agent_id;
  t.ranks_busy[rank] = true;
  agent_task_[agent_id] = t.stored.task.task_id();
  v1::ProbeTask out = t.stored.task;
  out.set_rank(rank);
  out.set_attempt(t.attempt);
  out.set_rendezvous_prefix(t.prefix);
  out.set_rendezvous_timeout_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(options_.rendezvous_timeout)));
  ++version_;
  return out;
}

std::optional<v1::ProbeTask> Scheduler::TryAssignLocked(const std::string& agent_id,
                                                        const std::string& cluster) {
  // An agent asking for work while holding a task has lost it (it restarted,
  // or the answer that carried the task never reached it): the attempt is
  // released without counting as a failure.
  if (auto it = agent_task_.find(agent_id); it != agent_task_.end()) {
    auto t = tasks_.find(it->second);
    agent_task_.erase(it);
    if (t != tasks_.end() && t->second.attempt != 0) ReleaseAttemptLocked(t->second);
  }
  // 1. Join a forming multi-rank attempt.
  for (auto& [id, t] : tasks_) {
    if (t.cluster != cluster || !Forming(t)) continue;
    if (std::find(t.ranks.begin(), t.ranks.end(), agent_id) != t.ranks.end()) continue;
    int rank = static_cast<int>(std::find(t.ranks.begin(), t.ranks.end(), "") - t.ranks.begin());
    return AssignRankLocked(t, rank, agent_id);
  }
  // 2. The first pending task this agent may start.
  bool group_forming = false;
  for (const auto& [id, t] : tasks_) group_forming |= (t.cluster == cluster && Forming(t));
  size_t live = 0;
  bool live_known = false;
  for (const std::string& cid : campaign_order_) {
    const CampaignRt& c = campaigns_.at(cid);
    if (c.meta.cluster != cluster || c.meta.state != v1::CAMPAIGN_STATE_RUNNING) continue;
    for (const std::string& tid : c.task_ids) {
      TaskRt& t = tasks_.at(tid);
      if (t.stored.state != TaskState::kPending || t.attempt != 0) continue;
      const v1::ProbeTask& task = t.stored.task;
      if (!task.pinned_agent_id().empty() && task.pinned_agent_id() != agent_id) continue;
      const int world = std::max(1, task.world_size());
      if (world > 1) {
        if (group_forming) continue;
        if (!live_known) {
          live = live_agents_(cluster).size();
          live_known = true;
        }
        if (live < static_cast<size_t>(world)) continue;
      }
      t.attempt = t.next_attempt++;
      t.prefix = absl::StrCat(tid, "/", epoch_, "/a", t.attempt, "/");
      t.ranks.assign(world, "");
      t.ranks_busy.assign(world, false);
      if (world > 1) rendezvous_->Open(t.prefix);
      return AssignRankLocked(t, 0, agent_id);
    }
  }
  return std::nullopt;
}

std::optional<v1::ProbeTask> Scheduler::NextTask(const std::string& agent_id,
                                                 const std::string& cluster,
                                                 absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  absl::MutexLock lock(&mu_);
  while (true) {
    if (std::optional<v1::ProbeTask> t = TryAssignLocked(agent_id, cluster)) return t;
    const uint64_t seen = version_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; };
    if (!mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) return std::nullopt;
  }
}

void Scheduler::Notify() {
  absl::MutexLock lock(&mu_);
  ++version_;
}

bool Scheduler::OfRunningAttempt(const TaskRt& t, const v1::ProbeResult& result) {
  return t.attempt != 0 && result.attempt() == t.attempt &&
         (result.rendezvous_prefix().empty() || result.rendezvous_prefix() == t.prefix);
}

void Scheduler::ReleaseAttemptLocked(TaskRt& t) {
  if (t.attempt == 0) return;
  if (t.ranks.size() > 1) rendezvous_->Close(t.prefix);
  for (const std::string& agent : t.ranks) {
    auto it = agent_task_.find(agent);
    if (!agent.empty() && it != agent_task_.end() && it->second == t.stored.task.task_id()) {
      agent_task_.erase(it);
    }
  }
  t.attempt = 0;
  t.prefix.clear();
  t.ranks.clear();
  t.ranks_busy.clear();
  ++version_;
}

void Scheduler::FailAttemptLocked(TaskRt& t, const std::string& why, bool permanent) {
  ReleaseAttemptLocked(t);
  ++t.failures;
  t.stored.last_error = why;
  if (permanent || t.failures >= options_.max_attempts) {
    TaskUpdate u{t.stored.task.campaign_id(), t.stored.task.task_id(), TaskState::kFailed,
                 t.next_attempt - 1, why};
    if (t.writing) {
      // A report of this task is being committed and may complete it: the
      // failure is stored after that write, unless the task is done by then.
      t.failure_to_store = std::move(u);
      return;
    }
    StoreFailureLocked(t, u);
  }
}

void Scheduler::StoreFailureLocked(TaskRt& t, const TaskUpdate& u) {
  // A rare path (a task out of attempts) that still writes under the lock.
  // If this write fails the task stays pending in memory and in the store;
  // it will be retried (and fail again) rather than be lost.
  if (t.stored.state != TaskState::kPending) return;
  if (store_->UpdateTask(u).ok()) {
    t.stored.state = TaskState::kFailed;
    t.stored.attempts = u.attempts;
    UpdateCampaignStateLocked(t.stored.task.campaign_id());
  }
}

std::optional<TaskUpdate> Scheduler::CompletingUpdateLocked(const TaskRt& t,
                                                            const v1::ProbeResult& result) const {
  const int world = std::max(1, t.stored.task.world_size());
  if (t.stored.state != TaskState::kPending || result.error_code() != 0 || result.rank() < 0 ||
      result.rank() >= world) {
    return std::nullopt;
  }
  std::set<int> ranks;
  if (auto it = t.ok_ranks.find(AttemptKey(result)); it != t.ok_ranks.end()) ranks = it->second;
  ranks.insert(result.rank());
  if (static_cast<int>(ranks.size()) != world) return std::nullopt;
  return TaskUpdate{t.stored.task.campaign_id(), t.stored.task.task_id(), TaskState::kDone,
                    std::max(result.attempt(), t.next_attempt - 1), ""};
}

absl::StatusOr<bool> Scheduler::Report(const std::string& agent_id,
                                       const v1::ProbeResult& result) {
  std::vector<absl::StatusOr<bool>> out = ReportAll(agent_id, {result});
  return std::move(out[0]);
}

std::vector<absl::StatusOr<bool>> Scheduler::ReportAll(const std::string& agent_id,
                                                       const std::vector<v1::ProbeResult>& results) {
  std::vector<absl::StatusOr<bool>> out(results.size(), absl::InternalError("not reported"));
  std::vector<size_t> todo(results.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  while (!todo.empty()) {
    // One round: at most one result per task id, all in one group commit.
    std::vector<size_t> round, later;
    std::set<std::string> round_tasks;
    for (size_t i : todo) {
      const std::string& task_id = results[i].task_id();
      if (!task_id.empty() && !round_tasks.insert(task_id).second) {
        later.push_back(i);
      } else {
        round.push_back(i);
      }
    }
    std::vector<ResultWrite> writes(round.size());
    std::vector<TaskRt*> claimed(round.size(), nullptr);
    bool any_task = false;
    {
      absl::ReaderMutexLock lock(&mu_);
      for (size_t i : round) any_task |= tasks_.count(results[i].task_id()) > 0;
    }
    if (any_task) {
      absl::MutexLock lock(&mu_);
      // Wait until no other report of these tasks is being written, then
      // claim them all at once (no hold-and-wait: no deadlock between batches).
      auto free = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (size_t i : round) {
          auto it = tasks_.find(results[i].task_id());
          if (it != tasks_.end() && it->second.writing) return false;
        }
        return true;
      };
      mu_.Await(absl::Condition(&free));
      for (size_t k = 0; k < round.size(); ++k) {
        auto it = tasks_.find(results[round[k]].task_id());
        if (it == tasks_.end()) continue;
        it->second.writing = true;
        claimed[k] = &it->second;
        writes[k].task_update = CompletingUpdateLocked(it->second, results[round[k]]);
      }
    }
    // Results of tasks this scheduler does not know (ad-hoc probes, a
    // campaign this store never had) are stored as measurements; no task
    // advances.
    for (size_t k = 0; k < round.size(); ++k) writes[k].result = &results[round[k]];

    // The disk I/O, without the scheduler's lock.
    std::vector<absl::StatusOr<bool>> stored = writer_.Write(writes);

    if (any_task) {
      absl::MutexLock lock(&mu_);
      for (size_t k = 0; k < round.size(); ++k) {
        if (claimed[k]) {
          ApplyReportLocked(*claimed[k], agent_id, results[round[k]], writes[k].task_update,
                            stored[k]);
        }
      }
      ++version_;
    }
    for (size_t k = 0; k < round.size(); ++k) out[round[k]] = std::move(stored[k]);
    todo = std::move(later);
  }
  return out;
}

void Scheduler::ApplyReportLocked(TaskRt& t, const std::string& agent_id,
                                  const v1::ProbeResult& result,
                                  const std::optional<TaskUpdate>& update,
                                  const absl::StatusOr<bool>& stored) {
  t.writing = false;
  std::optional<TaskUpdate> failure = std::move(t.failure_to_store);
  t.failure_to_store.reset();
  if (stored.ok() && *stored) {
    // Durable: now advance the in-memory state.
    const bool ok = result.error_code() == 0;
    if (ok) t.ok_ranks[AttemptKey(result)].insert(result.rank());
    const bool current_attempt = OfRunningAttempt(t, result);
    if (current_attempt && result.rank() >= 0 &&
        result.rank() < static_cast<int>(t.ranks.size()) && t.ranks[result.rank()] == agent_id) {
      t.ranks_busy[result.rank()] = false;
      auto a = agent_task_.find(agent_id);
      if (a != agent_task_.end() && a->second == t.stored.task.task_id()) agent_task_.erase(a);
    }
    if (update) {
      t.stored.state = TaskState::kDone;
      t.stored.attempts = update->attempts;
      t.stored.last_error.clear();
      ReleaseAttemptLocked(t);
      t.ok_ranks.clear();
      UpdateCampaignStateLocked(t.stored.task.campaign_id());
    } else if (!ok && current_attempt && t.stored.state == TaskState::kPending) {
      FailAttemptLocked(t,
                        absl::StrCat("rank ", result.rank(), " on ", agent_id, ": ",
                                     result.error_message()),
                        result.error_code() == static_cast<int>(absl::StatusCode::kInvalidArgument));
    } else if (current_attempt) {
      // A rank finished; the attempt is over when no rank is busy any more
      // (some rank's success was not enough: e.g. results of mixed attempts).
      bool busy = std::any_of(t.ranks_busy.begin(), t.ranks_busy.end(), [](bool b) { return b; });
      bool forming = Forming(t);
      if (!busy && !forming) ReleaseAttemptLocked(t);
    }
  }
  // A failure decided while the write ran: stored now unless the task is done.
  if (failure) StoreFailureLocked(t, *failure);
}

void Scheduler::Unassign(const std::string& agent_id) {
  absl::MutexLock lock(&mu_);
  auto it = agent_task_.find(agent_id);
  if (it == agent_task_.end()) return;
  auto t = tasks_.find(it->second);
  agent_task_.erase(it);
  if (t != tasks_.end() && t->second.attempt != 0) ReleaseAttemptLocked(t->second);
}

void Scheduler::AgentsLost(const std::vector<std::string>& agent_ids) {
  absl::MutexLock lock(&mu_);
  for (const std::string& agent : agent_ids) {
    auto it = agent_task_.find(agent);
    if (it == agent_task_.end()) continue;
    auto t = tasks_.find(it->second);
    agent_task_.erase(it);
    if (t != tasks_.end() && t->second.attempt != 0) {
      FailAttemptLocked(t->second, absl::StrCat("agent ", agent, " was lost"));
    }
  }
  ++version_;
}

void Scheduler::UpdateCampaignStateLocked(const std::string& campaign_id) {
  auto it = campaigns_.find(campaign_id);
  if (it == campaigns_.end()) return;
  CampaignRt& c = it->second;
  int done = 0, failed = 0;
  for (const std::string& tid : c.task_ids) {
    TaskState s = tasks_.at(tid).stored.state;
    done += s == TaskState::kDone;
    failed += s == TaskState::kFailed;
  }
  v1::CampaignState state = v1::CAMPAIGN_STATE_RUNNING;
  if (done + failed == static_cast<int>(c.task_ids.size())) {
    state = failed > 0 ? v1::CAMPAIGN_STATE_FAILED : v1::CAMPAIGN_STATE_SUCCEEDED;
  }
  if (state != c.meta.state) {
    // The campaign state is derived from its tasks again on recovery, so a
    // failed write here loses nothing.
    (void)store_->SetCampaignState(campaign_id, state);
    c.meta.state = state;
  }
}

v1::Campaign Scheduler::ToProtoLocked(const CampaignRt& c, bool with_tasks) const {
  v1::Campaign out;
  out.set_campaign_id(c.meta.campaign_id);
  out.set_cluster(c.meta.cluster);
  out.set_state(c.meta.state);
  out.set_created_unix_ms(c.meta.created_unix_ms);
  out.set_profile(c.meta.profile);
  out.set_tasks_total(static_cast<int32_t>(c.task_ids.size()));
  int done = 0, failed = 0, running = 0;
  for (const std::string& tid : c.task_ids) {
    const TaskRt& t = tasks_.at(tid);
    done += t.stored.state == TaskState::kDone;
    failed += t.stored.state == TaskState::kFailed;
    running += t.attempt != 0;
    if (!with_tasks) continue;
    v1::CampaignTaskStatus* s = out.add_tasks();
    s->set_task_id(tid);
    s->set_kind(t.stored.task.kind());
    s->set_world_size(std::max(1, t.stored.task.world_size()));
    s->set_state(t.attempt != 0 ? "running" : TaskStateName(t.stored.state));
    s->set_attempts(std::max(t.stored.attempts, t.next_attempt - 1));
    for (const std::string& a : t.ranks) s->add_agents(a);
    s->set_last_error(t.stored.last_error);
  }
  out.set_tasks_done(done);
  out.set_tasks_failed(failed);
  out.set_tasks_running(running);
  return out;
}

absl::StatusOr<v1::Campaign> Scheduler::GetCampaign(const std::string& campaign_id,
                                                    bool with_tasks) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = campaigns_.find(campaign_id);
  if (it == campaigns_.end()) {
    return absl::NotFoundError(absl::StrCat("campaign '", campaign_id, "' not found"));
  }
  return ToProtoLocked(it->second, with_tasks);
}

std::vector<v1::Campaign> Scheduler::ListCampaigns() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::Campaign> out;
  for (const std::string& id : campaign_order_) {
    out.push_back(ToProtoLocked(campaigns_.at(id), false));
  }
  return out;
}

}  // namespace moetune::server
