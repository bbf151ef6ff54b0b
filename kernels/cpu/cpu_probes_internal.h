// The CPU twins, one function per probe (kernels/cpu/cpu_probes.h dispatches).
// Each assumes validated params and fills result->measurements.
#pragma once

#include <cstdint>
#include <vector>

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

// The grouped GEMM's mxfp8 emulation: X [T,K], W [E,K,N], dY [T,N] (tokens
// of expert e at rows off_e .. off_e + counts[e]) MX-quantized
// (kernels/reference.h) along each GEMM's reduction axis and dequantized
// back into the same layouts:
//   fwd        Y = X W       X along K, W along K (per expert, per column n)
//   bwd_data   dX = dY W^T   dY along N, W along N
//   bwd_weight dW = X^T dY   X and dY along tokens, blocks restarting at
//                            each expert's first token (a short last block
//                            per expert, as zero padding to 32 would give)
struct MxEmulatedInputs {
  std::vector<float> x_fwd, w_fwd, dy_bd, w_bd, x_bw, dy_bw;
};
MxEmulatedInputs EmulateMxInputs(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& dy, const std::vector<int64_t>& counts,
                                 int64_t hidden, int64_t ffn_hidden);

}  // namespace moetune::kernels::cpu
