// Node discovery: what the agent tells the server about its node.
// CUDA devices are described through kernels/ (the only code here that
// touches a GPU); host facts come from /proc. Backend "auto" picks cuda when at least
// one device is usable, else cpu.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/common.pb.h"

namespace moetune::agent {

struct DiscoveryOptions {
  std::string node;      // empty: the host name
  std::string cluster;
  std::string backend = "auto";  // auto | cuda | cpu
  std::string agent_version;
};

// One CUDA device as kernels/ describes it (kernels::cuda::CudaDescribeDevices).
struct GpuDescription {
  int index = 0;
  std::string name;                // "NVIDIA H200"
  std::string uuid;                // "GPU-..."
  std::string pci_bus_id;          // "0000:18:00.0"
  std::string compute_capability;  // "9.0"
  int64_t memory_bytes = 0;
};
// Usable CUDA devices (Unavailable/Unimplemented when none can be used).
using CudaDevicesFn = std::function<absl::StatusOr<std::vector<GpuDescription>>()>;

// InvalidArgument for an unknown backend name; FailedPrecondition when cuda is
// asked for and no device is usable (with the kernels' reason).
absl::StatusOr<moetune::v1::AgentInfo> Discover(const DiscoveryOptions& options,
                                                const CudaDevicesFn& cuda_devices);

// The address multi-rank CPU probes should listen on when --probe_bind_address
// is not given: 127.0.0.1 when the server is on loopback (single host), else
// the first non-loopback IPv4 address of this host's interfaces (or
// 127.0.0.1 if there is none).
std::string DefaultProbeBindAddress(const std::string& server_address);

// Host facts, for tests and the CPU device entry.
std::string CpuModelName();   // /proc/cpuinfo "model name", or "cpu"
uint64_t HostMemoryBytes();   // /proc/meminfo MemTotal, or 0
std::string KernelRelease();  // uname -r

}  // namespace moetune::agent
