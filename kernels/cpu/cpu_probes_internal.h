// The CPU twins, one function per probe (kernels/cpu/cpu_probes.h dispatches).
// Each assumes validated params and fills result->measurements.
#pragma once

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cpu {

ProbeStatus RunGroupedGemm(const GroupedGemmParams& p, ProbeResult* result);
ProbeStatus RunDispatchCombine(const DispatchCombineParams& p, const GroupSpec& group,
                               ProbeResult* result);
ProbeStatus RunCollectives(const CollectiveParams& p, const GroupSpec& group, ProbeResult* result);
ProbeStatus RunOffload(const OffloadParams& p, ProbeResult* result);
ProbeStatus RunOverlap(const OverlapParams& p, const GroupSpec& group, ProbeResult* result);

}  // namespace moetune::kernels::cpu
