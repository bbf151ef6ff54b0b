// Helpers shared by the CPU twins: the timing protocol on a monotonic clock,
// a fixed worker pool, host buffers (plain or mlock'ed), CPU provenance.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/probe_result.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"

namespace moetune::kernels::cpu {

// Warm-up (not recorded), then timing.timed_iters samples of `run`, each
// preceded by `before` (untimed: barriers, poisoning). Stops at the first
// failing call.
ProbeStatus TimeSamples(const TimingOptions& timing, const std::function<ProbeStatus()>& before,
                        const std::function<ProbeStatus()>& run, std::vector<double>* samples_seconds);

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs fn(worker) on `size` threads and waits for all; threads persist.
class WorkerPool {
 public:
  explicit WorkerPool(int size);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  int size() const { return static_cast<int>(threads_.size()); }
  void Run(const std::function<void(int)>& fn);

 private:
  void Loop(int worker);
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::function<void(int)> fn_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// A 64-byte aligned host buffer; `locked` mlock()s it (the CPU stand-in for
// pinned memory). Create() fails with ResourceExhausted naming the size.
class HostBuffer {
 public:
  static ProbeStatus Create(size_t bytes, bool locked, HostBuffer* out);
  HostBuffer() = default;
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  ~HostBuffer();
  void* data() const { return data_; }
  size_t size() const { return size_; }
  bool locked() const { return locked_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }

 private:
  void Release();
  void* data_ = nullptr;
  size_t size_ = 0;
  bool locked_ = false;
};

// Half of physical RAM, the default CPU memory budget.
int64_t DefaultCpuMemoryBudget();

// Provenance of a CPU run (end time filled by FinishProvenance).
Provenance CpuProvenance(const GroupSpec& group);
void FinishProvenance(Provenance* p);

// Relative error of `got` against `want`, scaled by `scale` (e.g. sum |a_k b_k|).
inline double RelError(double got, double want, double scale) {
  const double diff = got - want;
  const double err = (diff < 0 ? -diff : diff) / (scale > 1e-30 ? scale : 1e-30);
  return err == err ? err : 1e300;  // NaN (poisoned, unwritten) counts as wrong
}

}  // namespace moetune::kernels::cpu
