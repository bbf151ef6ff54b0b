#include "kernels/cpu/cpu_util.h"

#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <cblas.h>

namespace moetune::kernels::cpu {

ProbeStatus TimeSamples(const TimingOptions& timing, const std::function<ProbeStatus()>& before,
                        const std::function<ProbeStatus()>& run, std::vector<double>* samples) {
  samples->clear();
  for (int i = 0; i < timing.warmup_iters + timing.timed_iters; ++i) {
    if (before) MOETUNE_PROBE_RETURN_IF_ERROR(before());
    const auto t0 = std::chrono::steady_clock::now();
    MOETUNE_PROBE_RETURN_IF_ERROR(run());
    const double s = SecondsSince(t0);
    if (i >= timing.warmup_iters) samples->push_back(s);
  }
  return ProbeStatus::Ok();
}

WorkerPool::WorkerPool(int size) {
  for (int i = 0; i < size; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Run(const std::function<void(int)>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = fn;
  pending_ = size();
  ++generation_;
  cv_.notify_all();
  done_cv_.wait(lock, [this] { return pending_ == 0; });
}

void WorkerPool::Loop(int worker) {
  uint64_t seen = 0;
  while (true) {
    std::function<void(int)> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
    }
    fn(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
}

ProbeStatus HostBuffer::Create(size_t bytes, bool locked, HostBuffer* out) {
  out->Release();
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) {
    return ResourceExhausted("aligned_alloc of " + std::to_string(bytes) + " bytes failed");
  }
  if (locked && mlock(p, rounded) != 0) {
    const int err = errno;
    std::free(p);
    return ResourceExhausted("mlock of " + std::to_string(bytes) + " bytes: " + std::strerror(err) +
                             " (raise RLIMIT_MEMLOCK, ulimit -l)");
  }
  out->data_ = p;
  out->size_ = bytes;
  out->locked_ = locked;
  return ProbeStatus::Ok();
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = o.data_;
    size_ = o.size_;
    locked_ = o.locked_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.locked_ = false;
  }
  return *this;
}

HostBuffer::~HostBuffer() { Release(); }

void HostBuffer::Release() {
  if (data_ == nullptr) return;
  if (locked_) munlock(data_, (size_ + 63) / 64 * 64);
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
  locked_ = false;
}

int64_t DefaultCpuMemoryBudget() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page / 2;
}

Provenance CpuProvenance(const GroupSpec& group) {
  Provenance p;
  p.start_time_utc = NowUtcRfc3339();
  p.host = HostName();
  p.backend = "cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) p.device_name = line.substr(colon + 2);
      break;
    }
  }
  struct utsname u;
  if (uname(&u) == 0) p.driver_version = std::string(u.sysname) + " " + u.release;
  p.blas_version = openblas_get_config();
  p.compute_dtype = "fp32";
  p.env = EnvWithPrefixes({"OPENBLAS_", "OMP_", "GLOO_"});
  p.rank = group.rank;
  p.world_size = group.world_size;
  p.ranks_per_node = group.ranks_per_node;
  p.local_rank = group.ranks_per_node > 0 ? group.rank % group.ranks_per_node : group.rank;
  return p;
}

void FinishProvenance(Provenance* p) { p->end_time_utc = NowUtcRfc3339(); }

}  // namespace moetune::kernels::cpu
