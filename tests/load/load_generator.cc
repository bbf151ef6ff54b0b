// Load generator: one real moetune-server (started here as a child process,
// SQLite file in a temporary directory) and N agent connections on loopback,
// each on its own gRPC channel (its own TCP connection). Every agent
// registers, heart-beats at the server's interval and reports a probe result
// of M measurements at a steady rate (open loop: calls are issued on
// schedule, not when the previous one returned, so latency is not hidden by
// a slow server). Bounded in agents, time and calls in flight.
//
// Reports ingest (results/s and measurements/s acknowledged), p50/p99/max
// latency of ReportResult and Heartbeat, the server's resident memory
// (VmRSS now, VmHWM peak), the live agents the server counts, and lost
// results: acknowledged minus found in the store afterwards (the server is
// stopped and its SQLite file opened directly). Exits 1 when a result was
// lost, an RPC failed or an agent was not held.
//
//   bazel run //tests/load:load_generator -- --agents=1024 --seconds=30
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "proto/agent_service.grpc.pb.h"
#include "proto/planner_service.grpc.pb.h"
#include "server/sqlite_store.h"
#include "tests/internal/process.h"

ABSL_FLAG(int32_t, agents, 1024, "agent connections (at most 4096)");
ABSL_FLAG(double, seconds, 20, "length of the steady phase (at most 600)");
ABSL_FLAG(double, reports_per_sec, 1.0, "results each agent reports per second");
ABSL_FLAG(int32_t, measurements, 20, "measurements per result");
ABSL_FLAG(int32_t, samples, 10, "samples per measurement");
ABSL_FLAG(int32_t, heartbeat_ms, 2000, "heartbeat interval the server asks for");
ABSL_FLAG(int32_t, max_in_flight, 8192, "calls in flight at most (the rest wait)");
ABSL_FLAG(std::string, server_binary, "", "moetune-server (default: from runfiles)");
ABSL_FLAG(std::string, dir, "", "directory for the database and logs (default: a temp dir)");
ABSL_FLAG(std::string, server_flags, "", "extra flags for the server, space separated");

namespace {

namespace v1 = ::moetune::v1;
using moetune::testing::Process;
using moetune::testing::ReadFile;
using moetune::testing::WaitFor;

int64_t ProcStatusKb(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  }
  return -1;
}

class Latencies {
 public:
  void Add(absl::Duration d) {
    absl::MutexLock l(&mu_);
    us_.push_back(absl::ToDoubleMicroseconds(d));
  }
  std::string Summary() {
    absl::MutexLock l(&mu_);
    if (us_.empty()) return "no calls";
    std::sort(us_.begin(), us_.end());
    auto q = [&](double p) { return us_[std::min(us_.size() - 1, static_cast<size_t>(p * us_.size()))] / 1000; };
    return absl::StrFormat("%d calls, p50 %.2f ms, p99 %.2f ms, max %.2f ms", us_.size(), q(0.5),
                           q(0.99), us_.back() / 1000);
  }
  double P99Ms() {
    absl::MutexLock l(&mu_);
    if (us_.empty()) return 0;
    std::sort(us_.begin(), us_.end());
    return us_[std::min(us_.size() - 1, static_cast<size_t>(0.99 * us_.size()))] / 1000;
  }

 private:
  absl::Mutex mu_;
  std::vector<double> us_;
};

struct Agent {
  std::unique_ptr<v1::AgentService::Stub> stub;
  std::string agent_id, session_id;
  absl::Time next_report, next_heartbeat;
  int64_t reports = 0;
};

struct Totals {
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> acked{0};
  std::atomic<int64_t> duplicates{0};
  std::atomic<int64_t> failed{0};
  absl::Mutex mu;
  std::map<std::string, int> errors ABSL_GUARDED_BY(mu);
  void Error(const grpc::Status& s) {
    ++failed;
    absl::MutexLock l(&mu);
    errors[absl::StrCat(s.error_code(), " ", s.error_message().substr(0, 80))]++;
  }
};

v1::ProbeResult MakeResult(const std::string& agent_id, int64_t n, int measurements, int samples) {
  v1::ProbeResult r;
  r.set_result_id(absl::StrCat(agent_id, "/load-", n));
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  r.set_params_json(R"({"experts":8,"tokens":4096,"hidden":7168})");
  for (int i = 0; i < measurements; ++i) {
    v1::Measurement* m = r.add_measurements();
    m->set_name(absl::StrCat("grouped_gemm_", i));
    (*m->mutable_labels())["dtype"] = "bf16";
    for (int j = 0; j < samples; ++j) m->add_samples_seconds(1e-3 * (1 + 0.01 * j));
    m->set_min_seconds(1e-3);
    m->set_median_seconds(1.05e-3);
    m->set_max_seconds(1.1e-3);
    m->set_flops(2e12);
    m->set_bytes(1e9);
  }
  r.mutable_provenance()->set_schema_version(1);
  r.mutable_provenance()->set_host("load");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n_agents = std::clamp(absl::GetFlag(FLAGS_agents), 1, 4096);
  const absl::Duration steady = absl::Seconds(std::clamp(absl::GetFlag(FLAGS_seconds), 1.0, 600.0));
  const double rate = std::clamp(absl::GetFlag(FLAGS_reports_per_sec), 0.01, 100.0);
  const int measurements = std::clamp(absl::GetFlag(FLAGS_measurements), 1, 1000);
  const int samples = std::clamp(absl::GetFlag(FLAGS_samples), 1, 1000);
  const int max_in_flight = std::max(1, absl::GetFlag(FLAGS_max_in_flight));

  // Two sockets per agent (ours and the server's), both processes inherit this.
  rlimit fds;
  getrlimit(RLIMIT_NOFILE, &fds);
  fds.rlim_cur = fds.rlim_max;
  setrlimit(RLIMIT_NOFILE, &fds);

  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    char tmpl[] = "/tmp/moetune-load-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  const std::string db = dir + "/load.db", port_file = dir + "/port";
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
  std::remove(port_file.c_str());
  std::string server_bin = absl::GetFlag(FLAGS_server_binary);
  if (server_bin.empty()) server_bin = moetune::testing::Runfile("server/moetune-server");
  std::vector<std::string> server_argv = {server_bin, "--listen=127.0.0.1:0", "--db=" + db,
                                          "--port_file=" + port_file,
                                          absl::StrCat("--heartbeat_ms=", absl::GetFlag(FLAGS_heartbeat_ms)),
                                          "--agent_timeout_ms=60000"};
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_server_flags), ' ', absl::SkipEmpty())) {
    server_argv.emplace_back(f);
  }
  Process server(server_argv, dir + "/server.log");
  if (!WaitFor([&] { return !ReadFile(port_file).empty(); }, absl::Seconds(30))) {
    std::cerr << "server did not start:\n" << ReadFile(dir + "/server.log");
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", std::stoi(ReadFile(port_file)));
  std::cerr << "load: server " << address << " (pid " << server.pid() << "), db " << db << "\n";
  const int64_t rss_idle_kb = ProcStatusKb(server.pid(), "VmRSS");

  // Connect and register every agent (own channel = own TCP connection).
  std::vector<Agent> agents(n_agents);
  Totals totals;
  Latencies register_lat, report_lat, heartbeat_lat;
  const absl::Time t_connect = absl::Now();
  {
    std::atomic<int> registered{0};
    for (int i = 0; i < n_agents; ++i) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("load.agent", i);  // distinct arguments: never a shared channel
      agents[i].stub = v1::AgentService::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    }
    for (int i = 0; i < n_agents; ++i) {
      while (totals.in_flight.load() >= max_in_flight) absl::SleepFor(absl::Milliseconds(1));
      struct Call {
        grpc::ClientContext ctx;
        v1::RegisterRequest req;
        v1::RegisterResponse resp;
        absl::Time start = absl::Now();
      };
      auto* c = new Call;
      c->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      c->req.mutable_agent()->set_node(absl::StrFormat("load%04d", i));
      c->req.mutable_agent()->set_cluster("load");
      c->req.mutable_agent()->add_devices()->set_name("cpu");
      ++totals.in_flight;
      agents[i].stub->async()->Register(&c->ctx, &c->req, &c->resp, [&, c, i](grpc::Status s) {
        register_lat.Add(absl::Now() - c->start);
        if (s.ok()) {
          agents[i].agent_id = c->resp.agent_id();
          agents[i].session_id = c->resp.session_id();
          ++registered;
        } else {
          totals.Error(s);
        }
        delete c;
        --totals.in_flight;
      });
    }
    WaitFor([&] { return totals.in_flight.load() == 0; }, absl::Seconds(60));
    std::cerr << "load: " << registered.load() << "/" << n_agents << " agents registered in "
              << absl::FormatDuration(absl::Now() - t_connect) << " (" << register_lat.Summary()
              << ")\n";
  }

  // Steady phase: open-loop reports and heartbeats, spread evenly.
  const absl::Duration report_every = absl::Seconds(1 / rate);
  const absl::Duration hb_every = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_ms));
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < n_agents; ++i) {
    agents[i].next_report = t0 + report_every * (static_cast<double>(i) / n_agents);
    agents[i].next_heartbeat = t0 + hb_every * (static_cast<double>(i) / n_agents);
  }
  std::atomic<int64_t> issued{0}, delayed{0};
  while (absl::Now() - t0 < steady) {
    const absl::Time now = absl::Now();
    for (Agent& a : agents) {
      if (a.session_id.empty()) continue;
      if (now >= a.next_report) {
        if (totals.in_flight.load() >= max_in_flight) {
          ++delayed;
          continue;
        }
        a.next_report += report_every;
        struct Call {
          grpc::ClientContext ctx;
          v1::ReportResultRequest req;
          v1::ReportResultResponse resp;
          absl::Time start = absl::Now();
        };
        auto* c = new Call;
        c->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
        c->req.set_agent_id(a.agent_id);
        c->req.set_session_id(a.session_id);
        *c->req.mutable_result() = MakeResult(a.agent_id, ++a.reports, measurements, samples);
        ++totals.in_flight;
        ++issued;
        a.stub->async()->ReportResult(&c->ctx, &c->req, &c->resp, [&, c](grpc::Status s) {
          report_lat.Add(absl::Now() - c->start);
          if (s.ok()) {
            ++totals.acked;
            if (c->resp.duplicate()) ++totals.duplicates;
          } else {
            totals.Error(s);
          }
          delete c;
          --totals.in_flight;
        });
      }
      if (now >= a.next_heartbeat) {
        a.next_heartbeat += hb_every;
        struct Call {
          grpc::ClientContext ctx;
          v1::HeartbeatRequest req;
          v1::HeartbeatResponse resp;
          absl::Time start = absl::Now();
        };
        auto* c = new Call;
        c->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
        c->req.set_agent_id(a.agent_id);
        c->req.set_session_id(a.session_id);
        ++totals.in_flight;
        a.stub->async()->Heartbeat(&c->ctx, &c->req, &c->resp, [&, c](grpc::Status s) {
          heartbeat_lat.Add(absl::Now() - c->start);
          if (!s.ok()) totals.Error(s);
          delete c;
          --totals.in_flight;
        });
      }
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  const absl::Time t_issue_end = absl::Now();
  const bool drained = WaitFor([&] { return totals.in_flight.load() == 0; }, absl::Seconds(60));
  const absl::Duration elapsed = absl::Now() - t0;
  const int64_t rss_kb = ProcStatusKb(server.pid(), "VmRSS");
  const int64_t hwm_kb = ProcStatusKb(server.pid(), "VmHWM");

  int live = -1;
  {
    auto planner = v1::PlannerService::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    v1::ListAgentsRequest req;
    req.set_cluster("load");
    v1::ListAgentsResponse resp;
    grpc::Status s = planner->ListAgents(&ctx, req, &resp);
    if (s.ok()) {
      live = 0;
      for (const auto& a : resp.agents()) live += a.state() == v1::AGENT_STATE_LIVE;
    } else {
      std::cerr << "load: ListAgents failed: " << s.error_code() << " " << s.error_message() << "\n";
    }
  }
  agents.clear();  // close every connection
  server.Kill(SIGTERM);

  // Count what the store holds.
  int64_t stored = -1;
  {
    auto store = moetune::server::SqliteStore::Open(db);
    if (store.ok()) {
      auto n = (*store)->CountResults({});
      if (n.ok()) stored = *n;
    }
  }
  const int64_t acked = totals.acked.load();
  const int64_t lost = acked - stored;
  const double secs = absl::ToDoubleSeconds(elapsed);
  std::printf("agents: %d connected, %d live at the end (server's count)\n", n_agents, live);
  std::printf("steady phase: %.1f s issuing + drain = %.1f s; %lld reports issued, %lld acknowledged, "
              "%lld failed, %lld delayed by the in-flight bound%s\n",
              absl::ToDoubleSeconds(t_issue_end - t0), secs, static_cast<long long>(issued.load()),
              static_cast<long long>(acked), static_cast<long long>(totals.failed.load()),
              static_cast<long long>(delayed.load()), drained ? "" : " (NOT drained)");
  std::printf("ingest: %.0f results/s, %.0f measurements/s (%d measurements x %d samples each)\n",
              acked / secs, acked * measurements / secs, measurements, samples);
  std::printf("ReportResult: %s\n", report_lat.Summary().c_str());
  std::printf("Heartbeat:    %s\n", heartbeat_lat.Summary().c_str());
  std::printf("server memory: VmRSS %.1f MiB idle, %.1f MiB at the end, VmHWM (peak) %.1f MiB\n",
              rss_idle_kb / 1024.0, rss_kb / 1024.0, hwm_kb / 1024.0);
  std::printf("store: %lld results stored, %lld acknowledged, lost %lld\n",
              static_cast<long long>(stored), static_cast<long long>(acked),
              static_cast<long long>(lost));
  {
    absl::MutexLock l(&totals.mu);
    for (const auto& [what, n] : totals.errors) std::printf("error x%d: %s\n", n, what.c_str());
  }
  const bool ok = lost == 0 && stored >= 0 && totals.failed.load() == 0 && live == n_agents && drained;
  std::printf("%s\n", ok ? "LOAD OK" : "LOAD FAILED");
  return ok ? 0 : 1;
}
