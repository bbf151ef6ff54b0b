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

}  // namespace moetune::kernels
