#include "kernels/cpu/gloo_ops.h"

#include <exception>
#include <string>

#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/alltoall.h"
#include "gloo/alltoallv.h"
#include "gloo/barrier.h"
#include "gloo/common/error.h"
#include "gloo/math.h"

namespace moetune::kernels::cpu {
namespace {

template <typename F>
ProbeStatus Call(const char* name, F f) {
  try {
    f();
  } catch (const gloo::IoException& e) {
    return Unavailable(std::string(name) + ": " + e.what());
  } catch (const std::exception& e) {
    return Internal(std::string(name) + ": " + e.what());
  }
  return ProbeStatus::Ok();
}

}  // namespace

ProbeStatus GlooBarrier(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag) {
  return Call("gloo::barrier", [&] {
    gloo::BarrierOptions opts(ctx);
    opts.setTag(tag);
    gloo::barrier(opts);
  });
}

ProbeStatus GlooAlltoallv(const std::shared_ptr<gloo::Context>& ctx, const float* in,
                          const std::vector<int64_t>& in_counts, float* out,
                          const std::vector<int64_t>& out_counts, uint32_t tag) {
  return Call("gloo::alltoallv", [&] {
    gloo::AlltoallvOptions opts(ctx);
    opts.setInput(const_cast<float*>(in), in_counts);
    opts.setOutput(out, out_counts);
    opts.setTag(tag);
    gloo::alltoallv(opts);
  });
}

ProbeStatus GlooAlltoall(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                         size_t elements, uint32_t tag) {
  return Call("gloo::alltoall", [&] {
    gloo::AlltoallOptions opts(ctx);
    opts.setInput(const_cast<float*>(in), elements);
    opts.setOutput(out, elements);
    opts.setTag(tag);
    gloo::alltoall(opts);
  });
}

ProbeStatus GlooAllreduceSum(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                             size_t elements, uint32_t tag) {
  return Call("gloo::allreduce", [&] {
    gloo::AllreduceOptions opts(ctx);
    opts.setInput(const_cast<float*>(in), elements);
    opts.setOutput(out, elements);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(tag);
    gloo::allreduce(opts);
  });
}

ProbeStatus GlooAllgather(const std::shared_ptr<gloo::Context>& ctx, const float* in, float* out,
                          size_t in_elements, uint32_t tag) {
  return Call("gloo::allgather", [&] {
    gloo::AllgatherOptions opts(ctx);
    opts.setInput(const_cast<float*>(in), in_elements);
    opts.setOutput(out, in_elements * ctx->size);
    opts.setTag(tag);
    gloo::allgather(opts);
  });
}

ProbeStatus GlooReduceScatterSum(const std::shared_ptr<gloo::Context>& ctx, const float* in,
                                 float* out, float* scratch, size_t in_elements, uint32_t tag) {
  MOETUNE_PROBE_RETURN_IF_ERROR(GlooAlltoall(ctx, in, scratch, in_elements, tag));
  const size_t chunk = in_elements / ctx->size;
  for (size_t i = 0; i < chunk; ++i) out[i] = scratch[i];
  for (int s = 1; s < ctx->size; ++s) {
    const float* src = scratch + s * chunk;
    for (size_t i = 0; i < chunk; ++i) out[i] += src[i];
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cpu
