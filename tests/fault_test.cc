// Fault tests of the service, each with real processes on 127.0.0.1 (the
// moetune-server and moetune-agent binaries, a real SQLite file), bounded in
// time, polling conditions against deadlines (no fixed sleeps):
//  1. an agent SIGKILLed mid-probe: its task is reassigned after the liveness
//     timeout and the campaign completes;
//  2. an agent cut off from the server (server frozen with SIGSTOP) for
//     longer than its backoff: its unacknowledged results stay in its spool
//     file on disk and are delivered, each stored once, after it reconnects;
//  3. a store write failure (another process holds the database's write
//     lock): the report gets UNAVAILABLE, nothing is acknowledged, the server
//     keeps serving, and the same report succeeds once the store is writable;
//  4. a plan job running when the server stops (SIGTERM, then SIGKILL) is
//     re-run after each restart and is never reported done without plans.
#include <sqlite3.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/spool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/agent_service.grpc.pb.h"
#include "proto/planner_service.grpc.pb.h"
#include "tests/internal/process.h"

namespace moetune {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::testing::Process;
using ::moetune::testing::ReadFile;
using ::moetune::testing::Runfile;
using ::moetune::testing::Tail;
using ::moetune::testing::TmpDir;
using ::moetune::testing::WaitFor;
using ::testing::HasSubstr;

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 10) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(TmpDir(), "/", info->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir_, "' && mkdir -p '", dir_, "'").c_str()), 0);
    db_ = dir_ + "/moetune.db";
  }

  void TearDown() override {
    if (HasFailure()) {
      if (server_) std::cerr << "---- server log\n" << Tail(server_->log()) << "\n";
      for (auto& [node, a] : agents_) {
        if (a) std::cerr << "---- " << node << "\n" << Tail(a->log()) << "\n";
      }
    }
    for (auto& [node, a] : agents_) {
      if (a) a->Kill(SIGTERM);
    }
    if (server_) server_->Kill(SIGTERM);
  }

  void StartServer(int port, std::vector<std::string> extra = {}) {
    const std::string port_file = dir_ + "/port";
    std::remove(port_file.c_str());
    std::vector<std::string> argv = {Runfile("server/moetune-server"),
                                     absl::StrCat("--listen=127.0.0.1:", port), "--db=" + db_,
                                     "--port_file=" + port_file, "--heartbeat_ms=200"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Process>(argv, dir_ + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return !ReadFile(port_file).empty(); }, absl::Seconds(30)))
        << "server did not start: " << Tail(server_->log());
    port_ = std::stoi(ReadFile(port_file));
    address_ = absl::StrCat("127.0.0.1:", port_);
    auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    planner_ = v1::PlannerService::NewStub(channel);
    agent_stub_ = v1::AgentService::NewStub(channel);
  }

  std::string Spool(const std::string& node) { return dir_ + "/" + node + ".spool"; }
  std::string Acks(const std::string& node) { return dir_ + "/" + node + ".acks"; }

  void StartAgent(const std::string& node) {
    agents_[node] = std::make_unique<Process>(
        std::vector<std::string>{Runfile("agent/moetune-agent"), "--server=" + address_,
                                 "--cluster=ci", "--node=" + node, "--backend=cpu",
                                 "--spool=" + Spool(node), "--ack_log=" + Acks(node),
                                 "--pull_wait_ms=300", "--max_backoff_ms=200",
                                 "--rpc_timeout_ms=1000"},
        dir_ + "/" + node + ".log");
  }

  std::map<std::string, v1::AgentState> Agents() {
    v1::ListAgentsRequest req;
    req.set_cluster("ci");
    v1::ListAgentsResponse resp;
    std::map<std::string, v1::AgentState> out;
    if (!planner_->ListAgents(Ctx().get(), req, &resp).ok()) return out;
    for (const auto& a : resp.agents()) out[a.agent_id()] = a.state();
    return out;
  }
  int LiveAgents() {
    int n = 0;
    for (const auto& [id, s] : Agents()) n += s == v1::AGENT_STATE_LIVE;
    return n;
  }

  std::string StartCampaign() {
    v1::StartCalibrationRequest req;
    req.set_cluster("ci");
    req.set_profile(v1::CAMPAIGN_PROFILE_QUICK);
    v1::StartCalibrationResponse resp;
    // A generous deadline: what is under test is the recovery, not the
    // latency, and a loaded CI machine can hold the server for seconds.
    grpc::Status s = planner_->StartCalibration(Ctx(60).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.campaign().campaign_id();
  }

  std::optional<v1::Campaign> Campaign(const std::string& id) {
    v1::GetCalibrationRequest req;
    req.set_campaign_id(id);
    v1::GetCalibrationResponse resp;
    if (!planner_->GetCalibration(Ctx().get(), req, &resp).ok()) return std::nullopt;
    return resp.campaign();
  }

  static const v1::CampaignTaskStatus* FindTask(const v1::Campaign& c, const std::string& id) {
    for (const auto& t : c.tasks()) {
      if (t.task_id() == id) return &t;
    }
    return nullptr;
  }

  std::map<std::string, int> StoredResultIds() {
    v1::ListMeasurementsRequest req;
    req.set_cluster("ci");
    v1::ListMeasurementsResponse resp;
    std::map<std::string, int> out;
    grpc::Status s = planner_->ListMeasurements(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    // result_id is the store's key, so "none twice" means more than unique
    // ids: one probe run (task, attempt, rank) must not be stored under two
    // ids either (a re-send that got a new id would be counted twice).
    std::map<std::string, std::string> runs;
    for (const auto& r : resp.results()) {
      out[r.result_id()]++;
      if (r.task_id().empty()) continue;
      const std::string run = absl::StrCat(r.task_id(), "#", r.attempt(), "/", r.rank());
      auto [it, fresh] = runs.emplace(run, r.result_id());
      EXPECT_TRUE(fresh) << run << " stored twice: " << it->second << " and " << r.result_id();
    }
    return out;
  }

  // Freezes the agent that runs a single-rank task, while the server still
  // sees that task running on it: the agent is then stopped mid-probe (or
  // with a result it has not reported). Returns the node and the task.
  std::optional<std::pair<std::string, v1::CampaignTaskStatus>> FreezeAgentMidTask(
      const std::string& campaign_id) {
    std::optional<std::pair<std::string, v1::CampaignTaskStatus>> found;
    WaitFor(
        [&] {
          auto c = Campaign(campaign_id);
          if (!c || c->state() != v1::CAMPAIGN_STATE_RUNNING) return false;
          for (const auto& t : c->tasks()) {
            if (t.state() != "running" || t.world_size() > 1 || t.agents_size() != 1) continue;
            const std::string node = std::string(absl::StripPrefix(t.agents(0), "ci/"));
            auto it = agents_.find(node);
            if (it == agents_.end() || !it->second) continue;
            it->second->Signal(SIGSTOP);
            auto again = Campaign(campaign_id);
            const v1::CampaignTaskStatus* now = again ? FindTask(*again, t.task_id()) : nullptr;
            if (now && now->state() == "running" && now->attempts() == t.attempts() &&
                now->agents_size() == 1 && now->agents(0) == t.agents(0)) {
              found = {node, *now};
              return true;
            }
            it->second->Signal(SIGCONT);  // it finished meanwhile; try another
          }
          return false;
        },
        absl::Seconds(60));
    return found;
  }

  std::string dir_, db_, address_;
  int port_ = 0;
  std::unique_ptr<Process> server_;
  std::map<std::string, std::unique_ptr<Process>> agents_;
  std::unique_ptr<v1::PlannerService::Stub> planner_;
  std::unique_ptr<v1::AgentService::Stub> agent_stub_;
};

TEST_F(FaultTest, AgentKilledMidProbeTaskIsReassignedAndCampaignCompletes) {
  ASSERT_NO_FATAL_FAILURE(StartServer(0, {"--agent_timeout_ms=1500"}));
  for (const char* node : {"node1", "node2", "node3"}) StartAgent(node);
  ASSERT_TRUE(WaitFor([&] { return LiveAgents() == 3; }, absl::Seconds(30)));
  const std::string campaign = StartCampaign();

  auto frozen = FreezeAgentMidTask(campaign);
  ASSERT_TRUE(frozen) << "never caught an agent mid-task";
  const auto& [victim, task] = *frozen;
  agents_[victim]->Kill(SIGKILL);
  agents_[victim].reset();
  std::cerr << "SIGKILLed " << victim << " running " << task.task_id() << " attempt "
            << task.attempts() << "\n";

  // The server declares it lost after the liveness timeout and moves its task.
  const std::string victim_id = "ci/" + victim;
  ASSERT_TRUE(WaitFor([&] { return Agents()[victim_id] == v1::AGENT_STATE_LOST; }, absl::Seconds(15)))
      << "agent not declared lost";
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = Campaign(campaign);
        const v1::CampaignTaskStatus* t = c ? FindTask(*c, task.task_id()) : nullptr;
        return t && (t->attempts() > task.attempts() || t->state() == "pending");
      },
      absl::Seconds(15)))
      << "task " << task.task_id() << " was not released";
  EXPECT_THAT(ReadFile(server_->log()), HasSubstr("agent " + victim_id + " lost"));

  // The node comes back (its tasks pinned to it need it); the campaign completes.
  StartAgent(victim);
  std::optional<v1::Campaign> done;
  ASSERT_TRUE(WaitFor(
      [&] {
        done = Campaign(campaign);
        return done && done->state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)))
      << "campaign did not finish";
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
  EXPECT_EQ(done->tasks_done(), done->tasks_total());
  const v1::CampaignTaskStatus* t = FindTask(*done, task.task_id());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state(), "done");
  EXPECT_GT(t->attempts(), task.attempts()) << "the killed attempt was not replaced";
  // Each stored result once.
  for (const auto& [id, n] : StoredResultIds()) EXPECT_EQ(n, 1) << id;
}

TEST_F(FaultTest, AgentCutOffKeepsResultsOnDiskAndDeliversThemAfterwards) {
  ASSERT_NO_FATAL_FAILURE(StartServer(0, {"--agent_timeout_ms=10000"}));
  StartAgent("node1");
  ASSERT_TRUE(WaitFor([&] { return LiveAgents() == 1; }, absl::Seconds(30)));
  const std::string campaign = StartCampaign();

  auto frozen = FreezeAgentMidTask(campaign);
  ASSERT_TRUE(frozen) << "never caught the agent mid-task";
  // Cut the agent off: the server stops answering (its connections hang).
  server_->Signal(SIGSTOP);
  agents_["node1"]->Signal(SIGCONT);

  // The agent finishes its probe and keeps the result in its spool file.
  std::vector<std::string> pending;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto spool = agent::ResultSpool::ReadPending(Spool("node1"));  // the agent holds it
        if (!spool.ok() || spool->empty()) return false;
        pending.clear();
        for (const auto& r : *spool) pending.push_back(r.result_id());
        return true;
      },
      absl::Seconds(30)))
      << "no result reached the spool";
  // ... and stays cut off for longer than its backoff (200 ms max): several
  // failed attempts to report it.
  auto failed_reports = [&] {
    int n = 0;
    for (absl::string_view line : absl::StrSplit(ReadFile(agents_["node1"]->log()), '\n')) {
      n += absl::StrContains(line, "failed (kept for a re-send)");
    }
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return failed_reports() >= 4; }, absl::Seconds(30)))
      << "the agent did not retry while cut off";
  ASSERT_TRUE(agents_["node1"]->Running());
  auto spool = agent::ResultSpool::ReadPending(Spool("node1"));
  ASSERT_TRUE(spool.ok());
  ASSERT_GE(spool->size(), pending.size()) << "a result left the spool without an ack";
  const std::set<std::string> acked_before = [&] {
    std::set<std::string> s;
    for (absl::string_view l : absl::StrSplit(ReadFile(Acks("node1")), '\n', absl::SkipEmpty())) {
      s.insert(std::string(l));
    }
    return s;
  }();
  for (const std::string& id : pending) EXPECT_EQ(acked_before.count(id), 0u) << id;

  // Reconnected: every spooled result is delivered and stored once.
  server_->Signal(SIGCONT);
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string acks = ReadFile(Acks("node1"));
        for (const std::string& id : pending) {
          if (!absl::StrContains(acks, id + "\n")) return false;
        }
        return true;
      },
      absl::Seconds(30)))
      << "spooled results not delivered";
  std::map<std::string, int> stored = StoredResultIds();
  for (const std::string& id : pending) EXPECT_EQ(stored[id], 1) << id;
  std::optional<v1::Campaign> done;
  ASSERT_TRUE(WaitFor(
      [&] {
        done = Campaign(campaign);
        return done && done->state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)));
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
}

TEST_F(FaultTest, StoreWriteFailureIsUnavailableAndRecovers) {
  ASSERT_NO_FATAL_FAILURE(StartServer(0));
  v1::RegisterRequest reg_req;
  reg_req.mutable_agent()->set_node("n1");
  reg_req.mutable_agent()->set_cluster("ci");
  v1::RegisterResponse reg;
  ASSERT_TRUE(agent_stub_->Register(Ctx().get(), reg_req, &reg).ok());
  v1::ReportResultRequest report;
  report.set_agent_id(reg.agent_id());
  report.set_session_id(reg.session_id());
  v1::ProbeResult* r = report.mutable_result();
  r->set_result_id("ci/n1/fault-1");
  r->set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  v1::Measurement* m = r->add_measurements();
  m->set_name("gemm");
  m->add_samples_seconds(1e-3);
  m->set_median_seconds(1e-3);

  // Another process takes the database's write lock (as a backup tool or a
  // second writer would): the server cannot commit.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  v1::ReportResultResponse ack;
  const absl::Time t0 = absl::Now();
  grpc::Status s = agent_stub_->ReportResult(Ctx(30).get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("locked"));
  std::cerr << "store locked: report answered " << s.error_code() << " after "
            << absl::FormatDuration(absl::Now() - t0) << ": " << s.error_message() << "\n";
  // The server did not crash and still serves.
  EXPECT_TRUE(server_->Running());
  EXPECT_EQ(Agents().size(), 1u);

  // Writable again: the same report is stored, once.
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  s = agent_stub_->ReportResult(Ctx(30).get(), report, &ack);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(ack.duplicate());
  s = agent_stub_->ReportResult(Ctx(30).get(), report, &ack);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(ack.duplicate());
  EXPECT_EQ(StoredResultIds(), (std::map<std::string, int>{{"ci/n1/fault-1", 1}}));
}

TEST_F(FaultTest, PlanJobRunningWhenServerStopsIsRerunAfterRestart) {
  const std::vector<std::string> flags = {"--job_workers=1", "--search_threads=1"};
  ASSERT_NO_FATAL_FAILURE(StartServer(0, flags));
  v1::SubmitPlanRequest req;
  req.mutable_model()->set_preset("deepseek-v3");
  req.mutable_cluster()->set_preset("gb200-nvl72");
  req.mutable_shape()->set_gpus(1024);
  req.mutable_shape()->set_seq_len(4096);
  req.mutable_shape()->set_global_batch_size(8192);
  v1::SubmitPlanResponse submitted;
  grpc::Status s = planner_->SubmitPlan(Ctx().get(), req, &submitted);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto job = [&]() -> std::optional<v1::Job> {
    v1::GetJobRequest get;
    get.set_job_id(submitted.job_id());
    v1::Job j;
    if (!planner_->GetJob(Ctx().get(), get, &j).ok()) return std::nullopt;
    return j;
  };

  for (int sig : {SIGTERM, SIGKILL}) {
    std::optional<v1::Job> j;
    ASSERT_TRUE(WaitFor(
        [&] {
          j = job();
          return j && j->state() == v1::JOB_STATE_RUNNING;
        },
        absl::Seconds(30)))
        << "job never seen running";
    server_->Kill(sig);
    ASSERT_NO_FATAL_FAILURE(StartServer(port_, flags));
    j = job();
    ASSERT_TRUE(j) << "job lost across the restart";
    if (j->state() == v1::JOB_STATE_SUCCEEDED) {
      // Only possible if it finished between the poll and the signal.
      EXPECT_GT(j->plans_size(), 0) << "reported done without a result";
      break;
    }
    EXPECT_THAT(j->state(), ::testing::AnyOf(v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING))
        << "after signal " << sig << ": " << v1::JobState_Name(j->state()) << " "
        << j->error_message();
  }
  std::optional<v1::Job> j;
  ASSERT_TRUE(WaitFor(
      [&] {
        j = job();
        return j && (j->state() == v1::JOB_STATE_SUCCEEDED || j->state() == v1::JOB_STATE_FAILED);
      },
      absl::Seconds(180)))
      << "job did not finish after the restarts";
  ASSERT_EQ(j->state(), v1::JOB_STATE_SUCCEEDED) << j->error_message();
  EXPECT_GT(j->plans_size(), 0);
  v1::GetTunedConfigRequest creq;
  creq.set_job_id(submitted.job_id());
  creq.set_format(v1::CONFIG_FORMAT_MEGATRON);
  v1::GetTunedConfigResponse config;
  s = planner_->GetTunedConfig(Ctx().get(), creq, &config);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(config.content(), HasSubstr("--tensor-model-parallel-size"));
}

}  // namespace
}  // namespace moetune
