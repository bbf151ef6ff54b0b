// The agent's control loop against a real in-process AgentService on
// 127.0.0.1: a result left in the spool by an earlier run is delivered and
// leaves the spool only once stored; a campaign's probes run through the real
// CPU kernels; after the server restarts (same port, same store, sessions
// gone) the agent registers again by itself.
#include <atomic>
#include <cstdlib>
#include <memory>
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
  ServerInstance(server::Store* store, int port) {
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
        server::Scheduler::Options{}, "e" + std::to_string(port));
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

  server::RendezvousTable rendezvous;
  std::unique_ptr<server::AgentRegistry> registry;
  std::unique_ptr<server::Scheduler> scheduler;
  std::unique_ptr<server::AgentServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

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

  agent::AgentOptions options;
  options.info.set_node("n1");
  options.info.set_cluster("ci");
  options.info.set_backend(v1::BACKEND_CPU);
  options.info.add_devices()->set_name("cpu");
  options.backend = kernels::Backend::kCpu;
  options.rpc_timeout = absl::Seconds(3);
  options.pull_wait = absl::Milliseconds(200);
  options.min_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: it is also the connect timeout.
  std::shared_ptr<v1::AgentService::StubInterface> stub = v1::AgentService::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                grpc::InsecureChannelCredentials(), args));
  auto spool = agent::ResultSpool::Open(spool_path);
  ASSERT_TRUE(spool.ok());
  agent::Agent a(options, stub, std::move(*spool),
                 [](const kernels::ProbeRequest& r) { return kernels::RunProbe(r); });
  std::atomic<bool> stop{false};
  std::thread runner([&] { a.Run(&stop); });

  // 1. The leftover result is stored, then leaves the spool.
  EXPECT_TRUE(WaitFor([&] { return *(*store)->CountResults({}) == 1; }, absl::Seconds(20)));
  EXPECT_TRUE(WaitFor(
      [&] {
        auto s = agent::ResultSpool::Open(spool_path);
        return s.ok() && (*s)->size() == 0;
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

}  // namespace
}  // namespace moetune
