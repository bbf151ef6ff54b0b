// The NCCL communicators of the ranks this process drives (std + CUDA only).
//  * group.store == nullptr: one process, group.world_size local GPUs,
//    ncclCommInitAll; every operation is issued for all local ranks inside one
//    ncclGroupStart/End.
//  * group.store != nullptr: this process is group.rank on one GPU; rank 0
//    publishes the ncclUniqueId under "<key_prefix>/nccl_unique_id".
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/group_agreement.h"
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

// Failure handling (kernels/group_agreement.h): in multi-process mode the
// communicator is non-blocking (ncclConfig_t::blocking = 0), so no NCCL call
// can block on a peer that is gone; every wait -- communicator creation, the
// end of a group of calls, a GPU event behind a collective -- polls, watching
// the communicator's asynchronous error, the group's abort flag in the
// rendezvous store and GroupSpec::timeout. A failure anywhere, or a probe
// that returns early, ends with ncclCommAbort on every local communicator
// (the failing rank's and, once they learn of it, its peers'); only a probe
// that calls Finish() destroys them normally.
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

  // Waits for `event` (recorded on a local rank's stream) without blocking
  // inside CUDA or NCCL: Internal naming ncclCommGetAsyncError's error,
  // Aborted when a peer published a failure, DeadlineExceeded after
  // GroupSpec::timeout. Any failure aborts the communicators.
  ProbeStatus Wait(const Event& event);
  // Records an event on `stream` and waits for it as above.
  ProbeStatus WaitStream(cudaStream_t stream);
  // Waits until no local communicator has an operation in progress (after
  // ncclGroupEnd / creation of non-blocking communicators).
  ProbeStatus Settle();
  // Ends one phase: on a local failure aborts the communicators first, then
  // agrees with the other ranks (kernels/group_agreement.h); any failed
  // verdict aborts too.
  ProbeStatus EndPhase(const std::string& phase, const ProbeStatus& mine);
  // The probe finished: waits for the streams, then the destructor destroys
  // (not aborts) the communicators.
  ProbeStatus Finish();
  // ncclCommAbort on every local communicator (idempotent).
  void Abort();

  GroupAgreement& agreement() { return agree_; }

 private:
  explicit NcclGroup(const GroupSpec& group);
  ProbeStatus Poll(const std::function<bool(ProbeStatus*)>& done, const char* what);
  int world_ = 1;
  bool nonblocking_ = false;
  bool finished_ = false;
  bool aborted_ = false;
  std::chrono::milliseconds timeout_;
  GroupAgreement agree_;
  std::vector<std::unique_ptr<LocalRank>> ranks_;
};

// ncclGroupStart/End that also ends the group on an early error return;
// End() settles non-blocking communicators (NcclGroup::Settle).
class NcclGroupCall {
 public:
  explicit NcclGroupCall(NcclGroup* group = nullptr) : group_(group) {}
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
    const ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess && r != ncclInProgress) return NcclError(r, "ncclGroupEnd()");
    return group_ != nullptr ? group_->Settle() : ProbeStatus::Ok();
  }

 private:
  NcclGroup* group_ = nullptr;
  bool open_ = false;
};

// NCCL data type of a probe dtype (bf16, fp16, fp32).
ProbeStatus NcclType(DType dtype, ncclDataType_t* type, size_t* bytes);
// Bytes of one element of `type` (the types NcclType returns).
inline size_t NcclTypeBytes(ncclDataType_t type) {
  return type == ncclFloat32 ? 4 : type == ncclFloat64 ? 8 : type == ncclInt8 || type == ncclUint8 ? 1 : 2;
}

}  // namespace moetune::kernels::cuda
