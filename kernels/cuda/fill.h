// Device-side fill of GEMM inputs with reproducible pseudo-random bf16
// values (std + CUDA only). Tensor cores draw less power on zeros and hold
// higher clocks, so a GEMM on zero-filled inputs runs faster than one on
// real activations: the offload and overlap probes' background GEMMs get
// values uniform in [-1, 1) instead.
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"

namespace moetune::kernels::cuda {
namespace {  // a copy per translation unit (kernels are defined in a header)

// splitmix64 of seed + index -> [-1, 1): a counter-based generator, so
// every thread computes its elements independently.
__global__ void FillUniformBf16Kernel(__nv_bfloat16* out, int64_t n, uint64_t seed) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(j + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    out[j] = __float2bfloat16(2.0f * u - 1.0f);
  }
}

inline ProbeStatus FillUniformBf16(void* dst, int64_t n, uint64_t seed, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<int64_t>(4096, (n + 255) / 256 + 1));
  FillUniformBf16Kernel<<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), n, seed);
  MOETUNE_CUDA(cudaGetLastError());
  return ProbeStatus::Ok();
}

}  // namespace
}  // namespace moetune::kernels::cuda
