// CPU twins of the probes: the same problems as kernels/cuda, done for real
// on the host so that CI and machines without GPUs measure and test them.
//   grouped GEMM     OpenBLAS cblas_sgemm in fp32 (stand-in for bf16/fp8: the
//                    result's compute_dtype says "fp32"; mxfp8 numerics are
//                    emulated by MX-quantizing and dequantizing the inputs
//                    first, label "emulated"): a loop of GEMMs with
//                    OpenBLAS threading, a "grouped" single pass that spreads the
//                    experts over threads (one single-threaded GEMM each), and a
//                    dense GEMM of the same FLOPs as the reference.
//   dispatch/combine gather + Gloo alltoallv over TCP + scatter-add.
//   collectives      Gloo allreduce / allgather / alltoall; reduce-scatter as
//                    alltoall + local sum (the same bytes per rank as a ring).
//   offload          memcpy between a "device" buffer and a host buffer, plain
//                    malloc (pageable) or mlock'ed ("pinned"), alone and while
//                    a GEMM runs on another thread.
//   overlap          a GEMM thread and a Gloo all-reduce thread.
// Std-only interface (plus Gloo/OpenBLAS inside).
#pragma once

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cpu {

// Validates `params` (budget: timing.memory_budget_bytes, or half of physical
// RAM), runs, verifies and times the probe into *result.
ProbeStatus RunCpuProbe(const ProbeParams& params, const GroupSpec& group, ProbeResult* result);

}  // namespace moetune::kernels::cpu
