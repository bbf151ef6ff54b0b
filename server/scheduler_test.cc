#include "server/scheduler.h"

#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/campaign_planner.h"
#include "server/internal/gated_store.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::server::testing::FakeClock;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;

v1::AgentInfo Agent(const std::string& node) {
  v1::AgentInfo a;
  a.set_agent_id("ci/" + node);
  a.set_node(node);
  a.set_cluster("ci");
  a.set_backend(v1::BACKEND_CPU);
  a.add_devices()->set_name("cpu");
  return a;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = TempDbPath("sched.db"); Reopen(); }

  // A fresh store and scheduler on the same file: a server restart.
  void Reopen() {
    scheduler_.reset();
    store_.reset();
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    rendezvous_ = std::make_unique<RendezvousTable>();
    scheduler_ = std::make_unique<Scheduler>(
        store_.get(), rendezvous_.get(), [this] { return clock_.Now(); },
        [this](const std::string&) { return live_; }, options_, absl::StrCat("e", ++epoch_));
    ASSERT_TRUE(scheduler_->Recover().ok());
  }

  v1::ProbeResult Ok(const v1::ProbeTask& t, const std::string& agent) {
    v1::ProbeResult r;
    r.set_result_id(absl::StrCat("r", ++next_result_));
    r.set_task_id(t.task_id());
    r.set_campaign_id(t.campaign_id());
    r.set_attempt(t.attempt());
    r.set_rendezvous_prefix(t.rendezvous_prefix());
    r.set_rank(t.rank());
    r.set_kind(t.kind());
    r.mutable_provenance()->set_cluster("ci");
    r.mutable_provenance()->set_agent_id(agent);
    r.set_received_unix_ms(1);
    return r;
  }

  // Simulated agents: each holds at most one task; a multi-rank task is
  // reported only once all its ranks are handed out (as after a rendezvous).
  // Returns rounds used; stops after `max_reports` reports when > 0.
  int Drive(const std::string& campaign_id, int max_reports = 0) {
    std::map<std::string, v1::ProbeTask> held;
    int reports = 0;
    for (int round = 1; round <= 500; ++round) {
      for (const std::string& agent : live_) {
        if (held.count(agent)) continue;
        auto t = scheduler_->NextTask(agent, "ci", absl::ZeroDuration());
        if (t) held[agent] = *t;
      }
      std::map<std::string, int> ranks_held;
      for (const auto& [agent, t] : held) ranks_held[t.task_id() + "#" + std::to_string(t.attempt())]++;
      for (auto it = held.begin(); it != held.end();) {
        const v1::ProbeTask& t = it->second;
        int world = std::max(1, t.world_size());
        if (ranks_held[t.task_id() + "#" + std::to_string(t.attempt())] < world) {
          ++it;
          continue;
        }
        if (world > 1) {
          EXPECT_TRUE(rendezvous_->IsOpen(t.rendezvous_prefix())) << t.task_id();
        }
        world_of_[t.task_id()].insert(it->first);
        auto stored = scheduler_->Report(it->first, Ok(t, it->first));
        EXPECT_TRUE(stored.ok()) << stored.status();
        it = held.erase(it);
        if (max_reports > 0 && ++reports >= max_reports) return round;
      }
      auto c = scheduler_->GetCampaign(campaign_id, false);
      if (c.ok() && c->state() != v1::CAMPAIGN_STATE_RUNNING) return round;
    }
    return -1;
  }

  std::string path_;
  FakeClock clock_;
  std::vector<std::string> live_ = {"ci/n1", "ci/n2", "ci/n3"};
  Scheduler::Options options_;
  int epoch_ = 0;
  int next_result_ = 0;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<RendezvousTable> rendezvous_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<std::string, std::set<std::string>> world_of_;  // task -> agents that ran it
};

TEST_F(SchedulerTest, QuickCampaignOnThreeAgentsCompletesWithAThreeRankDispatch) {
  auto campaign = scheduler_->StartCampaign(
      "ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1"), Agent("n2"), Agent("n3")});
  ASSERT_TRUE(campaign.ok()) << campaign.status();
  // Per agent: 2 token counts x 2 distributions of grouped GEMM + 1 offload
  // = 5, x 3 agents = 15; collectives over groups {2, 3} x 2 ops = 4;
  // dispatch/combine over ep {3, 2} x 2 modes = 4; overlap over 2 = 1.
  EXPECT_EQ(campaign->tasks_total(), 24);
  ASSERT_GT(Drive(campaign->campaign_id()), 0);
  auto done = scheduler_->GetCampaign(campaign->campaign_id(), true);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
  EXPECT_EQ(done->tasks_done(), 24);
  int three_rank_dispatch = 0;
  for (const auto& t : done->tasks()) {
    if (t.kind() == v1::PROBE_KIND_DISPATCH_COMBINE && t.world_size() == 3) {
      ++three_rank_dispatch;
      EXPECT_EQ(world_of_[t.task_id()].size(), 3u) << "ranks ran on distinct agents";
    }
  }
  EXPECT_EQ(three_rank_dispatch, 2);
  EXPECT_EQ(rendezvous_->open_prefixes(), 0u);
  auto n = store_->CountResults({"", campaign->campaign_id(), 0});
  ASSERT_TRUE(n.ok());
  // 15 single-rank + 4 collectives (2+3+2+3 ranks) + 4 dispatch (3+3+2+2)
  // + overlap 2 = 15 + 10 + 10 + 2 results.
  EXPECT_EQ(*n, 37);
}

TEST_F(SchedulerTest, RestartKeepsDoneTasksAndRerunsTheRest) {
  auto campaign = scheduler_->StartCampaign(
      "ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1"), Agent("n2"), Agent("n3")});
  ASSERT_TRUE(campaign.ok());
  ASSERT_GT(Drive(campaign->campaign_id(), /*max_reports=*/8), 0);
  auto before = scheduler_->GetCampaign(campaign->campaign_id(), false);
  ASSERT_TRUE(before.ok());
  EXPECT_GT(before->tasks_done(), 0);
  EXPECT_LT(before->tasks_done(), 24);
  auto results_before = store_->CountResults({});
  ASSERT_TRUE(results_before.ok());

  Reopen();
  auto after = scheduler_->GetCampaign(campaign->campaign_id(), false);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->tasks_done(), before->tasks_done());
  EXPECT_EQ(after->tasks_running(), 0);
  EXPECT_EQ(after->state(), v1::CAMPAIGN_STATE_RUNNING);
  auto results_after = store_->CountResults({});
  EXPECT_EQ(*results_after, *results_before);
  ASSERT_GT(Drive(campaign->campaign_id()), 0);
  auto done = scheduler_->GetCampaign(campaign->campaign_id(), false);
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
}

TEST_F(SchedulerTest, DuplicateReportIsStoredOnce) {
  live_ = {"ci/n1"};
  auto campaign = scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1")});
  ASSERT_TRUE(campaign.ok());
  auto t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(t.has_value());
  v1::ProbeResult r = Ok(*t, "ci/n1");
  auto first = scheduler_->Report("ci/n1", r);
  auto second = scheduler_->Report("ci/n1", r);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*second);
  EXPECT_EQ(*store_->CountResults({}), 1);
  EXPECT_EQ(scheduler_->GetCampaign(campaign->campaign_id(), false)->tasks_done(), 1);
}

TEST_F(SchedulerTest, LostAgentAbortsItsAttemptAndTheTaskIsReassigned) {
  live_ = {"ci/n1", "ci/n2"};
  auto campaign =
      scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1"), Agent("n2")});
  ASSERT_TRUE(campaign.ok());
  // Finish the pinned single-rank tasks first.
  std::optional<v1::ProbeTask> t;
  for (;;) {
    t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
    ASSERT_TRUE(t.has_value());
    if (t->world_size() > 1) break;
    ASSERT_TRUE(scheduler_->Report("ci/n1", Ok(*t, "ci/n1")).ok());
  }
  // n1 holds rank 0 of a 2-rank probe; n2 joins as rank 1 (after its own
  // pinned tasks, which it runs first only if no group is forming).
  std::optional<v1::ProbeTask> r1 = scheduler_->NextTask("ci/n2", "ci", absl::ZeroDuration());
  ASSERT_TRUE(r1.has_value());
  ASSERT_EQ(r1->task_id(), t->task_id());
  EXPECT_EQ(r1->rank(), 1);
  EXPECT_EQ(r1->rendezvous_prefix(), t->rendezvous_prefix());
  ASSERT_TRUE(rendezvous_->IsOpen(t->rendezvous_prefix()));

  scheduler_->AgentsLost({"ci/n2"});
  EXPECT_FALSE(rendezvous_->IsOpen(t->rendezvous_prefix()));
  EXPECT_THAT(rendezvous_->Get(t->rendezvous_prefix() + "rank0", absl::ZeroDuration()),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("no scheduled probe attempt")));
  // A late success of the abandoned attempt's rank 0 is stored but does not
  // finish the task alone.
  ASSERT_TRUE(scheduler_->Report("ci/n1", Ok(*t, "ci/n1")).ok());
  auto status = scheduler_->GetCampaign(campaign->campaign_id(), true);
  for (const auto& ts : status->tasks()) {
    if (ts.task_id() == t->task_id()) {
      EXPECT_EQ(ts.state(), "pending");
      EXPECT_THAT(ts.last_error(), HasSubstr("ci/n2 was lost"));
    }
  }
  // The next attempt gets a new prefix.
  auto again = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->task_id(), t->task_id());
  EXPECT_EQ(again->attempt(), t->attempt() + 1);
  EXPECT_NE(again->rendezvous_prefix(), t->rendezvous_prefix());
}

// Attempt numbers start again after a restart (the interrupted attempt was
// never stored), so attempt 1 of a task exists once per server epoch. Late
// results of the interrupted attempt -- its ranks abandon their probe when
// they lose their session, and deliver the failure once registered again --
// must neither fail the new attempt of the same number nor complete it with
// ranks of another run.
TEST_F(SchedulerTest, ResultsOfAnAttemptInterruptedByARestartDoNotCountForItsSuccessor) {
  live_ = {"ci/n1", "ci/n2"};
  auto campaign =
      scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1"), Agent("n2")});
  ASSERT_TRUE(campaign.ok());
  std::optional<v1::ProbeTask> r0;
  for (;;) {
    r0 = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
    ASSERT_TRUE(r0.has_value());
    if (r0->world_size() > 1) break;
    ASSERT_TRUE(scheduler_->Report("ci/n1", Ok(*r0, "ci/n1")).ok());
  }
  ASSERT_EQ(r0->world_size(), 2);
  std::optional<v1::ProbeTask> r1 = scheduler_->NextTask("ci/n2", "ci", absl::ZeroDuration());
  ASSERT_TRUE(r1.has_value());
  ASSERT_EQ(r1->task_id(), r0->task_id());

  Reopen();  // the server restarts while both ranks run
  std::optional<v1::ProbeTask> n0, n1;
  for (;;) {
    n0 = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
    ASSERT_TRUE(n0.has_value());
    if (n0->task_id() == r0->task_id()) break;
    ASSERT_TRUE(scheduler_->Report("ci/n1", Ok(*n0, "ci/n1")).ok());
  }
  n1 = scheduler_->NextTask("ci/n2", "ci", absl::ZeroDuration());
  ASSERT_TRUE(n1.has_value());
  ASSERT_EQ(n1->task_id(), r0->task_id());
  EXPECT_EQ(n0->attempt(), r0->attempt()) << "attempt numbers restart with the server";
  EXPECT_NE(n0->rendezvous_prefix(), r0->rendezvous_prefix());

  auto task_status = [&]() {
    auto c = scheduler_->GetCampaign(campaign->campaign_id(), true);
    EXPECT_TRUE(c.ok());
    for (const auto& ts : c->tasks()) {
      if (ts.task_id() == r0->task_id()) return ts;
    }
    ADD_FAILURE() << "task " << r0->task_id() << " not listed";
    return v1::CampaignTaskStatus();
  };
  // The old rank 0 abandoned its probe: its failure is stored, and the new
  // attempt runs on.
  v1::ProbeResult abandoned = Ok(*r0, "ci/n1");
  abandoned.set_error_code(static_cast<int>(absl::StatusCode::kCancelled));
  abandoned.set_error_message("the agent lost its server session; probe abandoned");
  ASSERT_TRUE(scheduler_->Report("ci/n1", abandoned).ok());
  EXPECT_EQ(task_status().state(), "running");
  EXPECT_EQ(task_status().last_error(), "");
  EXPECT_TRUE(rendezvous_->IsOpen(n0->rendezvous_prefix()));
  // The old rank 1 finished before it noticed: with the new rank 0's
  // success that is two ok ranks of "attempt 1", but of two runs.
  ASSERT_TRUE(scheduler_->Report("ci/n2", Ok(*r1, "ci/n2")).ok());
  ASSERT_TRUE(scheduler_->Report("ci/n1", Ok(*n0, "ci/n1")).ok());
  EXPECT_EQ(task_status().state(), "running");
  ASSERT_TRUE(scheduler_->Report("ci/n2", Ok(*n1, "ci/n2")).ok());
  EXPECT_EQ(task_status().state(), "done");
}

TEST_F(SchedulerTest, UndeliveredTaskIsReleasedWithoutCountingAFailure) {
  live_ = {"ci/n1"};
  options_.max_attempts = 1;
  Reopen();
  auto campaign = scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1")});
  ASSERT_TRUE(campaign.ok());
  auto t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(t.has_value());
  scheduler_->Unassign("ci/n1");
  // Asking again while holding a task (the answer was lost) is the same.
  auto again = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->task_id(), t->task_id());
  auto third = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->task_id(), t->task_id());
  auto c = scheduler_->GetCampaign(campaign->campaign_id(), false);
  EXPECT_EQ(c->tasks_failed(), 0);  // max_attempts = 1, yet nothing failed
}

TEST_F(SchedulerTest, TaskFailingOnEveryAttemptFailsTheCampaign) {
  live_ = {"ci/n1"};
  options_.max_attempts = 2;
  Reopen();
  auto campaign = scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1")});
  ASSERT_TRUE(campaign.ok());
  std::string failing;
  for (int i = 0; i < 100; ++i) {
    auto t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
    if (!t) break;
    v1::ProbeResult r = Ok(*t, "ci/n1");
    if (failing.empty()) failing = t->task_id();
    if (t->task_id() == failing) {
      r.set_error_code(static_cast<int>(absl::StatusCode::kDataLoss));
      r.set_error_message("max_rel_error 0.3 above tolerance");
    }
    ASSERT_TRUE(scheduler_->Report("ci/n1", r).ok());
  }
  auto c = scheduler_->GetCampaign(campaign->campaign_id(), true);
  EXPECT_EQ(c->state(), v1::CAMPAIGN_STATE_FAILED);
  EXPECT_EQ(c->tasks_failed(), 1);
  EXPECT_EQ(c->tasks_done(), c->tasks_total() - 1);
  EXPECT_THAT(c->tasks(0).last_error(), HasSubstr("max_rel_error 0.3"));
  EXPECT_EQ(c->tasks(0).attempts(), 2);
}

TEST_F(SchedulerTest, NoLiveAgentIsAFailedPrecondition) {
  EXPECT_THAT(scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("'ci'")));
}

}  // namespace
}  // namespace moetune::server

namespace moetune::server {
namespace {

TEST_F(SchedulerTest, RefusedParametersFailTheTaskWithoutRetry) {
  live_ = {"ci/n1"};
  auto campaign = scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, {Agent("n1")});
  ASSERT_TRUE(campaign.ok());
  auto t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(t.has_value());
  v1::ProbeResult r = Ok(*t, "ci/n1");
  r.set_error_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  r.set_error_message("sizes_bytes[0] (65536) must be a multiple of 6 bytes");
  ASSERT_TRUE(scheduler_->Report("ci/n1", r).ok());
  auto c = scheduler_->GetCampaign(campaign->campaign_id(), true);
  EXPECT_EQ(c->tasks_failed(), 1);
  EXPECT_EQ(c->tasks(0).state(), "failed");
  EXPECT_EQ(c->tasks(0).attempts(), 1);
}

// A scheduler over a store whose result writes can be held in progress: the
// scheduler's lock is free meanwhile, so other calls run during the write.
class SchedulerDuringWriteTest : public ::testing::Test {
 protected:
  void Start(testing::GatedStore::Gate gate, int world_size, int max_attempts) {
    path_ = TempDbPath("during.db");
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    real_ = std::move(*store);
    StoredCampaign c;
    c.campaign_id = "c1";
    c.cluster = "ci";
    StoredTask& t = c.tasks.emplace_back();
    t.task.set_task_id("c1/t0");
    t.task.set_campaign_id("c1");
    t.task.set_kind(v1::PROBE_KIND_DISPATCH_COMBINE);
    t.task.set_world_size(world_size);
    ASSERT_TRUE(real_->CreateCampaign(c).ok());
    gated_ = std::make_unique<testing::GatedStore>(real_.get(), gate);
    Scheduler::Options options;
    options.max_attempts = max_attempts;
    scheduler_ = std::make_unique<Scheduler>(
        gated_.get(), &rendezvous_, [] { return absl::Now(); },
        [](const std::string&) { return std::vector<std::string>{"ci/n1", "ci/n2", "ci/n3"}; },
        options, "e1");
    ASSERT_TRUE(scheduler_->Recover().ok());
  }
  void TearDown() override {
    if (gated_) gated_->OpenGate();
  }
  // The task's state as stored (what a restart would load).
  TaskState StoredState() {
    auto campaigns = real_->LoadCampaigns();
    EXPECT_TRUE(campaigns.ok());
    return (*campaigns)[0].tasks[0].state;
  }
  static v1::ProbeResult Ok(const v1::ProbeTask& t, const std::string& id) {
    v1::ProbeResult r;
    r.set_result_id(id);
    r.set_task_id(t.task_id());
    r.set_campaign_id(t.campaign_id());
    r.set_attempt(t.attempt());
    r.set_rank(t.rank());
    r.set_received_unix_ms(1);
    return r;
  }

  std::string path_;
  std::unique_ptr<SqliteStore> real_;
  std::unique_ptr<testing::GatedStore> gated_;
  RendezvousTable rendezvous_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerDuringWriteTest, ConcurrentReportsOfAllRanksCompleteTheTaskOnce) {
  ASSERT_NO_FATAL_FAILURE(Start(testing::GatedStore::Gate::kBeforeWrite, 3, 3));
  std::vector<v1::ProbeTask> ranks;
  for (const char* agent : {"ci/n1", "ci/n2", "ci/n3"}) {
    auto t = scheduler_->NextTask(agent, "ci", absl::ZeroDuration());
    ASSERT_TRUE(t.has_value());
    ranks.push_back(*t);
  }
  // Rank 0's write is held; ranks 1 and 2 arrive meanwhile. Each decides
  // whether it completes the task only after the previous write of the
  // task is over, so exactly the last one does.
  std::vector<absl::StatusOr<bool>> out(3, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { out[0] = scheduler_->Report("ci/n1", Ok(ranks[0], "r0")); });
  while (!gated_->Blocked()) std::this_thread::yield();
  threads.emplace_back([&] { out[1] = scheduler_->Report("ci/n2", Ok(ranks[1], "r1")); });
  threads.emplace_back([&] { out[2] = scheduler_->Report("ci/n3", Ok(ranks[2], "r2")); });
  // The scheduler's lock is free while a write is in progress.
  EXPECT_TRUE(scheduler_->GetCampaign("c1", false).ok());
  gated_->OpenGate();
  for (auto& t : threads) t.join();
  for (const auto& o : out) {
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_TRUE(*o);
  }
  EXPECT_EQ(scheduler_->GetCampaign("c1", false)->tasks_done(), 1);
  EXPECT_EQ(StoredState(), TaskState::kDone);
  // One transaction per report of the task: they were written in turn.
  EXPECT_EQ(gated_->batch_sizes(), (std::vector<int>{1, 1, 1}));
}

TEST_F(SchedulerDuringWriteTest, AgentLostWhileItsCompletingResultIsWrittenLeavesTheTaskDone) {
  // The result that completes the task is committed but not yet applied
  // when its agent is declared lost, on the task's last allowed attempt.
  ASSERT_NO_FATAL_FAILURE(Start(testing::GatedStore::Gate::kAfterWrite, 1, 1));
  auto t = scheduler_->NextTask("ci/n1", "ci", absl::ZeroDuration());
  ASSERT_TRUE(t.has_value());
  absl::StatusOr<bool> out = absl::UnknownError("not run");
  std::thread report([&] { out = scheduler_->Report("ci/n1", Ok(*t, "r0")); });
  while (!gated_->Blocked()) std::this_thread::yield();
  EXPECT_EQ(StoredState(), TaskState::kDone);  // committed
  scheduler_->AgentsLost({"ci/n1"});           // would fail the task for good
  gated_->OpenGate();
  report.join();
  ASSERT_TRUE(out.ok()) << out.status();
  // The durable result wins: the failure decided meanwhile is not stored.
  EXPECT_EQ(StoredState(), TaskState::kDone);
  auto c = scheduler_->GetCampaign("c1", true);
  EXPECT_EQ(c->tasks_done(), 1);
  EXPECT_EQ(c->tasks_failed(), 0);
  EXPECT_EQ(c->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
}

v1::AgentInfo SizedAgent(const std::string& node, v1::Backend backend, int devices, uint64_t memory_bytes) {
  v1::AgentInfo a;
  a.set_agent_id("ci/" + node);
  a.set_node(node);
  a.set_cluster("ci");
  a.set_backend(backend);
  for (int d = 0; d < devices; ++d) {
    v1::DeviceInfo* info = a.add_devices();
    info->set_index(d);
    info->set_memory_bytes(memory_bytes);
  }
  return a;
}

// Per agent and kind: the grouped GEMM hidden sizes and token counts, the
// offload sizes and the collective sizes of its tasks.
struct PlannedSizes {
  std::set<int64_t> hidden, tokens, offload, collective;
};
PlannedSizes SizesOf(const std::vector<v1::ProbeTask>& tasks, const std::string& agent) {
  PlannedSizes out;
  for (const v1::ProbeTask& t : tasks) {
    if (!agent.empty() && t.pinned_agent_id() != agent) continue;
    if (t.has_grouped_gemm()) {
      out.hidden.insert(t.grouped_gemm().hidden());
      out.tokens.insert(t.grouped_gemm().total_tokens());
    }
    if (t.has_offload()) out.offload.insert(t.offload().sizes_bytes().begin(), t.offload().sizes_bytes().end());
    if (t.has_collective()) {
      out.collective.insert(t.collective().sizes_bytes().begin(), t.collective().sizes_bytes().end());
    }
  }
  return out;
}

TEST(CampaignPlannerTest, StandardSizesFollowEachAgentsBackendAndMemory) {
  const uint64_t kGB = 1000000000;
  const std::vector<v1::AgentInfo> agents = {SizedAgent("cpu", v1::BACKEND_CPU, 1, 0),
                                             SizedAgent("h200", v1::BACKEND_CUDA, 2, 141 * kGB),
                                             SizedAgent("small", v1::BACKEND_CUDA, 1, 16 * kGB)};
  auto tasks = PlanCampaign("c", v1::CAMPAIGN_PROFILE_STANDARD, agents);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  // A CPU agent gets host sizes, not DeepSeek-V3's 7168 x 2048 experts.
  const PlannedSizes cpu = SizesOf(*tasks, "ci/cpu");
  EXPECT_EQ(cpu.hidden, (std::set<int64_t>{1024}));
  EXPECT_EQ(cpu.tokens, (std::set<int64_t>{1024, 4096}));
  EXPECT_EQ(cpu.offload, (std::set<int64_t>{8 << 20, 64 << 20}));
  // An H200 runs the production sweep, its 1 GiB intra-node collectives too.
  const PlannedSizes h200 = SizesOf(*tasks, "ci/h200");
  EXPECT_EQ(h200.hidden, (std::set<int64_t>{7168}));
  EXPECT_EQ(h200.tokens, (std::set<int64_t>{4096, 16384, 65536}));
  EXPECT_EQ(h200.collective.count(int64_t{1} << 30), 1u);
  // 16 GB: 65,536 tokens x (7168 + 2048) with 32 experts' weights and
  // gradients needs ~8.6 GB (twice ~4.3 GB), over half the device: dropped.
  const PlannedSizes small = SizesOf(*tasks, "ci/small");
  EXPECT_EQ(small.tokens, (std::set<int64_t>{4096, 16384}));
  // Cross-node collectives (no pinned agent) run on every agent, the CPU one
  // included: host sizes, rounded to the group (3 ranks x 16 bytes).
  std::set<int64_t> cross;
  for (const v1::ProbeTask& t : *tasks) {
    if (t.has_collective() && t.pinned_agent_id().empty() && t.world_size() == 3) {
      cross.insert(t.collective().sizes_bytes().begin(), t.collective().sizes_bytes().end());
    }
  }
  EXPECT_EQ(cross, (std::set<int64_t>{4080, 262128, 8388576}));
}

TEST(CampaignPlannerTest, CollectiveSizesSplitEvenlyOverTheGroup) {
  std::vector<v1::AgentInfo> agents = {Agent("n1"), Agent("n2"), Agent("n3")};
  auto tasks = PlanCampaign("c", v1::CAMPAIGN_PROFILE_QUICK, agents);
  ASSERT_TRUE(tasks.ok());
  int checked = 0;
  for (const v1::ProbeTask& t : *tasks) {
    if (!t.has_collective()) continue;
    for (int64_t bytes : t.collective().sizes_bytes()) {
      // 65,536 over 3 ranks -> 65,520 = 1,365 x 48 (3 ranks x 16 bytes).
      EXPECT_EQ(bytes % (16 * t.world_size()), 0) << t.task_id() << " " << bytes;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace moetune::server
