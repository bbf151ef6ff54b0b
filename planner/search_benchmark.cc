// Benchmarks of the autotuner (one protocol: Google Benchmark's warm-up and
// repetitions; `--benchmark_repetitions=5` reports min/median/max).
//
//   bazel run -c opt //planner:search_benchmark
//
// BM_ExhaustiveRate: the exhaustive search (every candidate scored by the
//   step model's Quick(), memory check only) over DeepSeek-V3 on 1,024
//   gb200-nvl72 GPUs (seq 4096, gbs 8192), restricted to pp = 8 so one
//   iteration takes seconds; counter configs_per_sec_per_core = candidates
//   scored / wall seconds / threads. Goal: >= 1,000,000.
// BM_DefaultSearch: the default (branch-and-bound) search of the same
//   problem, whole space, 2 threads. Goal: under 1 s wall.
#include <sys/resource.h>

#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/search.h"

namespace moetune::planner {
namespace {

// User + system CPU seconds of this process so far (all threads): on a busy
// machine, CPU time / threads is what the wall time would be on idle cores.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

SearchProblem DeepSeekV3On1024Gb200() {
  SearchProblem p;
  p.model = *LoadModelPreset("deepseek-v3");
  p.cluster = *LoadClusterPreset("gb200-nvl72");
  p.shape = TrainingShape{1024, 4096, 8192};
  return p;
}

void BM_ExhaustiveRate(benchmark::State& state) {
  const SearchProblem problem = DeepSeekV3On1024Gb200();
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  SearchOptions options;
  options.exhaustive = true;
  options.threads = static_cast<int>(state.range(0));
  options.constraints.fixed.pp = 8;
  uint64_t evaluated = 0;
  double seconds = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    absl::StatusOr<SearchResult> r = Search(problem, cost, options);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    evaluated += r->candidates_evaluated;
    seconds += r->search_seconds;
    benchmark::DoNotOptimize(r->best.prediction.tokens_per_sec_per_gpu);
  }
  state.counters["candidates"] = double(evaluated) / state.iterations();
  state.counters["configs_per_sec_per_core"] =
      double(evaluated) / seconds / options.threads;
  // The same rate per CPU-second actually used (robust to other load).
  state.counters["configs_per_cpu_sec"] =
      double(evaluated) / (ProcessCpuSeconds() - cpu0);
}
BENCHMARK(BM_ExhaustiveRate)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DefaultSearch(benchmark::State& state) {
  const SearchProblem problem = DeepSeekV3On1024Gb200();
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  SearchOptions options;
  options.threads = 2;
  uint64_t evaluated = 0;
  double best = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    absl::StatusOr<SearchResult> r = Search(problem, cost, options);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    evaluated += r->candidates_evaluated;
    best = r->best.prediction.tokens_per_sec_per_gpu;
  }
  state.counters["scored"] = double(evaluated) / state.iterations();
  state.counters["best_tokens_per_sec_per_gpu"] = best;
  // CPU seconds per search over both threads; / 2 = wall on two idle cores.
  state.counters["cpu_s_per_search"] =
      (ProcessCpuSeconds() - cpu0) / state.iterations();
}
BENCHMARK(BM_DefaultSearch)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace moetune::planner
