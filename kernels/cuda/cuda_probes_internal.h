// Per-probe entry points of the CUDA backend (cuda_probes.cu dispatches).
#pragma once

#include <cuda_runtime.h>

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cuda {

// Each assumes validated params, a usable device (`device` is current) and
// fills result->measurements.
ProbeStatus RunGroupedGemm(const GroupedGemmParams& p, int device, ProbeResult* result);
ProbeStatus RunOffload(const OffloadParams& p, int device, ProbeResult* result);
// Multi-rank (NCCL): see cuda_probes.h for the two group modes.
ProbeStatus RunDispatchCombine(const DispatchCombineParams& p, const GroupSpec& group,
                               ProbeResult* result);
ProbeStatus RunCollectives(const CollectiveParams& p, const GroupSpec& group, ProbeResult* result);
ProbeStatus RunOverlap(const OverlapParams& p, const GroupSpec& group, ProbeResult* result);

// Fills the device part of the provenance (name, UUID, compute capability,
// driver/runtime/cuBLAS/NCCL versions, NCCL_* / CUDA_* environment).
ProbeStatus DeviceProvenance(int device, Provenance* p);

// The device this process uses for a group (device_ordinal or rank % count).
int DeviceForRank(const GroupSpec& group, int device_count);

}  // namespace moetune::kernels::cuda
