// CUDA probes (cuBLASLt, cuBLAS grouped GEMM, NCCL). Std-only interface so that
// it builds with a plain nvcc command line (tools/gpu_check.sh).
//
// Multi-rank probes: with group.store == nullptr one process drives
// group.world_size local GPUs (ncclCommInitAll, one thread, grouped calls);
// with a store, this process is group.rank and uses one GPU
// (group.device_ordinal, or rank % device count), the NCCL unique id travelling
// through the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cuda {

// Unavailable "no CUDA device: cudaGetDeviceCount: ..." without a usable GPU;
// Unimplemented when built without the CUDA toolkit.
ProbeStatus RunCudaProbe(const ProbeParams& params, const GroupSpec& group, ProbeResult* result);

// Number of usable devices, or Unavailable naming the failing call.
ProbeStatus CudaDeviceCount(int* count);

// What the agent reports at registration, one entry per visible device.
struct CudaDeviceDescription {
  int index = 0;
  std::string name;                // "NVIDIA H200"
  std::string uuid;                // "GPU-xxxxxxxx-xxxx-..."
  std::string pci_bus_id;          // "0000:18:00.0"
  std::string compute_capability;  // "9.0"
  int64_t memory_bytes = 0;
  int multiprocessors = 0;
};
// Unavailable without a device, Unimplemented when built without CUDA.
ProbeStatus CudaDescribeDevices(std::vector<CudaDeviceDescription>* devices);

}  // namespace moetune::kernels::cuda
