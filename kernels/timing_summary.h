// The launch-overhead figures of the back-to-back timing protocol
// (kernels/cuda/timing.h), std-only so they are unit-tested without a GPU.
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/probe_result.h"

namespace moetune::kernels {

inline double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Adds to m->values, from m->samples_seconds (per-iteration GPU seconds of
// back-to-back samples), the host's enqueue seconds per iteration of each
// sample and the GPU seconds of lone calls:
//   iterations_per_sample, host_enqueue_seconds_per_iteration (median),
//   lone_call_seconds (median),
//   launch_share = 1 - per-iteration median / lone-call median, in [0, 1]:
//     the part of a lone call that was host launch gaps,
//   host_bound = 1 when the host needs >= 90% of the GPU's per-iteration
//     time to enqueue one iteration (the GPU waited for the host even back
//     to back).
inline void SummarizeBackToBack(int iterations, const std::vector<double>& host_per_iteration,
                                const std::vector<double>& lone_call_seconds, Measurement* m) {
  const double per_iter = MedianOf(m->samples_seconds);
  const double lone = MedianOf(lone_call_seconds);
  const double host = MedianOf(host_per_iteration);
  m->values["iterations_per_sample"] = iterations;
  m->values["host_enqueue_seconds_per_iteration"] = host;
  m->values["lone_call_seconds"] = lone;
  m->values["launch_share"] = lone > 0 ? std::clamp(1.0 - per_iter / lone, 0.0, 1.0) : 0.0;
  m->values["host_bound"] = per_iter > 0 && host >= 0.9 * per_iter ? 1.0 : 0.0;
}

}  // namespace moetune::kernels
