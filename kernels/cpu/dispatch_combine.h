// The CPU dispatch/combine round trip, exposed for the multi-process tests:
// like the probe, and also returns this rank's combined output
// ([tokens_per_rank * hidden], fp32) so a test can check it independently.
#pragma once

#include <vector>

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cpu {

ProbeStatus RunDispatchCombineRoundTrip(const DispatchCombineParams& p, const GroupSpec& group,
                                        ProbeResult* result, std::vector<float>* combined);

}  // namespace moetune::kernels::cpu
