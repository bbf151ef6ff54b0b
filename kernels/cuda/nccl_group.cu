#include "kernels/cuda/nccl_group.h"

#include <chrono>
#include <cstring>
#include <thread>

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

NcclGroup::NcclGroup(const GroupSpec& group)
    : world_(group.world_size), timeout_(group.timeout), agree_(group) {}

ProbeStatus NcclGroup::Create(const GroupSpec& group, std::unique_ptr<NcclGroup>* out) {
  std::unique_ptr<NcclGroup> g(new NcclGroup(group));
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
    ProbeStatus got_id = ProbeStatus::Ok();
    if (group.rank == 0) {
      MOETUNE_NCCL(ncclGetUniqueId(&id));
      std::vector<char> bytes(sizeof(id));
      std::memcpy(bytes.data(), &id, sizeof(id));
      got_id = group.store->Set(key, bytes);
    } else {
      std::vector<char> bytes;
      got_id = group.store->Get(key, group.timeout, &bytes);
      if (got_id.ok() && bytes.size() != sizeof(id)) {
        got_id = Internal("nccl: unique id under '" + key + "' has " + std::to_string(bytes.size()) +
                          " bytes, expected " + std::to_string(sizeof(id)));
      }
      if (got_id.ok()) std::memcpy(&id, bytes.data(), sizeof(id));
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(g->agree_.Agree("nccl_id", got_id));
    auto lr = std::make_unique<LocalRank>();
    lr->rank = group.rank;
    lr->device = DeviceForRank(group, count);
    MOETUNE_CUDA(cudaSetDevice(lr->device));
    // Non-blocking: creation returns at once and Settle() polls it, so a
    // peer that never joins is a timeout or an abort, not a hang inside
    // NCCL's bootstrap.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    g->nonblocking_ = true;
    ProbeStatus init = g->agree_.InjectedFailure("nccl_init");
    if (init.ok()) {
      const ncclResult_t r = ncclCommInitRankConfig(&lr->comm, group.world_size, id, group.rank, &config);
      if (r != ncclSuccess && r != ncclInProgress) init = NcclError(r, "ncclCommInitRankConfig");
    }
    g->ranks_.push_back(std::move(lr));
    if (init.ok()) init = g->Settle();
    MOETUNE_PROBE_RETURN_IF_ERROR(g->EndPhase("nccl_init", init));
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

void NcclGroup::Abort() {
  if (aborted_) return;
  aborted_ = true;
  for (auto& lr : ranks_) {
    ScopedDevice on(lr->device);
    if (lr->comm != nullptr) ncclCommAbort(lr->comm);
    lr->comm = nullptr;
  }
}

NcclGroup::~NcclGroup() {
  if (!finished_) {
    // An early return (a failure here or at a peer): work may be queued
    // behind collectives that will never complete. Abort, never wait.
    Abort();
    return;
  }
  // Finish() has drained the streams. Destroy the communicators one after
  // another from this thread, as nccl-tests does for the communicators of
  // ncclCommInitAll (NCCL reclaims the shared intra-process resources when
  // the last of them is destroyed); a non-blocking one is finalized first.
  // Streams and buffers are released by ~LocalRank under their own device.
  for (auto& lr : ranks_) {
    ScopedDevice on(lr->device);
    if (lr->comm == nullptr) continue;
    if (nonblocking_) {
      ncclCommFinalize(lr->comm);
      const auto deadline = std::chrono::steady_clock::now() + timeout_;
      ncclResult_t state = ncclInProgress;
      while (ncclCommGetAsyncError(lr->comm, &state) == ncclSuccess && state == ncclInProgress &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (state != ncclSuccess) {
        ncclCommAbort(lr->comm);
        lr->comm = nullptr;
        continue;
      }
    }
    ncclCommDestroy(lr->comm);
    lr->comm = nullptr;
  }
}

ProbeStatus NcclGroup::Poll(const std::function<bool(ProbeStatus*)>& done, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  auto next_store_check = start;
  for (int spins = 0;; ++spins) {
    ProbeStatus s;
    if (done(&s)) {
      if (!s.ok()) Abort();
      return s;
    }
    for (auto& lr : ranks_) {  // a communicator's own asynchronous error
      ncclResult_t state = ncclSuccess;
      if (lr->comm != nullptr && ncclCommGetAsyncError(lr->comm, &state) == ncclSuccess && state != ncclSuccess &&
          state != ncclInProgress) {
        const ProbeStatus e = NcclError(state, "ncclCommGetAsyncError", lr->comm);
        Abort();
        return ProbeStatus(e.code(), std::string(what) + ": rank " + std::to_string(lr->rank) + ": " + e.message());
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_store_check) {  // a peer's failure (one store read per 10 ms)
      std::string why;
      if (agree_.PeerAborted(&why)) {
        Abort();
        return Aborted(std::string(what) + " stopped: " + why);
      }
      next_store_check = now + std::chrono::milliseconds(10);
    }
    if (now - start >= timeout_) {
      Abort();
      return DeadlineExceeded(std::string(what) + " did not finish within " + std::to_string(timeout_.count()) +
                              " ms (GroupSpec::timeout); communicators aborted");
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

ProbeStatus NcclGroup::Settle() {
  return Poll(
      [&](ProbeStatus* s) {
        for (auto& lr : ranks_) {
          if (lr->comm == nullptr) continue;
          ncclResult_t state = ncclSuccess;
          const ncclResult_t r = ncclCommGetAsyncError(lr->comm, &state);
          if (r != ncclSuccess) {
            *s = NcclError(r, "ncclCommGetAsyncError", lr->comm);
            return true;
          }
          if (state == ncclInProgress) return false;
          if (state != ncclSuccess) {
            *s = NcclError(state, "nccl (asynchronous)", lr->comm);
            return true;
          }
        }
        *s = ProbeStatus::Ok();
        return true;
      },
      "nccl operation");
}

ProbeStatus NcclGroup::Wait(const Event& event) {
  return Poll(
      [&](ProbeStatus* s) {
        const cudaError_t e = cudaEventQuery(event.get());
        if (e == cudaErrorNotReady) return false;
        *s = e == cudaSuccess ? ProbeStatus::Ok() : CudaError(e, "cudaEventQuery");
        return true;
      },
      "waiting for the GPU");
}

ProbeStatus NcclGroup::WaitStream(cudaStream_t stream) {
  Event done;
  MOETUNE_PROBE_RETURN_IF_ERROR(done.Create());
  MOETUNE_CUDA(cudaEventRecord(done.get(), stream));
  return Wait(done);
}

ProbeStatus NcclGroup::EndPhase(const std::string& phase, const ProbeStatus& mine) {
  if (!mine.ok()) Abort();
  const ProbeStatus verdict = agree_.Agree(phase, mine);
  if (!verdict.ok()) Abort();
  return verdict;
}

ProbeStatus NcclGroup::Finish() {
  for (auto& lr : ranks_) {
    MOETUNE_CUDA(cudaSetDevice(lr->device));
    MOETUNE_PROBE_RETURN_IF_ERROR(WaitStream(lr->stream.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(WaitStream(lr->compute.get()));
  }
  finished_ = true;
  return ProbeStatus::Ok();
}

ProbeStatus NcclGroup::Barrier() {
  NcclGroupCall call(this);
  MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
  for (auto& lr : ranks_) {
    MOETUNE_NCCL(ncclAllReduce(lr->sync.get(), lr->sync.get(), 1, ncclFloat32, ncclSum, lr->comm,
                               lr->stream.get()));
  }
  return call.End();
}

}  // namespace moetune::kernels::cuda
