// CPU twin of the host-offload probe: memcpy between a "device" buffer (plain
// host memory standing in for HBM) and a host buffer that is pinned (mlock'ed)
// or pageable (plain), alone and while a GEMM runs on another thread.
#include <atomic>
#include <cstring>
#include <thread>

#include <cblas.h>

#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/measurement_roles.h"
#include "kernels/random.h"

namespace moetune::kernels::cpu {
namespace {

// Runs sgemm back to back on its own thread until stopped; counts GEMMs.
class BackgroundGemm {
 public:
  BackgroundGemm(int64_t m, int64_t n, int64_t k, uint64_t seed)
      : m_(m), n_(n), k_(k), a_(UniformValues(seed, m * k)), b_(UniformValues(seed + 1, k * n)),
        c_(m * n) {}
  ~BackgroundGemm() { Stop(); }
  void Start() {
    stop_ = false;
    count_ = 0;
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m_, n_, k_, 1.0f, a_.data(), k_,
                    b_.data(), n_, 0.0f, c_.data(), n_);
        count_.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int64_t count() const { return count_.load(); }
  double Flops() const { return GemmFlops(m_, n_, k_); }

 private:
  int64_t m_, n_, k_;
  std::vector<float> a_, b_, c_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> count_{0};
  std::thread thread_;
};

}  // namespace

ProbeStatus RunOffload(const OffloadParams& p, ProbeResult* result) {
  int64_t max_size = 0;
  for (int64_t s : p.sizes_bytes) max_size = std::max(max_size, s);
  HostBuffer device;
  MOETUNE_PROBE_RETURN_IF_ERROR(HostBuffer::Create(max_size, false, &device));
  std::unique_ptr<BackgroundGemm> gemm;
  if (p.under_gemm) {
    gemm = std::make_unique<BackgroundGemm>(p.gemm_m, p.gemm_n, p.gemm_k, p.timing.seed);
  }
  for (bool pinned : {true, false}) {
    if ((pinned && !p.pinned) || (!pinned && !p.pageable)) continue;
    HostBuffer host;
    MOETUNE_PROBE_RETURN_IF_ERROR(HostBuffer::Create(max_size, pinned, &host));
    const std::vector<float> pattern = UniformValues(StreamSeed(p.timing.seed, 0, 20), max_size / 4);
    for (int64_t size : p.sizes_bytes) {
      for (bool h2d : {true, false}) {
        if ((h2d && !p.host_to_device) || (!h2d && !p.device_to_host)) continue;
        char* dst = h2d ? device.as<char>() : host.as<char>();
        char* src = h2d ? host.as<char>() : device.as<char>();
        for (bool concurrent : {false, true}) {
          if (concurrent && !gemm) continue;
          Measurement m;
          m.name = roles::OffloadName({h2d, pinned, size, concurrent});
          m.labels = {{"direction", h2d ? "h2d" : "d2h"},
                      {"host_memory", pinned ? "pinned(mlock)" : "pageable"},
                      {"size_bytes", std::to_string(size)},
                      {"under_gemm", concurrent ? "true" : "false"}};
          if (p.timing.verify) {  // poisoned destination must hold the source afterwards
            std::memcpy(src, pattern.data(), std::min<size_t>(size, pattern.size() * 4));
            std::memset(dst, 0xff, size);
            std::memcpy(dst, src, size);
            if (std::memcmp(dst, src, size) != 0) {
              return DataLoss("offload " + m.name + " (cpu): copy differs from its source");
            }
            m.verified = true;
          }
          if (concurrent) gemm->Start();
          MOETUNE_PROBE_RETURN_IF_ERROR(TimeSamples(p.timing, nullptr, [&] {
            std::memcpy(dst, src, size);
            return ProbeStatus::Ok();
          }, &m.samples_seconds));
          if (concurrent) {
            gemm->Stop();
            double total = 0;
            for (double s : m.samples_seconds) total += s;
            m.values["background_gemms"] = static_cast<double>(gemm->count());
            m.values["copy_seconds_total"] = total;
          }
          m.bytes = static_cast<double>(size);
          m.Finalize();
          result->measurements.push_back(std::move(m));
        }
      }
    }
  }
  // Slowdown of each copy under the GEMM vs alone.
  for (auto& m : result->measurements) {
    const std::string suffix = "/under_gemm";
    if (m.name.size() > suffix.size() && m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      if (const Measurement* alone = result->Find(m.name.substr(0, m.name.size() - suffix.size()))) {
        if (alone->PlannerSeconds() > 0) m.efficiency_vs_reference = alone->PlannerSeconds() / m.PlannerSeconds();
      }
    }
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cpu
