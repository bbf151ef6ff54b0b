// Entry point of the CUDA backend: device check, memory budget, provenance,
// dispatch to the probe implementations.

#include <cstdio>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_probes.h"
#include "kernels/cuda/cuda_probes_internal.h"

namespace moetune::kernels::cuda {

ProbeStatus CudaDeviceCount(int* count) {
  *count = 0;
  const cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    *count = 0;
    // Without any NVIDIA driver (a machine with no GPU) the runtime reports
    // an "insufficient" driver; say what that usually means.
    const char* hint = e == cudaErrorInsufficientDriver
                           ? "; no NVIDIA driver is loaded (no GPU on this machine?) or it is older than this "
                             "CUDA runtime"
                           : "";
    return Unavailable(std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (" +
                       cudaGetErrorName(e) + ")" + hint);
  }
  if (*count == 0) return Unavailable("no CUDA device: cudaGetDeviceCount returned 0 devices");
  return ProbeStatus::Ok();
}

int DeviceForRank(const GroupSpec& group, int device_count) {
  if (group.device_ordinal >= 0) return group.device_ordinal;
  return device_count > 0 ? group.rank % device_count : 0;
}

namespace {

std::string UuidString(const cudaUUID_t& id) {
  char uuid[64];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(id.bytes);
  std::snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return uuid;
}

}  // namespace

ProbeStatus CudaDescribeDevices(std::vector<CudaDeviceDescription>* devices) {
  devices->clear();
  int count = 0;
  MOETUNE_PROBE_RETURN_IF_ERROR(CudaDeviceCount(&count));
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    MOETUNE_CUDA(cudaGetDeviceProperties(&prop, i));
    CudaDeviceDescription d;
    d.index = i;
    d.name = prop.name;
    d.uuid = UuidString(prop.uuid);
    char bus[32];
    std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    d.pci_bus_id = bus;
    d.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.multiprocessors = prop.multiProcessorCount;
    devices->push_back(d);
  }
  return ProbeStatus::Ok();
}

ProbeStatus DeviceProvenance(int device, Provenance* p) {
  cudaDeviceProp prop;
  MOETUNE_CUDA(cudaGetDeviceProperties(&prop, device));
  p->device_name = prop.name;
  p->device_uuid = UuidString(prop.uuid);
  p->compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  int driver = 0, runtime = 0;
  MOETUNE_CUDA(cudaDriverGetVersion(&driver));
  MOETUNE_CUDA(cudaRuntimeGetVersion(&runtime));
  p->driver_version = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  p->cuda_runtime_version = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  int major = 0, minor = 0, patch = 0;
  MOETUNE_CUBLAS(cublasGetProperty(MAJOR_VERSION, &major));
  MOETUNE_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
  MOETUNE_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
  p->cublas_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
                      " (cuBLASLt " + std::to_string(cublasLtGetVersion()) + ")";
  int nccl = 0;
  MOETUNE_NCCL(ncclGetVersion(&nccl));
  p->nccl_version = std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
                    std::to_string(nccl % 100);
  p->env = EnvWithPrefixes({"NCCL_", "CUDA_", "CUBLAS_", "CUBLASLT_"});
  return ProbeStatus::Ok();
}

ProbeStatus RunCudaProbe(const ProbeParams& params, const GroupSpec& group, ProbeResult* result) {
  int count = 0;
  MOETUNE_PROBE_RETURN_IF_ERROR(CudaDeviceCount(&count));
  const int device = DeviceForRank(group, count);
  if (device >= count) {
    return InvalidArgument("device_ordinal (" + std::to_string(device) + ") >= device count (" +
                           std::to_string(count) + ")");
  }
  MOETUNE_CUDA(cudaSetDevice(device));
  int64_t budget = TimingOf(params).memory_budget_bytes;
  if (budget == 0) {
    size_t free_bytes = 0, total_bytes = 0;
    MOETUNE_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    budget = static_cast<int64_t>(free_bytes * 0.9);
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(Validate(params, budget));
  *result = ProbeResult();
  result->kind = KindOf(params);
  result->params_json = ParamsToJson(params);
  Provenance& prov = result->provenance;
  prov.start_time_utc = NowUtcRfc3339();
  prov.host = HostName();
  prov.backend = "cuda";
  prov.compute_dtype = "see measurement labels";
  prov.rank = group.rank;
  prov.world_size = group.world_size;
  prov.ranks_per_node = group.ranks_per_node;
  prov.local_rank = device;
  MOETUNE_PROBE_RETURN_IF_ERROR(DeviceProvenance(device, &prov));
  ProbeStatus s;
  if (const auto* p = std::get_if<GroupedGemmParams>(&params)) {
    s = RunGroupedGemm(*p, device, result);
  } else if (const auto* p = std::get_if<DispatchCombineParams>(&params)) {
    s = RunDispatchCombine(*p, group, result);
  } else if (const auto* p = std::get_if<CollectiveParams>(&params)) {
    s = RunCollectives(*p, group, result);
  } else if (const auto* p = std::get_if<OffloadParams>(&params)) {
    s = RunOffload(*p, device, result);
  } else if (const auto* p = std::get_if<OverlapParams>(&params)) {
    s = RunOverlap(*p, group, result);
  }
  prov.end_time_utc = NowUtcRfc3339();
  return s;
}

}  // namespace moetune::kernels::cuda
