// Times one StepModel::Predict (full prediction with breakdown) and one
// StepModel::Quick (the search's fast path) for DeepSeek-V3 on 1,024
// GB200-NVL72 GPUs, seq 4096, global batch 8192, after the per-plan tables
// are built. Google Benchmark reports the mean over many iterations; run
// with --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
// for the median.
//
//   bazel run -c opt //planner:step_model_benchmark --
//       --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <cstdlib>
#include <memory>

#include "benchmark/benchmark.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::planner {
namespace {

struct Fixture {
  StepModel model;
  ParallelConfig parallel;
  Knobs knobs;
};

const Fixture& DeepSeekOn1024Gb200() {
  static const Fixture* const kFixture = [] {
    absl::StatusOr<ModelSpec> m = LoadModelPreset("deepseek-v3");
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
    if (!m.ok() || !c.ok()) std::abort();
    const TrainingShape shape{1024, 4096, 8192};
    absl::StatusOr<StepModel> sm = StepModel::Create(
        *m, *c, shape, std::make_shared<DatasheetCostModel>(*c));
    if (!sm.ok()) std::abort();
    ParallelConfig p;
    p.tp = 1;
    p.pp = 8;
    p.vp = 4;
    p.ep = 64;
    p.mbs = 1;
    Knobs k;
    k.precision = Precision::kMxfp8;
    k.recompute.mode = RecomputeMode::kSelective;
    k.recompute.modules = kRecomputeMlaUpProj | kRecomputeMoeAct | kRecomputeLayerNorm;
    return new Fixture{*std::move(sm), p, k};
  }();
  return *kFixture;
}

void BM_PredictDeepSeekV3_1024Gb200(benchmark::State& state) {
  const Fixture& f = DeepSeekOn1024Gb200();
  for (auto _ : state) {
    absl::StatusOr<Prediction> p = f.model.Predict(f.parallel, f.knobs);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_PredictDeepSeekV3_1024Gb200);

void BM_QuickDeepSeekV3_1024Gb200(benchmark::State& state) {
  const Fixture& f = DeepSeekOn1024Gb200();
  for (auto _ : state) {
    Estimate e = f.model.Quick(f.parallel, f.knobs);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_QuickDeepSeekV3_1024Gb200);

// The search's path: the layout prepared once, then Quick per knob setting.
void BM_QuickPreparedDeepSeekV3_1024Gb200(benchmark::State& state) {
  const Fixture& f = DeepSeekOn1024Gb200();
  StepModel::PreparedLayout prepared;
  f.model.Prepare(f.parallel, &prepared);
  for (auto _ : state) {
    Estimate e = f.model.Quick(prepared, f.knobs);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_QuickPreparedDeepSeekV3_1024Gb200);

void BM_CreateDeepSeekV3_1024Gb200(benchmark::State& state) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset("deepseek-v3");
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("gb200-nvl72");
  auto cost = std::make_shared<DatasheetCostModel>(*c);
  for (auto _ : state) {
    absl::StatusOr<StepModel> sm =
        StepModel::Create(*m, *c, TrainingShape{1024, 4096, 8192}, cost);
    benchmark::DoNotOptimize(sm);
  }
}
BENCHMARK(BM_CreateDeepSeekV3_1024Gb200);

}  // namespace
}  // namespace moetune::planner
