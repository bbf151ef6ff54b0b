// Host offload probe: cudaMemcpyAsync between device memory and pinned
// (cudaMallocHost) or pageable host memory, alone and while bf16 GEMMs run on
// another stream.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/cuda/fill.h"
#include "kernels/measurement_roles.h"
#include "kernels/random.h"

namespace moetune::kernels::cuda {

ProbeStatus RunOffload(const OffloadParams& p, int device, ProbeResult* result) {
  (void)device;
  if (p.under_gemm && (p.gemm_m > INT32_MAX || p.gemm_n > INT32_MAX || p.gemm_k > INT32_MAX)) {
    return InvalidArgument("offload (cuda): gemm_m/n/k (" + std::to_string(p.gemm_m) + ", " +
                           std::to_string(p.gemm_n) + ", " + std::to_string(p.gemm_k) +
                           ") must fit in int32 (cublasGemmEx's dimensions)");
  }
  int64_t max_size = 0;
  for (int64_t s : p.sizes_bytes) max_size = std::max(max_size, s);
  DeviceBuffer dev;
  MOETUNE_PROBE_RETURN_IF_ERROR(dev.Create(max_size));
  Stream copy, compute;
  MOETUNE_PROBE_RETURN_IF_ERROR(copy.Create());
  MOETUNE_PROBE_RETURN_IF_ERROR(compute.Create());
  Event start, stop, gstart, gstop;
  for (Event* e : {&start, &stop, &gstart, &gstop}) MOETUNE_PROBE_RETURN_IF_ERROR(e->Create());

  // Background GEMM (bf16, fp32 accumulate) and its time alone.
  CublasHandle blas;
  DeviceBuffer ga, gb, gc;
  double gemm_seconds = 0;
  if (p.under_gemm) {
    MOETUNE_PROBE_RETURN_IF_ERROR(blas.Create());
    MOETUNE_CUBLAS(cublasSetStream(blas.get(), compute.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(ga.Create(p.gemm_m * p.gemm_k * 2));
    MOETUNE_PROBE_RETURN_IF_ERROR(gb.Create(p.gemm_k * p.gemm_n * 2));
    MOETUNE_PROBE_RETURN_IF_ERROR(gc.Create(p.gemm_m * p.gemm_n * 2));
    // Random, not zero, inputs: tensor-core power and clocks depend on data.
    MOETUNE_PROBE_RETURN_IF_ERROR(
        FillUniformBf16(ga.get(), p.gemm_m * p.gemm_k, StreamSeed(p.timing.seed, 0, 21), compute.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(
        FillUniformBf16(gb.get(), p.gemm_k * p.gemm_n, StreamSeed(p.timing.seed, 0, 22), compute.get()));
    MOETUNE_CUDA(cudaStreamSynchronize(compute.get()));
  }
  auto gemm = [&]() -> ProbeStatus {
    const float alpha = 1.0f, beta = 0.0f;
    MOETUNE_CUBLAS(cublasGemmEx(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, p.gemm_n, p.gemm_m, p.gemm_k, &alpha, gb.get(),
                                CUDA_R_16BF, p.gemm_n, ga.get(), CUDA_R_16BF, p.gemm_k, &beta, gc.get(), CUDA_R_16BF,
                                p.gemm_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return ProbeStatus::Ok();
  };
  if (p.under_gemm) {
    for (int i = 0; i < 3; ++i) {  // warm-up, then the last one is timed
      MOETUNE_CUDA(cudaEventRecord(gstart.get(), compute.get()));
      MOETUNE_PROBE_RETURN_IF_ERROR(gemm());
      MOETUNE_CUDA(cudaEventRecord(gstop.get(), compute.get()));
      MOETUNE_PROBE_RETURN_IF_ERROR(ElapsedSeconds(gstart, gstop, &gemm_seconds));
    }
  }

  for (bool pinned : {true, false}) {
    if ((pinned && !p.pinned) || (!pinned && !p.pageable)) continue;
    HostMemory host;
    MOETUNE_PROBE_RETURN_IF_ERROR(host.Create(max_size, pinned));
    const std::vector<float> pattern = UniformValues(StreamSeed(p.timing.seed, 0, 20), max_size / 4);
    std::memcpy(host.get(), pattern.data(), pattern.size() * 4);
    for (int64_t size : p.sizes_bytes) {
      for (bool h2d : {true, false}) {
        if ((h2d && !p.host_to_device) || (!h2d && !p.device_to_host)) continue;
        void* dst = h2d ? dev.get() : host.get();
        const void* src = h2d ? host.get() : dev.get();
        const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        double alone_seconds = 0;
        for (bool concurrent : {false, true}) {
          if (concurrent && !p.under_gemm) continue;
          Measurement m;
          m.name = roles::OffloadName({h2d, pinned, size, concurrent});
          m.labels = {{"direction", h2d ? "h2d" : "d2h"},
                      {"host_memory", pinned ? "pinned" : "pageable"},
                      {"size_bytes", std::to_string(size)},
                      {"under_gemm", concurrent ? "true" : "false"}};
          if (p.timing.verify) {
            // The timed call itself (cudaMemcpyAsync on the copy stream, this
            // direction and host memory) into a poisoned destination, then
            // compared with its source.
            const char* source = static_cast<const char*>(host.get());
            std::vector<char> expect(source, source + size), got(size);
            if (h2d) {
              MOETUNE_CUDA(cudaMemset(dev.get(), 0xff, size));
              MOETUNE_CUDA(cudaMemcpyAsync(dst, src, size, kind, copy.get()));
              MOETUNE_CUDA(cudaStreamSynchronize(copy.get()));
              MOETUNE_CUDA(cudaMemcpy(got.data(), dev.get(), size, cudaMemcpyDeviceToHost));
            } else {
              MOETUNE_CUDA(cudaMemcpy(dev.get(), expect.data(), size, cudaMemcpyHostToDevice));
              std::memset(host.get(), 0xff, size);
              MOETUNE_CUDA(cudaMemcpyAsync(dst, src, size, kind, copy.get()));
              MOETUNE_CUDA(cudaStreamSynchronize(copy.get()));
              std::memcpy(got.data(), host.get(), size);
            }
            if (std::memcmp(got.data(), expect.data(), size) != 0) {
              return DataLoss("offload " + m.name + " (cuda): the copy differs from its source");
            }
            m.verified = true;
          }
          // Enough GEMMs to cover the copy 1.5 times over.
          const int gemms = concurrent && gemm_seconds > 0
                                ? static_cast<int>(std::ceil(1.5 * alone_seconds / gemm_seconds)) + 1
                                : 0;
          for (int it = 0; it < p.timing.warmup_iters + p.timing.timed_iters; ++it) {
            for (int g = 0; g < gemms; ++g) MOETUNE_PROBE_RETURN_IF_ERROR(gemm());
            MOETUNE_CUDA(cudaEventRecord(start.get(), copy.get()));
            MOETUNE_CUDA(cudaMemcpyAsync(dst, src, size, kind, copy.get()));
            MOETUNE_CUDA(cudaEventRecord(stop.get(), copy.get()));
            double s = 0;
            MOETUNE_PROBE_RETURN_IF_ERROR(ElapsedSeconds(start, stop, &s));
            MOETUNE_CUDA(cudaStreamSynchronize(compute.get()));
            if (it >= p.timing.warmup_iters) m.samples_seconds.push_back(s);
          }
          m.bytes = static_cast<double>(size);
          m.Finalize();
          if (!concurrent) {
            alone_seconds = m.PlannerSeconds();
          } else {
            m.values["background_gemms_per_sample"] = gemms;
            m.values["gemm_seconds_alone"] = gemm_seconds;
            if (m.PlannerSeconds() > 0) m.efficiency_vs_reference = alone_seconds / m.PlannerSeconds();
          }
          result->measurements.push_back(std::move(m));
        }
      }
    }
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cuda
