#include "agent/discovery.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace moetune::agent {
namespace {
namespace v1 = ::moetune::v1;

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// "key : value" line of a /proc file.
std::string ProcValue(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return "";
}

}  // namespace

std::string CpuModelName() {
  std::string name = ProcValue("/proc/cpuinfo", "model name");
  return name.empty() ? "cpu" : name;
}

uint64_t HostMemoryBytes() {
  std::string v = ProcValue("/proc/meminfo", "MemTotal");  // "24576000 kB"
  uint64_t kb = 0;
  if (!absl::SimpleAtoi(absl::StripSuffix(v, " kB"), &kb)) return 0;
  return kb * 1024;
}

std::string DefaultProbeBindAddress(const std::string& server) {
  const std::string host = server.substr(0, server.rfind(':'));
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]") return "127.0.0.1";
  std::string found = "127.0.0.1";
  struct ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return found;
  for (struct ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {0};
    const auto* sin = reinterpret_cast<const struct sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) == nullptr) continue;
    if (std::string(buf).rfind("127.", 0) == 0) continue;
    found = buf;
    break;
  }
  freeifaddrs(ifs);
  return found;
}

std::string KernelRelease() {
  struct utsname u;
  if (uname(&u) != 0) return "";
  return u.release;
}

absl::StatusOr<v1::AgentInfo> Discover(const DiscoveryOptions& options,
                                       const CudaDevicesFn& cuda_devices) {
  if (options.backend != "auto" && options.backend != "cuda" && options.backend != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend must be auto, cuda or cpu, got '", options.backend, "'"));
  }
  v1::AgentInfo info;
  info.set_node(options.node.empty() ? HostName() : options.node);
  info.set_cluster(options.cluster);
  v1::NodeTopology* topo = info.mutable_topology();
  topo->set_cpu_cores(static_cast<int32_t>(std::thread::hardware_concurrency()));
  topo->set_host_memory_bytes(HostMemoryBytes());
  info.mutable_versions()->set_agent(options.agent_version);
  info.mutable_versions()->set_driver(KernelRelease());

  std::vector<GpuDescription> gpus;
  std::string cuda_reason;
  if (options.backend != "cpu") {
    absl::StatusOr<std::vector<GpuDescription>> found = cuda_devices();
    if (found.ok()) {
      gpus = std::move(*found);
    } else {
      cuda_reason = std::string(found.status().message());
    }
    if (options.backend == "cuda" && gpus.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--backend cuda but no usable CUDA device: ",
          cuda_reason.empty() ? "device count is 0" : cuda_reason));
    }
  }
  if (!gpus.empty()) {
    info.set_backend(v1::BACKEND_CUDA);
    for (const GpuDescription& g : gpus) {
      v1::DeviceInfo* d = info.add_devices();
      d->set_index(g.index);
      d->set_name(g.name);
      d->set_uuid(g.uuid);
      d->set_pci_bus_id(g.pci_bus_id);
      d->set_compute_capability(g.compute_capability);
      d->set_memory_bytes(static_cast<uint64_t>(std::max<int64_t>(0, g.memory_bytes)));
    }
  } else {
    info.set_backend(v1::BACKEND_CPU);
    v1::DeviceInfo* d = info.add_devices();
    d->set_index(0);
    d->set_name(CpuModelName());
    d->set_memory_bytes(HostMemoryBytes());
  }
  return info;
}

}  // namespace moetune::agent
