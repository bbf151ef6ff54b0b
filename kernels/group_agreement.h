// Failure agreement for multi-rank probes (std-only; the CPU twins over Gloo
// and the CUDA probes over NCCL use the same protocol).
//
// A multi-rank probe runs in phases ("connect", "verify", "time/dispatch",
// ...). At the end of every phase each rank publishes its status through the
// group's rendezvous store under "<prefix>/agree/<phase>/<rank>" and reads
// every other rank's, so that all ranks leave a phase with the same verdict:
//   * every rank ok                      -> ok, the next phase starts;
//   * this rank failed (DataLoss, out of memory, a failed call, ...)
//                                        -> its own status, at once;
//   * another rank failed                -> Aborted "rank 2 failed in phase
//     'verify': DATA_LOSS: ...; rank 0 stopped", naming the first rank whose
//     failure is a cause (not itself a lost peer / timeout / abort);
//   * a rank never reports               -> DeadlineExceeded naming it, after
//     GroupSpec::timeout;
//   * the store refuses (any answer but a value or DeadlineExceeded: the
//     server closed the attempt's prefix, e.g. it lost a peer or restarted)
//                                        -> Aborted naming the store's answer,
//     at once: no verdict can come through it any more.
// A failing rank also sets "<prefix>/abort", which ranks blocked inside a
// phase (waiting on a GPU event behind a collective that will never finish)
// poll with PeerAborted() to stop waiting and abort their communicator.
//
// Before agreeing on a failure a rank must stop communicating (destroy its
// Gloo context, ncclCommAbort): peers blocked in a collective with it then
// fail at once instead of at the transport timeout.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels {

class GroupAgreement {
 public:
  // Without a store, or with one rank, Agree() returns this rank's status.
  explicit GroupAgreement(const GroupSpec& group);

  // Publishes `mine` for `phase` and returns the group's verdict (above).
  ProbeStatus Agree(const std::string& phase, const ProbeStatus& mine);

  // Whether some rank has published a failure, or the store refuses the
  // attempt (non-blocking). `what` gets the failure's "rank R phase P: ..."
  // line, or the store's answer.
  bool PeerAborted(std::string* what = nullptr);

  // Testing hook (GroupSpec::inject_failure_at_phase): Internal("injected
  // failure ...") when this rank was told to fail at `phase`, else OK. Probes
  // call it at the start of each phase, before the phase's collectives, so a
  // test can make one rank drop out while its peers are inside a collective.
  ProbeStatus InjectedFailure(const std::string& phase) const;

  bool active() const { return store_ != nullptr && world_ > 1; }

 private:
  std::string Key(const std::string& phase, int rank) const;
  std::shared_ptr<RendezvousStore> store_;
  std::string prefix_;
  int rank_ = 0;
  int world_ = 1;
  std::chrono::milliseconds timeout_;
  std::string inject_phase_;
};

// Statuses that are consequences of another rank's failure (a lost peer, a
// timeout, an abort): Unavailable, DeadlineExceeded, Aborted, Cancelled.
bool IsConsequenceOfPeerFailure(ProbeCode code);

}  // namespace moetune::kernels
