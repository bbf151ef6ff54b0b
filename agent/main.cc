// moetune-agent: the node daemon. See agent/agent.h for the control loop.
//
//   moetune-agent --server HOST:PORT --cluster NAME [--node NAME]
//                 [--backend auto|cuda|cpu] [--spool PATH]
#include <csignal>
#include <iostream>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "agent/agent.h"
#include "agent/discovery.h"
#include "agent/spool.h"
#include "kernels/cuda/cuda_probes.h"
#include "kernels/probes.h"
#include "security/client_flags.h"

ABSL_FLAG(std::string, server, "", "planner server, HOST:PORT");
ABSL_FLAG(std::string, cluster, "", "cluster label this node belongs to");
ABSL_FLAG(std::string, node, "", "node name (default: the host name)");
ABSL_FLAG(std::string, backend, "auto", "probe backend: auto, cuda or cpu");
ABSL_FLAG(std::string, spool, "",
          "file keeping results until the server acknowledges them "
          "(default: ./moetune-agent-<node>.spool); results the server refuses for good "
          "(malformed, over a per-message limit) go to <spool>.dead, one JSON line each "
          "with the reason");
ABSL_FLAG(std::string, ack_log, "", "append each acknowledged result id to this file (audit)");
ABSL_FLAG(int32_t, rpc_timeout_ms, 10000, "deadline of each RPC");
ABSL_FLAG(int32_t, pull_wait_ms, 5000, "long-poll bound when asking for tasks");
ABSL_FLAG(int32_t, max_backoff_ms, 10000, "longest wait between reconnection attempts");
ABSL_FLAG(std::string, probe_bind_address, "",
          "address multi-rank CPU probes (Gloo) listen on; peers on other nodes must reach "
          "it (default: 127.0.0.1 for a loopback server, else this host's first non-loopback "
          "IPv4 address)");

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

constexpr char kAgentVersion[] = "moetune-agent/0.1";

int Fail(const std::string& msg, int code) {
  std::cerr << "moetune-agent: " << msg << std::endl;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "moetune-agent --server HOST:PORT --cluster NAME [--node NAME] [--backend auto|cuda|cpu]");
  absl::ParseCommandLine(argc, argv);
  const std::string server = absl::GetFlag(FLAGS_server);
  if (server.empty()) return Fail("--server HOST:PORT is required", 2);
  if (absl::GetFlag(FLAGS_cluster).empty()) return Fail("--cluster NAME is required", 2);

  moetune::agent::DiscoveryOptions d;
  d.node = absl::GetFlag(FLAGS_node);
  d.cluster = absl::GetFlag(FLAGS_cluster);
  d.backend = absl::GetFlag(FLAGS_backend);
  d.agent_version = kAgentVersion;
  auto info = moetune::agent::Discover(
      d, []() -> absl::StatusOr<std::vector<moetune::agent::GpuDescription>> {
        std::vector<moetune::kernels::cuda::CudaDeviceDescription> found;
        moetune::kernels::ProbeStatus s = moetune::kernels::cuda::CudaDescribeDevices(&found);
        if (!s.ok()) return moetune::kernels::ToAbslStatus(s);
        std::vector<moetune::agent::GpuDescription> out;
        for (const auto& g : found) {
          out.push_back({g.index, g.name, g.uuid, g.pci_bus_id, g.compute_capability,
                         g.memory_bytes});
        }
        return out;
      });
  if (!info.ok()) return Fail(info.status().ToString(), 2);

  std::string spool_path = absl::GetFlag(FLAGS_spool);
  if (spool_path.empty()) spool_path = absl::StrCat("moetune-agent-", info->node(), ".spool");
  auto spool = moetune::agent::ResultSpool::Open(spool_path);
  if (!spool.ok()) return Fail(spool.status().ToString(), 1);

  moetune::agent::AgentOptions options;
  options.info = *info;
  options.backend = info->backend() == moetune::v1::BACKEND_CUDA ? moetune::kernels::Backend::kCuda
                                                                 : moetune::kernels::Backend::kCpu;
  options.rpc_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_rpc_timeout_ms));
  options.pull_wait = absl::Milliseconds(absl::GetFlag(FLAGS_pull_wait_ms));
  options.max_backoff = absl::Milliseconds(absl::GetFlag(FLAGS_max_backoff_ms));
  options.ack_log_path = absl::GetFlag(FLAGS_ack_log);
  options.probe_bind_address = absl::GetFlag(FLAGS_probe_bind_address);
  if (options.probe_bind_address.empty()) {
    options.probe_bind_address = moetune::agent::DefaultProbeBindAddress(server);
  }

  grpc::ChannelArguments args;
  // Reconnect quickly after a server restart (gRPC's own backoff caps at 2 min).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, absl::GetFlag(FLAGS_max_backoff_ms));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS stays at gRPC's default (20 s): gRPC
  // also uses it as the shortest time a connection attempt (TCP + TLS
  // handshake) may take. Set to 100 ms it made every attempt whose handshake
  // took longer fail forever ("tcp handshaker shutdown"; found under TSan).
  // --token_file, --tls_ca, --tls_cert, --tls_key (security/client_flags.h).
  auto channel = moetune::security::MakeChannel(
      server, moetune::security::ClientSecurityFromFlags(), args);
  if (!channel.ok()) return Fail(channel.status().ToString(), 2);
  std::shared_ptr<moetune::v1::AgentService::StubInterface> stub =
      moetune::v1::AgentService::NewStub(*channel);

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::cerr << "moetune-agent: node " << info->node() << " cluster " << info->cluster()
            << " backend " << moetune::kernels::BackendName(options.backend) << " ("
            << info->devices_size() << " device(s)), server " << server << ", spool "
            << spool_path << std::endl;
  moetune::agent::Agent agent(options, stub, std::move(*spool),
                              [](const moetune::kernels::ProbeRequest& r) {
                                return moetune::kernels::RunProbe(r);
                              });
  agent.Run(&g_stop);
  return 0;
}
