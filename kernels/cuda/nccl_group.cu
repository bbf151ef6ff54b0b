#include "kernels/cuda/nccl_group.h"

#include <cstring>

#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/rendezvous.h"

namespace moetune::kernels::cuda {

ProbeStatus NcclType(DType dtype, ncclDataType_t* type, size_t* bytes) {
  switch (dtype) {
    case DType::kFp32: *type = ncclFloat32; *bytes = 4; return ProbeStatus::Ok();
    case DType::kBf16: *type = ncclBfloat16; *bytes = 2; return ProbeStatus::Ok();
    case DType::kFp16: *type = ncclFloat16; *bytes = 2; return ProbeStatus::Ok();
    default:
      return Unimplemented(std::string("nccl: dtype ") + DTypeName(dtype) + " is not supported");
  }
}

ProbeStatus NcclGroup::Create(const GroupSpec& group, std::unique_ptr<NcclGroup>* out) {
  std::unique_ptr<NcclGroup> g(new NcclGroup());
  g->world_ = group.world_size;
  int count = 0;
  MOETUNE_CUDA(cudaGetDeviceCount(&count));
  if (group.store == nullptr) {
    if (group.world_size > count) {
      return Unavailable("nccl: a " + std::to_string(group.world_size) + "-rank group in one process needs " +
                         std::to_string(group.world_size) + " GPUs, found " + std::to_string(count) +
                         " (NCCL rejects two ranks on one GPU)");
    }
    std::vector<int> devices(group.world_size);
    std::vector<ncclComm_t> comms(group.world_size);
    for (int r = 0; r < group.world_size; ++r) devices[r] = r;
    MOETUNE_NCCL(ncclCommInitAll(comms.data(), group.world_size, devices.data()));
    for (int r = 0; r < group.world_size; ++r) {
      auto lr = std::make_unique<LocalRank>();
      lr->rank = r;
      lr->device = r;
      lr->comm = comms[r];
      g->ranks_.push_back(std::move(lr));
    }
  } else {
    ncclUniqueId id;
    const std::string key = group.key_prefix + "/nccl_unique_id";
    if (group.rank == 0) {
      MOETUNE_NCCL(ncclGetUniqueId(&id));
      std::vector<char> bytes(sizeof(id));
      std::memcpy(bytes.data(), &id, sizeof(id));
      MOETUNE_PROBE_RETURN_IF_ERROR(group.store->Set(key, bytes));
    } else {
      std::vector<char> bytes;
      MOETUNE_PROBE_RETURN_IF_ERROR(group.store->Get(key, group.timeout, &bytes));
      if (bytes.size() != sizeof(id)) {
        return Internal("nccl: unique id under '" + key + "' has " + std::to_string(bytes.size()) +
                        " bytes, expected " + std::to_string(sizeof(id)));
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
    auto lr = std::make_unique<LocalRank>();
    lr->rank = group.rank;
    lr->device = DeviceForRank(group, count);
    MOETUNE_CUDA(cudaSetDevice(lr->device));
    MOETUNE_NCCL(ncclCommInitRank(&lr->comm, group.world_size, id, group.rank));
    g->ranks_.push_back(std::move(lr));
  }
  for (auto& lr : g->ranks_) {
    MOETUNE_CUDA(cudaSetDevice(lr->device));
    MOETUNE_PROBE_RETURN_IF_ERROR(lr->stream.Create());
    MOETUNE_PROBE_RETURN_IF_ERROR(lr->compute.Create());
    MOETUNE_PROBE_RETURN_IF_ERROR(lr->sync.Create(sizeof(float)));
    // The barrier all-reduces this float; give it a defined value.
    MOETUNE_CUDA(cudaMemset(lr->sync.get(), 0, sizeof(float)));
    MOETUNE_CUDA(cudaDeviceSynchronize());
  }
  *out = std::move(g);
  return ProbeStatus::Ok();
}

NcclGroup::~NcclGroup() {
  // Let every rank's queued work finish, then destroy the communicators one
  // after another from this thread, as nccl-tests does for the communicators
  // of ncclCommInitAll (NCCL reclaims the shared intra-process resources when
  // the last of them is destroyed). Streams and buffers are released by
  // ~LocalRank under their own device (cuda_check.h).
  for (auto& lr : ranks_) {
    ScopedDevice on(lr->device);
    if (lr->stream.get() != nullptr) cudaStreamSynchronize(lr->stream.get());
    if (lr->compute.get() != nullptr) cudaStreamSynchronize(lr->compute.get());
  }
  for (auto& lr : ranks_) {
    ScopedDevice on(lr->device);
    if (lr->comm != nullptr) ncclCommDestroy(lr->comm);
    lr->comm = nullptr;
  }
}

ProbeStatus NcclGroup::Barrier() {
  NcclGroupCall call;
  MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
  for (auto& lr : ranks_) {
    MOETUNE_NCCL(ncclAllReduce(lr->sync.get(), lr->sync.get(), 1, ncclFloat32, ncclSum, lr->comm,
                               lr->stream.get()));
  }
  return call.End();
}

}  // namespace moetune::kernels::cuda
