// Inputs of the collective checks, chosen so that every correct result is
// exact in the payload type whatever order the library reduces in, at any
// rank count (std-only; the device fill kernel in kernels/cuda/collectives.cu
// evaluates the same Value()).
//
// Element j of rank r's input is (j + 7 r) % modulus if r % stride == 0,
// else 0. For the reductions (all_reduce, reduce_scatter) the values are
// integers and their sum over the c = ceil(n / stride) contributing ranks is
// at most c * (modulus - 1) <= L, the largest integer below which every
// integer is exact in the payload type (bf16 256, fp16 2048, fp32 2^24): then
// every partial sum, in any order, is an exact integer too, and the result
// must equal the closed form bit for bit. With n ranks:
//   modulus = min(251, L / c + 1) and stride = ceil(n / L)
// e.g. bf16: n = 2 -> values 0..128; n = 64 -> 0..4; n = 128 -> 0..2;
// n = 256 -> 0..1; n = 1024 -> 0..1 on every 4th rank. (The earlier inputs,
// (j + 7 r) % 5 on every rank, sum to up to 4 n: past 256 at 65+ ranks, where
// bf16 cannot hold every integer and a correct all-reduce failed its check.)
// The data-moving collectives (all_gather, all_to_all) use modulus 251 on
// every rank: values identify the source rank and the position.
#pragma once

#include <cstdint>

#include "kernels/probe_types.h"

#if defined(__CUDACC__)
#define MOETUNE_HOST_DEVICE __host__ __device__
#else
#define MOETUNE_HOST_DEVICE
#endif

namespace moetune::kernels {

// Every integer in [0, L] is exact in `payload`: 2^p for p significand bits.
inline int64_t ExactIntegerLimit(DType payload) {
  switch (payload) {
    case DType::kBf16: return int64_t{1} << 8;
    case DType::kFp16: return int64_t{1} << 11;
    case DType::kFp32: return int64_t{1} << 24;
    default: return int64_t{1} << 4;  // E4M3 (not a collective payload)
  }
}

struct CollectiveInputs {
  int64_t modulus = 251;
  int64_t stride = 1;
  MOETUNE_HOST_DEVICE float Value(int rank, int64_t j) const {
    return rank % stride == 0 ? static_cast<float>((j + 7 * static_cast<int64_t>(rank)) % modulus) : 0.0f;
  }
};

inline bool IsReduction(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter;
}

inline CollectiveInputs CollectiveInputsFor(CollectiveOp op, DType payload, int64_t n) {
  CollectiveInputs in;
  if (!IsReduction(op) || n <= 1) return in;
  const int64_t limit = ExactIntegerLimit(payload);
  in.stride = (n + limit - 1) / limit;
  const int64_t contributors = (n + in.stride - 1) / in.stride;
  in.modulus = limit / contributors + 1;
  if (in.modulus > 251) in.modulus = 251;
  return in;
}

// Expected element i of `rank`'s output in a group of n (chunk = elements
// per rank block, as in kernels/cuda/collectives.cu and kernels/cpu).
inline double ExpectedCollectiveValue(const CollectiveInputs& in, CollectiveOp op, int rank, int n, int64_t i,
                                      int64_t chunk) {
  double sum = 0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      for (int r = 0; r < n; r += static_cast<int>(in.stride)) sum += in.Value(r, i);
      return sum;
    case CollectiveOp::kReduceScatter:
      for (int r = 0; r < n; r += static_cast<int>(in.stride)) sum += in.Value(r, rank * chunk + i);
      return sum;
    case CollectiveOp::kAllGather:  // block s = rank s's input
      return in.Value(static_cast<int>(i / chunk), i % chunk);
    case CollectiveOp::kAllToAll:  // block s came from rank s: its elements for us
      return in.Value(static_cast<int>(i / chunk), rank * chunk + i % chunk);
  }
  return 0;
}

}  // namespace moetune::kernels
