// Google Benchmark front end for the single-process CPU twins: each benchmark
// iteration runs the probe once (verification off) and reports the probe's
// own median as the manual time, so the numbers match the probe results.
//
//   bazel run -c opt //kernels/cpu:cpu_probes_benchmark
#include <string>

#include "benchmark/benchmark.h"
#include "kernels/cpu/cpu_probes.h"

namespace moetune::kernels::cpu {
namespace {

void RunAndReport(benchmark::State& state, const ProbeParams& params, const std::string& measurement) {
  for (auto _ : state) {
    ProbeResult r;
    const ProbeStatus s = RunCpuProbe(params, GroupSpec{}, &r);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    const Measurement* m = r.Find(measurement);
    if (m == nullptr) {
      state.SkipWithError(("no measurement " + measurement).c_str());
      return;
    }
    state.SetIterationTime(m->PlannerSeconds());
    if (m->tflops) state.counters["TFLOPS"] = *m->tflops;
    if (m->alg_bw_gbps) state.counters["GB/s"] = *m->alg_bw_gbps;
    if (m->efficiency_vs_reference) state.counters["eff_vs_ref"] = *m->efficiency_vs_reference;
  }
}

// Args: experts, total tokens; impl 0 = loop, 1 = grouped, 2 = dense_ref.
void BM_GroupedGemmFwd(benchmark::State& state) {
  GroupedGemmParams p;
  p.num_experts = state.range(0);
  p.total_tokens = state.range(1);
  p.hidden = 1024;
  p.ffn_hidden = 512;
  p.distribution = TokenDistribution::Zipf(1.2);
  p.backward_data = p.backward_weight = false;
  p.timing.verify = false;
  p.timing.warmup_iters = 1;
  p.timing.timed_iters = 3;
  static const char* kImpl[] = {"fwd/loop", "fwd/grouped", "fwd/dense_ref"};
  RunAndReport(state, p, kImpl[state.range(2)]);
}
BENCHMARK(BM_GroupedGemmFwd)
    ->ArgsProduct({{8, 64}, {2048}, {0, 1, 2}})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// Args: bytes; pinned (mlock) = 1, pageable = 0.
void BM_OffloadH2D(benchmark::State& state) {
  OffloadParams p;
  p.sizes_bytes = {state.range(0)};
  p.pinned = state.range(1) == 1;
  p.pageable = !p.pinned;
  p.device_to_host = false;
  p.under_gemm = false;
  p.timing.verify = false;
  RunAndReport(state, p,
               "h2d/" + std::string(p.pinned ? "pinned" : "pageable") + "/" + std::to_string(state.range(0)));
}
// A fixed iteration count: each iteration is a whole probe run (allocation,
// provenance), far longer than the microseconds it reports.
BENCHMARK(BM_OffloadH2D)->ArgsProduct({{1 << 20, 4 << 20}, {0, 1}})->UseManualTime()->Iterations(5);

}  // namespace
}  // namespace moetune::kernels::cpu
