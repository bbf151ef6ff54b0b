// Node discovery: what the agent tells the server about its node.
// CUDA devices are counted through kernels/ (the only code here that touches
// a GPU); host facts come from /proc. Backend "auto" picks cuda when at least
// one device is usable, else cpu.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/common.pb.h"

namespace moetune::agent {

struct DiscoveryOptions {
  std::string node;      // empty: the host name
  std::string cluster;
  std::string backend = "auto";  // auto | cuda | cpu
  std::string agent_version;
};

// Usable CUDA devices (Unavailable/Unimplemented when none can be used).
using CudaDeviceCountFn = std::function<absl::StatusOr<int>()>;

// InvalidArgument for an unknown backend name; FailedPrecondition when cuda is
// asked for and no device is usable (with the kernels' reason).
absl::StatusOr<moetune::v1::AgentInfo> Discover(const DiscoveryOptions& options,
                                                const CudaDeviceCountFn& cuda_device_count);

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
