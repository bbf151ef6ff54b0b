// Thin status-returning wrappers over the Gloo collectives used by the CPU
// twins. Gloo reports errors by exception; each wrapper catches them and names
// the call ("gloo::alltoallv: ..."). Timeouts and lost peers are Unavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gloo/context.h"
#include "kernels/probe_status.h"

namespace moetune::kernels::cpu {

ProbeStatus GlooBarrier(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag);
// Element counts per peer; buffers hold at least one element even when empty.
ProbeStatus GlooAlltoallv(const std::shared_ptr<gloo::Context>& ctx, const float* in,
                          const std::vector<int64_t>& in_counts, float* out,
                          const std::vector<int64_t>& out_counts, uint32_t tag);
ProbeStatus GlooAlltoall(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                         size_t elements, uint32_t tag);
ProbeStatus GlooAllreduceSum(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                             size_t elements, uint32_t tag);
ProbeStatus GlooAllgather(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                          size_t in_elements, uint32_t tag);
// Reduce-scatter as all-to-all + local sum: every rank sends (n-1)/n of its
// input, as a ring reduce-scatter does. `scratch` holds `in_elements`.
ProbeStatus GlooReduceScatterSum(const std::shared_ptr<gloo::Context>& ctx, const float* in,
                                 float* out, float* scratch, size_t in_elements, uint32_t tag);

}  // namespace moetune::kernels::cpu
