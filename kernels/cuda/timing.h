// The timing protocol of the CUDA probes (std + CUDA only), as nccl-tests
// times its collectives: per sample, one pair of events around
// TimingOptions::iters_per_sample iterations enqueued back to back on the
// stream(s); the sample is the elapsed time / iterations. Recording `start`
// on an idle stream and then enqueueing one call (what the probes did
// before) times the host as well: the GPU sits idle from `start` until the
// host has launched the call's kernels, which for a small collective or a
// 64-expert loop of cuBLASLt calls is most of the sample. Back to back, the
// host enqueues iteration i+1 while the GPU runs iteration i, and only the
// first launch is in the sample (1 / iterations of it).
//
// Beside the samples each measurement gets (Measurement::values):
//   iterations_per_sample               the iterations per sample
//   host_enqueue_seconds_per_iteration  median host time to enqueue one
//                                       iteration (steady clock)
//   lone_call_seconds                   median time of one call alone
//                                       between events (the old protocol)
//   launch_share                        1 - per-iteration / lone call,
//                                       clamped to [0, 1]: the part of a lone
//                                       call that was launch gaps
//   host_bound                          1 when the host's enqueue time per
//                                       iteration is >= 90% of the GPU's:
//                                       even back to back the GPU waited for
//                                       the host (CUDA graphs would help)
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/probe_result.h"
#include "kernels/probe_types.h"
#include "kernels/timing_summary.h"

namespace moetune::kernels::cuda {

// The events of one local rank's stream.
struct TimedStream {
  cudaStream_t stream = nullptr;
  int device = 0;
  const Event* start = nullptr;
  const Event* stop = nullptr;
};

// How to wait for an event: cudaEventSynchronize for one-GPU probes,
// NcclGroup::Wait (polls, aborts on a peer's failure) for multi-rank ones.
using EventWait = std::function<ProbeStatus(const Event&)>;

inline ProbeStatus SynchronizeEvent(const Event& e) {
  MOETUNE_CUDA(cudaEventSynchronize(e.get()));
  return ProbeStatus::Ok();
}

namespace timing_internal {

// One sample: events around `calls` calls of enqueue_one on every stream;
// returns the slowest stream's elapsed seconds and the host's enqueue time.
inline ProbeStatus Sample(const std::vector<TimedStream>& streams, int calls,
                          const std::function<ProbeStatus()>& enqueue_one, const EventWait& wait,
                          double* gpu_seconds, double* host_seconds) {
  for (const TimedStream& t : streams) {
    MOETUNE_CUDA(cudaSetDevice(t.device));
    MOETUNE_CUDA(cudaEventRecord(t.start->get(), t.stream));
  }
  const auto h0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) MOETUNE_PROBE_RETURN_IF_ERROR(enqueue_one());
  *host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
  for (const TimedStream& t : streams) {
    MOETUNE_CUDA(cudaSetDevice(t.device));
    MOETUNE_CUDA(cudaEventRecord(t.stop->get(), t.stream));
  }
  *gpu_seconds = 0;
  for (const TimedStream& t : streams) {
    MOETUNE_PROBE_RETURN_IF_ERROR(wait(*t.stop));
    float ms = 0;
    MOETUNE_CUDA(cudaEventElapsedTime(&ms, t.start->get(), t.stop->get()));
    *gpu_seconds = std::max(*gpu_seconds, ms * 1e-3);
  }
  return ProbeStatus::Ok();
}

}  // namespace timing_internal

// Fills m->samples_seconds (timing.timed_iters per-iteration samples after
// timing.warmup_iters untimed ones) and the values above. `before_sample`
// (may be empty) runs before each sample, untimed (a barrier); enqueue_one
// enqueues one iteration on every stream without waiting for it.
inline ProbeStatus TimeBackToBack(const TimingOptions& timing, const std::vector<TimedStream>& streams,
                                  const std::function<ProbeStatus()>& before_sample,
                                  const std::function<ProbeStatus()>& enqueue_one, const EventWait& wait,
                                  Measurement* m) {
  const int iters = std::max(1, timing.iters_per_sample);
  std::vector<double> host_per_iter, lone;
  for (int s = 0; s < timing.warmup_iters + timing.timed_iters; ++s) {
    if (before_sample) MOETUNE_PROBE_RETURN_IF_ERROR(before_sample());
    double gpu = 0, host = 0;
    MOETUNE_PROBE_RETURN_IF_ERROR(timing_internal::Sample(streams, iters, enqueue_one, wait, &gpu, &host));
    if (s < timing.warmup_iters) continue;
    m->samples_seconds.push_back(gpu / iters);
    host_per_iter.push_back(host / iters);
  }
  // A lone call between events: what the samples would have been without
  // back-to-back iterations.
  for (int s = 0; s < std::min(timing.timed_iters, 5); ++s) {
    if (before_sample) MOETUNE_PROBE_RETURN_IF_ERROR(before_sample());
    double gpu = 0, host = 0;
    MOETUNE_PROBE_RETURN_IF_ERROR(timing_internal::Sample(streams, 1, enqueue_one, wait, &gpu, &host));
    lone.push_back(gpu);
  }
  SummarizeBackToBack(iters, host_per_iter, lone, m);  // kernels/timing_summary.h
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cuda
