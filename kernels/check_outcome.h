// How tools/gpu_check (and kernels/cpu/cpu_check) count a probe's outcome
// (std-only, unit-tested without a GPU).
//
// A probe that answers Unimplemented is SKIPPED only when the device is known
// not to have what the case needs (fp8 below compute capability 8.9, mxfp8
// below 10.0). Anywhere else Unimplemented means the probe could not measure
// a case this device should run -- e.g. cuBLASLt's heuristic found no
// algorithm (CUBLAS_STATUS_NOT_SUPPORTED, or zero results) for a bf16 GEMM on
// an H100 -- and is a FAILURE: the check must not exit 0 having measured
// nothing.
#pragma once

#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels {

enum class CheckOutcome { kOk, kWrong, kFailed, kSkipped };
const char* CheckOutcomeName(CheckOutcome o);  // "ok", "WRONG", "FAILED", "SKIPPED"

// The compute capability (major * 10 + minor) a case needs: 89 for an fp8
// grouped GEMM, 100 for mxfp8, 0 when any CUDA GPU the probes build for can
// run it.
int RequiredComputeCapability(const ProbeParams& params);

// OK -> kOk; DataLoss (a wrong result) -> kWrong; Unimplemented -> kSkipped
// when device_cc < RequiredComputeCapability(params), else kFailed; any other
// error -> kFailed.
CheckOutcome ClassifyProbeStatus(const ProbeStatus& status, const ProbeParams& params, int device_cc);

// Exit status of a check: 0 when nothing was wrong or failed, else 1.
int CheckExitCode(int wrong, int failed);

}  // namespace moetune::kernels
