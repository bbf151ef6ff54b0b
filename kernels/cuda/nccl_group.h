// The NCCL communicators of the ranks this process drives (std + CUDA only).
//  * group.store == nullptr: one process, group.world_size local GPUs,
//    ncclCommInitAll; every operation is issued for all local ranks inside one
//    ncclGroupStart/End.
//  * group.store != nullptr: this process is group.rank on one GPU; rank 0
//    publishes the ncclUniqueId under "<key_prefix>/nccl_unique_id".
#pragma once

#include <memory>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/probe_types.h"

// ncclAlltoAll exists from NCCL 2.28 on. Older NCCLs (e.g. a pip
// nvidia-nccl-cu12 2.27 on a PyTorch machine) get the grouped
// ncclSend/ncclRecv form instead; -DMOETUNE_NCCL_HAS_ALLTOALL=0 forces that
// form (to compile-check it against a newer NCCL).
#ifndef MOETUNE_NCCL_HAS_ALLTOALL
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
#define MOETUNE_NCCL_HAS_ALLTOALL 1
#else
#define MOETUNE_NCCL_HAS_ALLTOALL 0
#endif
#endif

namespace moetune::kernels::cuda {

// What the all-to-all measurements say ran (their "impl" label).
inline constexpr const char* kNcclAllToAllImpl =
    MOETUNE_NCCL_HAS_ALLTOALL ? "ncclAlltoAll" : "grouped ncclSend/ncclRecv (NCCL < 2.28)";

struct LocalRank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  Stream stream;       // communication stream
  Stream compute;      // a second stream (GEMMs in the overlap/offload probes)
  DeviceBuffer sync;   // one float for the pre-sample barrier all-reduce
};

class NcclGroup {
 public:
  static ProbeStatus Create(const GroupSpec& group, std::unique_ptr<NcclGroup>* out);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int world_size() const { return world_; }
  std::vector<std::unique_ptr<LocalRank>>& ranks() { return ranks_; }
  // A 1-element all-reduce on every rank's stream: ranks start samples together.
  ProbeStatus Barrier();

 private:
  NcclGroup() = default;
  int world_ = 1;
  std::vector<std::unique_ptr<LocalRank>> ranks_;
};

// ncclGroupStart/End that also ends the group on an early error return.
class NcclGroupCall {
 public:
  NcclGroupCall() = default;
  NcclGroupCall(const NcclGroupCall&) = delete;
  NcclGroupCall& operator=(const NcclGroupCall&) = delete;
  ~NcclGroupCall() {
    if (open_) ncclGroupEnd();
  }
  ProbeStatus Start() {
    MOETUNE_NCCL(ncclGroupStart());
    open_ = true;
    return ProbeStatus::Ok();
  }
  ProbeStatus End() {
    open_ = false;
    MOETUNE_NCCL(ncclGroupEnd());
    return ProbeStatus::Ok();
  }

 private:
  bool open_ = false;
};

// NCCL data type of a probe dtype (bf16, fp16, fp32).
ProbeStatus NcclType(DType dtype, ncclDataType_t* type, size_t* bytes);
// Bytes of one element of `type` (the types NcclType returns).
inline size_t NcclTypeBytes(ncclDataType_t type) {
  return type == ncclFloat32 ? 4 : type == ncclFloat64 ? 8 : type == ncclInt8 || type == ncclUint8 ? 1 : 2;
}

}  // namespace moetune::kernels::cuda
