// A small, fully specified random generator (splitmix64), so that every
// backend and compiler draws the same problem from the same seed. Std-only.
#pragma once

#include <cstdint>
#include <vector>

namespace moetune::kernels {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

// A seed for stream `stream` of `rank`, decorrelated from the base seed.
inline uint64_t StreamSeed(uint64_t seed, int rank, uint64_t stream) {
  SplitMix64 r(seed ^ (0xa0761d6478bd642fULL * (static_cast<uint64_t>(rank) + 1)) ^
               (0xe7037ed1a0b428dbULL * stream));
  return r.Next();
}

// n values uniform in [-1, 1).
inline std::vector<float> UniformValues(uint64_t seed, int64_t n) {
  SplitMix64 rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(2.0 * rng.Uniform() - 1.0);
  return v;
}

// Values for GEMM inputs, a rows x cols row-major matrix: u * 2^e with u
// uniform in [-1, 1) and e drawn uniformly from {-2, ..., 2} once per 32 x 32
// tile (row / 32, col / 32). MX blocks are 32 consecutive elements along
// either axis, so neighbouring blocks, experts and tiles get different block
// scales: a GEMM that applies the wrong scale, or another expert's, gives a
// visibly wrong product (with uniform inputs nearly every block has the same
// amax and hence the same scale, and such faults hide). Products stay within
// 2^4 = 16, far inside fp16's range at any K the probes use.
inline constexpr int64_t kMixedMagnitudeTile = 32;
inline std::vector<float> MixedMagnitudeValues(uint64_t seed, int64_t rows, int64_t cols) {
  SplitMix64 rng(seed);
  const int64_t tiles_c = (cols + kMixedMagnitudeTile - 1) / kMixedMagnitudeTile;
  const int64_t tiles_r = (rows + kMixedMagnitudeTile - 1) / kMixedMagnitudeTile;
  std::vector<float> scale(static_cast<size_t>(tiles_r * tiles_c));
  for (float& s : scale) {
    static constexpr float kPow2[] = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
    s = kPow2[rng.Next() % 5];
  }
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* srow = scale.data() + (r / kMixedMagnitudeTile) * tiles_c;
    for (int64_t c = 0; c < cols; ++c) {
      v[r * cols + c] = static_cast<float>(2.0 * rng.Uniform() - 1.0) * srow[c / kMixedMagnitudeTile];
    }
  }
  return v;
}

}  // namespace moetune::kernels
