// The agent's control loop against a real in-process AgentService on
// 127.0.0.1: a result left in the spool by an earlier run is delivered and
// leaves the spool only once stored; a campaign's probes run through the real
// CPU kernels; after the server restarts (same port, same store, sessions
// gone) the agent registers again by itself.
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "agent/agent.h"
#include "agent/spool.h"
#include "gtest/gtest.h"
#include "kernels/probes.h"
#include "server/agent_registry.h"
#include "server/agent_service.h"
#include "server/rendezvous.h"
#include "server/scheduler.h"
#include "server/sqlite_store.h"

namespace moetune {
namespace {

namespace v1 = ::moetune::v1;

std::string Tmp(const std::string& name) {
  const char* d = std::getenv("TEST_TMPDIR");
  std::string p = std::string(d ? d : "/tmp") + "/" + name;
  std::remove(p.c_str());
  return p;
}

bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return cond();
}

// One server "process": registry, scheduler and service over a shared store.
struct ServerInstance {
  ServerInstance(server::Store* store, int port,
                 server::Scheduler::Options scheduler_options = {})
      : epoch("e" + std::to_string(port)) {
    registry = std::make_unique<server::AgentRegistry>(
        store, [] { return absl::Now(); },
        server::AgentRegistry::Options{absl::Seconds(5), absl::Milliseconds(100)});
    EXPECT_TRUE(registry->Recover().ok());
    scheduler = std::make_unique<server::Scheduler>(
        store, &rendezvous, [] { return absl::Now(); },
        [this](const std::string& c) {
          std::vector<std::string> ids;
          for (const auto& a : registry->Live(c)) ids.push_back(a.agent_id());
          return ids;
        },
        scheduler_options, epoch);
    EXPECT_TRUE(scheduler->Recover().ok());
    service = std::make_unique<server::AgentServiceImpl>(registry.get(), scheduler.get(),
                                                         &rendezvous,
                                                         server::AgentServiceImpl::Options{});
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                       &this->port);
    b.RegisterService(service.get());
    server = b.BuildAndStart();
  }
  ~ServerInstance() { server->Shutdown(std::chrono::system_clock::now()); }

  const std::string epoch;  // of the scheduler: distinct per instance in each test
  server::RendezvousTable rendezvous;
  std::unique_ptr<server::AgentRegistry> registry;
  std::unique_ptr<server::Scheduler> scheduler;
  std::unique_ptr<server::AgentServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

agent::AgentOptions TestAgentOptions(const std::string& node) {
  agent::AgentOptions options;
  options.info.set_node(node);
  options.info.set_cluster("ci");
  options.info.set_backend(v1::BACKEND_CPU);
  options.info.add_devices()->set_name("cpu");
  options.backend = kernels::Backend::kCpu;
  options.rpc_timeout = absl::Seconds(3);
  options.pull_wait = absl::Milliseconds(200);
  options.min_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  return options;
}

std::shared_ptr<v1::AgentService::StubInterface> TestStub(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: it is also the connect timeout.
  return v1::AgentService::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
}

TEST(AgentDeliveryTest, SpooledResultDeliveredProbesRunAndAgentReturnsAfterRestart) {
  const std::string spool_path = Tmp("n1.spool");
  {
    auto spool = agent::ResultSpool::Open(spool_path);
    ASSERT_TRUE(spool.ok());
    v1::ProbeResult left;
    left.set_result_id("ci/n1/from-before");
    left.add_measurements()->add_samples_seconds(0.25);
    ASSERT_TRUE((*spool)->Add(left).ok());
  }
  auto store = server::SqliteStore::Open(Tmp("agent.db"));
  ASSERT_TRUE(store.ok());
  auto first = std::make_unique<ServerInstance>(store->get(), 0);
  ASSERT_GT(first->port, 0);
  const int port = first->port;

  auto spool = agent::ResultSpool::Open(spool_path);
  ASSERT_TRUE(spool.ok());
  agent::Agent a(TestAgentOptions("n1"), TestStub(port), std::move(*spool),
                 [](const kernels::ProbeRequest& r) { return kernels::RunProbe(r); });
  std::atomic<bool> stop{false};
  std::thread runner([&] { a.Run(&stop); });

  // 1. The leftover result is stored, then leaves the spool.
  EXPECT_TRUE(WaitFor([&] { return *(*store)->CountResults({}) == 1; }, absl::Seconds(20)));
  EXPECT_TRUE(WaitFor(
      [&] {
        auto s = agent::ResultSpool::ReadPending(spool_path);  // the agent holds the spool
        return s.ok() && s->empty();
      },
      absl::Seconds(20)));

  // 2. A quick campaign for this one agent runs through the CPU kernels.
  ASSERT_TRUE(WaitFor([&] { return first->registry->IsLive("ci/n1"); }, absl::Seconds(10)));
  auto campaign = first->scheduler->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK,
                                                  first->registry->Live("ci"));
  ASSERT_TRUE(campaign.ok()) << campaign.status();
  EXPECT_TRUE(WaitFor(
      [&] {
        auto c = first->scheduler->GetCampaign(campaign->campaign_id(), false);
        return c.ok() && c->state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)));
  auto done = first->scheduler->GetCampaign(campaign->campaign_id(), true);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
  for (const auto& t : done->tasks()) EXPECT_EQ(t.last_error(), "") << t.task_id();
  auto results = (*store)->ListResults({"ci", campaign->campaign_id(), 0});
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(static_cast<int>(results->size()), done->tasks_total());
  for (const v1::ProbeResult& r : *results) {
    EXPECT_EQ(r.error_code(), 0) << r.error_message();
    EXPECT_EQ(r.provenance().agent_id(), "ci/n1");
    EXPECT_EQ(r.provenance().backend(), v1::BACKEND_CPU);
    EXPECT_FALSE(r.provenance().host().empty());
    EXPECT_FALSE(r.params_json().empty());
    ASSERT_GT(r.measurements_size(), 0);
    EXPECT_GT(r.measurements(0).samples_seconds_size(), 0);
  }

  // 3. Restart: same port and store, no sessions. The agent registers again.
  first.reset();
  ServerInstance second(store->get(), port);
  ASSERT_EQ(second.port, port);
  EXPECT_TRUE(WaitFor([&] { return second.registry->IsLive("ci/n1"); }, absl::Seconds(20)));

  stop = true;
  runner.join();
}

// Two agent processes started with one node name (a misconfigured launch):
// the second is refused while the first is live, so the first keeps its
// session and its tasks and the campaign completes on it. (Before, each
// registration took the session from the other, and each pull released the
// other's running task.)
TEST(AgentDeliveryTest, ASecondAgentWithTheSameNodeNameIsRefusedAndTheFirstWorksOn) {
  auto store = server::SqliteStore::Open(Tmp("twins.db"));
  ASSERT_TRUE(store.ok());
  ServerInstance server(store->get(), 0);
  ASSERT_GT(server.port, 0);
  std::vector<std::unique_ptr<agent::Agent>> twins;
  for (const std::string spool : {"twin-a.spool", "twin-b.spool"}) {
    auto s = agent::ResultSpool::Open(Tmp(spool));
    ASSERT_TRUE(s.ok());
    twins.push_back(std::make_unique<agent::Agent>(
        TestAgentOptions("n1"), TestStub(server.port), std::move(*s),
        [](const kernels::ProbeRequest& r) { return kernels::RunProbe(r); }));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> runners;
  for (auto& a : twins) runners.emplace_back([&stop, a = a.get()] { a->Run(&stop); });

  auto live_instance = [&]() -> std::string {
    for (const v1::AgentInfo& a : server.registry->Live("ci")) return a.instance_id();
    return "";
  };
  ASSERT_TRUE(WaitFor([&] { return !live_instance().empty(); }, absl::Seconds(20)));
  auto campaign = server.scheduler->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK,
                                                  server.registry->Live("ci"));
  ASSERT_TRUE(campaign.ok()) << campaign.status();
  std::set<std::string> instances;
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string now = live_instance();
        if (!now.empty()) instances.insert(now);
        auto c = server.scheduler->GetCampaign(campaign->campaign_id(), false);
        return c.ok() && c->state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)));
  EXPECT_EQ(instances.size(), 1u) << "the agent id changed hands during the campaign";
  auto done = server.scheduler->GetCampaign(campaign->campaign_id(), true);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED);
  for (const auto& t : done->tasks()) {
    EXPECT_EQ(t.attempts(), 1) << t.task_id() << " ran more than once: " << t.last_error();
  }
  stop = true;
  for (auto& t : runners) t.join();
}

// The server restarts while two agents run the ranks of one probe. The
// attempt's rendezvous prefix dies with the server (the new one answers
// Aborted for its keys): both ranks must stop at once rather than wait out the
// group timeout (300 s here) and register again; their failures, delivered
// afterwards, belong to the interrupted attempt, and the task runs again
// under the new server and completes (one attempt allowed: a late failure
// taken for the new attempt would fail the campaign).
TEST(AgentDeliveryTest, RestartDuringAMultiRankProbeReleasesItsRanksAndReRunsTheTask) {
  auto store = server::SqliteStore::Open(Tmp("restart-probe.db"));
  ASSERT_TRUE(store.ok());
  server::StoredCampaign c;
  c.campaign_id = "c1";
  c.cluster = "ci";
  server::StoredTask& st = c.tasks.emplace_back();
  v1::ProbeTask& task = st.task;
  task.set_task_id("c1/t0");
  task.set_campaign_id("c1");
  task.set_kind(v1::PROBE_KIND_COLLECTIVE);
  task.set_world_size(2);
  task.mutable_collective()->set_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  task.mutable_collective()->set_dtype(v1::DTYPE_FP32);
  task.mutable_collective()->add_sizes_bytes(8 << 20);
  task.mutable_timing()->set_warmup_iters(1);
  task.mutable_timing()->set_timed_iters(200);
  ASSERT_TRUE((*store)->CreateCampaign(c).ok());

  server::Scheduler::Options scheduler_options;
  scheduler_options.max_attempts = 1;
  scheduler_options.rendezvous_timeout = absl::Seconds(300);
  auto first = std::make_unique<ServerInstance>(store->get(), 0, scheduler_options);
  ASSERT_GT(first->port, 0);
  const int port = first->port;

  std::vector<std::unique_ptr<agent::Agent>> agents;
  for (const std::string node : {"n1", "n2"}) {
    auto spool = agent::ResultSpool::Open(Tmp(node + "-restart.spool"));
    ASSERT_TRUE(spool.ok());
    agents.push_back(std::make_unique<agent::Agent>(
        TestAgentOptions(node), TestStub(port), std::move(*spool),
        [](const kernels::ProbeRequest& r) { return kernels::RunProbe(r); }));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> runners;
  for (auto& a : agents) runners.emplace_back([&stop, a = a.get()] { a->Run(&stop); });

  // Both ranks connected (each published its "connect" verdict): the probe
  // is past its rendezvous, in its verify and timing phases.
  const std::string prefix = "c1/t0/" + first->epoch + "/a1/";
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const char* rank : {"0", "1"}) {
          if (!first->rendezvous.Get(prefix + "/agree/connect/" + rank, absl::ZeroDuration())
                   .ok()) {
            return false;
          }
        }
        return true;
      },
      absl::Seconds(60)));

  const std::string first_epoch = first->epoch;
  first.reset();
  const absl::Time restarted = absl::Now();
  ServerInstance second(store->get(), port, scheduler_options);
  ASSERT_EQ(second.port, port);
  ASSERT_NE(second.epoch, first_epoch);
  EXPECT_TRUE(WaitFor(
      [&] { return second.registry->IsLive("ci/n1") && second.registry->IsLive("ci/n2"); },
      absl::Seconds(60)))
      << "the ranks of the interrupted probe did not come back within 60 s (group timeout 300 s)";
  std::cerr << "both agents registered again " << absl::Now() - restarted
            << " after the restart\n";

  EXPECT_TRUE(WaitFor(
      [&] {
        auto got = second.scheduler->GetCampaign("c1", false);
        return got.ok() && got->state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)));
  auto done = second.scheduler->GetCampaign("c1", true);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::CAMPAIGN_STATE_SUCCEEDED) << done->tasks(0).last_error();
  auto results = (*store)->ListResults({"ci", "c1", 0});
  ASSERT_TRUE(results.ok());
  int interrupted = 0, completed = 0;
  for (const v1::ProbeResult& r : *results) {
    if (r.rendezvous_prefix() == prefix) {
      EXPECT_NE(r.error_code(), 0) << "rank " << r.rank() << " of the interrupted attempt";
      ++interrupted;
    } else {
      EXPECT_EQ(r.error_code(), 0) << r.error_message();
      EXPECT_EQ(r.rendezvous_prefix(), "c1/t0/" + second.epoch + "/a1/")
          << "attempt numbers start again; the prefix tells the two apart";
      ++completed;
    }
  }
  EXPECT_EQ(completed, 2);
  EXPECT_LE(interrupted, 2);
  stop = true;
  for (auto& t : runners) t.join();
}

}  // namespace
}  // namespace moetune
