// moetune-server: the planner service.
//
//   moetune-server --listen HOST:PORT --db PATH
//
// Serves moetune.v1.PlannerService and moetune.v1.AgentService (plus the
// standard gRPC health service) from one port. All durable state lives in the
// SQLite file at --db; restarting on the same file resumes campaigns and plan
// jobs. SIGTERM/SIGINT stop it; anything acknowledged is already committed,
// so a SIGKILL loses nothing acknowledged either.
#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "server/agent_registry.h"
#include "server/agent_service.h"
#include "server/job_runner.h"
#include "server/planner_adapter.h"
#include "server/planner_service.h"
#include "server/rendezvous.h"
#include "server/scheduler.h"
#include "server/security.h"
#include "server/sqlite_store.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7070", "address to serve on, HOST:PORT (port 0: pick one)");
ABSL_FLAG(std::string, db, "moetune.db", "SQLite database file (created if missing)");
ABSL_FLAG(std::string, port_file, "", "write the bound port to this file once serving");
ABSL_FLAG(int32_t, heartbeat_ms, 2000, "heartbeat interval asked of agents");
ABSL_FLAG(int32_t, agent_timeout_ms, 10000, "an agent silent this long is lost; its tasks move");
ABSL_FLAG(int32_t, rendezvous_timeout_ms, 60000, "how long ranks of a probe wait for each other");
ABSL_FLAG(int32_t, max_task_attempts, 3, "a probe task failing this often fails the campaign");
ABSL_FLAG(int32_t, job_workers, 2, "plan jobs run concurrently");
ABSL_FLAG(int32_t, search_threads, 1, "threads per plan search");
ABSL_FLAG(int32_t, rpc_threads, 512,
          "RPC threads kept alive between calls at most (gRPC sync server MAX_POLLERS)");

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

int Fail(const std::string& msg) {
  std::cerr << "moetune-server: " << msg << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  namespace ms = ::moetune::server;
  absl::SetProgramUsageMessage("moetune-server --listen HOST:PORT --db PATH");
  absl::ParseCommandLine(argc, argv);
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug aid: a global graph under a global lock, ~3% of the CPU at full
  // ingest). The tests keep it on; the server does not need it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  auto store = ms::SqliteStore::Open(absl::GetFlag(FLAGS_db));
  if (!store.ok()) return Fail(store.status().ToString());
  ms::Clock clock = [] { return absl::Now(); };

  ms::AgentRegistry registry(
      store->get(), clock,
      {absl::Milliseconds(absl::GetFlag(FLAGS_agent_timeout_ms)),
       absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_ms))});
  if (auto st = registry.Recover(); !st.ok()) return Fail(st.ToString());

  ms::RendezvousTable rendezvous;
  const std::string epoch = absl::StrFormat("%08x", absl::Uniform<uint32_t>(absl::BitGen()));
  ms::Scheduler::Options sched_options;
  sched_options.max_attempts = absl::GetFlag(FLAGS_max_task_attempts);
  sched_options.rendezvous_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_rendezvous_timeout_ms));
  ms::Scheduler scheduler(
      store->get(), &rendezvous, clock,
      [&registry](const std::string& cluster) {
        std::vector<std::string> ids;
        for (const auto& a : registry.Live(cluster)) ids.push_back(a.agent_id());
        return ids;
      },
      sched_options, epoch);
  if (auto st = scheduler.Recover(); !st.ok()) return Fail(st.ToString());

  ms::PlannerAdapterOptions adapter_options;
  adapter_options.search_threads = absl::GetFlag(FLAGS_search_threads);
  ms::PlannerAdapter adapter(store->get(), adapter_options);
  auto jobs = std::make_unique<ms::JobRunner>(
      store->get(), clock,
      [&adapter](const moetune::v1::SubmitPlanRequest& r) { return adapter.ValidatePlan(r); },
      [&adapter](const moetune::v1::SubmitPlanRequest& r, const ms::ProgressFn& progress) {
        return adapter.Plan(r, progress);
      },
      absl::GetFlag(FLAGS_job_workers));
  if (auto st = jobs->Recover(); !st.ok()) return Fail(st.ToString());

  ms::AgentServiceImpl agent_service(&registry, &scheduler, &rendezvous, {});
  ms::PlannerServiceImpl planner_service(
      store->get(), &registry, &scheduler, jobs.get(),
      [&adapter](const moetune::v1::PredictRequest& r) { return adapter.Predict(r); },
      [&adapter](const std::string& cluster) { return adapter.CalibrationSummary(cluster); },
      [&adapter](const std::string& cluster) { return adapter.Stragglers(cluster); });

  // Authentication, TLS and limits (server/security.h): the services are
  // registered behind their guards.
  auto security = ms::ServingSecurity::Create(ms::SecurityConfigFromFlags(absl::GetFlag(FLAGS_listen)));
  if (!security.ok()) return Fail(security.status().ToString());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), (*security)->credentials(), &port);
  builder.RegisterService((*security)->Agent(&agent_service));
  builder.RegisterService((*security)->Planner(&planner_service, [&jobs](const std::string& id) {
    absl::StatusOr<moetune::v1::Job> job = jobs->Get(id);
    return !job.ok() || ms::JobRunner::Finished(*job);
  }));
  // Agent reports block their handler thread until the group commit holding
  // them is durable (server/result_writer.h), so hundreds may be in flight.
  // gRPC's sync server ends a thread that finishes a call while more than
  // MAX_POLLERS (default 2) are polling, and starts another when none is
  // left: one thread created and destroyed per report under load (clone,
  // stack faults and munmap were ~15% of the server's CPU at 1,024 agents).
  // A high MAX_POLLERS keeps finished threads polling; pollers beyond
  // MIN_POLLERS still exit after CQ_TIMEOUT_MSEC idle, so the pool follows
  // the load.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              absl::GetFlag(FLAGS_rpc_threads));
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 1000);
  builder.SetMaxReceiveMessageSize((*security)->limits().max_message_bytes);
  builder.SetMaxSendMessageSize(256 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return Fail(absl::StrCat("cannot listen on ", absl::GetFlag(FLAGS_listen)));

  // The start-up line goes out in one write, before the port file appears:
  // whoever waits on the port file (scripts, tests) then finds the whole line
  // in the log. std::cerr is unbuffered and would write it piece by piece.
  std::cerr << absl::StrCat("moetune-server: serving on port ", port, " (", absl::GetFlag(FLAGS_listen),
                            "), db ", absl::GetFlag(FLAGS_db), ", epoch ", epoch, "; ",
                            (*security)->Describe(), "\n")
            << std::flush;
  if (const std::string pf = absl::GetFlag(FLAGS_port_file); !pf.empty()) {
    const std::string tmp = pf + ".tmp";
    { std::ofstream(tmp) << port << "\n"; }
    std::rename(tmp.c_str(), pf.c_str());
  }

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  // Liveness: lost agents' attempts are abandoned and their tasks reassigned.
  const absl::Duration sweep =
      std::max(absl::Milliseconds(50), absl::Milliseconds(absl::GetFlag(FLAGS_agent_timeout_ms)) / 4);
  while (!g_stop.load()) {
    absl::SleepFor(std::min(sweep, absl::Milliseconds(200)));
    std::vector<std::string> lost = registry.ExpireLost();
    if (!lost.empty()) {
      for (const auto& id : lost) std::cerr << "moetune-server: agent " << id << " lost" << std::endl;
      scheduler.AgentsLost(lost);
    }
  }
  std::cerr << "moetune-server: stopping" << std::endl;
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  const ms::ResultWriter::Stats commits = scheduler.WriterStats();
  std::cerr << "moetune-server: group commit: " << commits.writes << " results in "
            << commits.transactions << " transactions ("
            << (commits.transactions > 0 ? static_cast<double>(commits.writes) / commits.transactions : 0)
            << " per transaction, largest " << commits.largest_batch << ", "
            << commits.failed_transactions << " failed)" << std::endl;
  // Plan jobs still running are re-run after the next start (JobRunner::Recover).
  std::_Exit(0);
}
