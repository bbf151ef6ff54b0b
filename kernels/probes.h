// The probes facade: the one entry point the agent calls.
//
//   moetune::kernels::ProbeRequest req;
//   req.backend = moetune::kernels::Backend::kCpu;
//   req.params = moetune::kernels::GroupedGemmParams{...};
//   absl::StatusOr<moetune::kernels::ProbeResult> r = moetune::kernels::RunProbe(req);
//
// Multi-rank probes (dispatch/combine, collectives, overlap) run in every rank
// of the group at the same time, each with the same params and its own
// GroupSpec{rank, world_size, store, key_prefix} (world_size must equal
// ep_size / group_size). The store is the rendezvous (kernels/rendezvous.h):
// the server's, or MakeFileRendezvousStore() on one host.
//
// Status codes:
//   InvalidArgument    bad parameters; the message names the field and value.
//   Unavailable        cuda backend on a machine without a usable device
//                      ("no CUDA device: cudaGetDeviceCount: ..."); cpu
//                      backend: Gloo peers not reachable or not registered
//                      within GroupSpec::timeout (message names the missing
//                      key); retrying later or elsewhere may work.
//   Unimplemented      binary built without CUDA, or a dtype/probe the
//                      hardware cannot run (mxfp8 before Blackwell, ...).
//   FailedPrecondition multi-rank probe without a rendezvous store.
//   DeadlineExceeded   cuda backend: the NCCL unique id did not appear in the
//                      store within GroupSpec::timeout.
//   ResourceExhausted  an allocation failed (cudaMalloc, mlock: the message
//                      names the size).
//   DataLoss           the probe's correctness check failed (wrong values).
//   Internal           a library call failed; message names the call.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels {

enum class Backend { kCpu, kCuda };
const char* BackendName(Backend b);  // "cpu", "cuda"
// "cpu" / "cuda"; InvalidArgument otherwise.
absl::StatusOr<Backend> ParseBackend(const std::string& name);

struct ProbeRequest {
  Backend backend = Backend::kCpu;
  ProbeParams params;
  GroupSpec group;  // rank 0 of 1 for single-rank probes
};

// Validates, runs, verifies and times the probe. Never throws; without a GPU
// the cuda backend answers Unavailable (toolkit present) or Unimplemented
// (built without CUDA).
absl::StatusOr<ProbeResult> RunProbe(const ProbeRequest& request);

// Converts the leaf status (same code numbers as absl::StatusCode).
absl::Status ToAbslStatus(const ProbeStatus& s);

}  // namespace moetune::kernels
