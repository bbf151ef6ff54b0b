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

// Host facts, for tests and the CPU device entry.
std::string CpuModelName();   // /proc/cpuinfo "model name", or "cpu"
uint64_t HostMemoryBytes();   // /proc/meminfo MemTotal, or 0
std::string KernelRelease();  // uname -r

}  // namespace moetune::agent
