// 80% intervals on predictions, from the cross-validated errors of
// comparable published runs, wider where the plan uses settings no
// published run measured.
//
// Where the numbers come from (tests/validate.cc prints and checks them):
// a held-out row's signed error e = predicted / measured - 1, from
// leave-one-container-out cross-validation on the megatron-core-2026 rows of
// shared/validation/runs.json (the data-set constants refit without the
// row's container). For a class of rows (dense, MoE) the errors at the
// split-conformal ranks (tests/internal/intervals.h ConformalRanksFor: of
// n errors the floor((n + 1) x 0.1)-th and ceil((n + 1) x 0.9)-th
// smallest), q10 and q90 below, give measured in [predicted / (1 + q90),
// predicted / (1 + q10)]. Plans using a setting none of those rows used
// (UnmeasuredSettings) get the same ranks of the errors on the other-stack
// rows of runs.json instead (older containers and other frameworks, never
// used to set any constant, each predicted as `moetune predict` prices it,
// with the run defaults for the knobs the row does not publish): the
// model's error where it was not tuned. A prediction that leaves execution
// knobs to the run defaults (PredictPinned; RunKnobsNotGiven in
// run_defaults.h) carries the union of the intervals at the defaults and at
// both ends of what those knobs could be (request.cc KnobEnds: eager -- no
// graphs, NCCL all-to-all, no overlap -- and graphed -- full-iteration
// graphs, every overlap): the run's own settings are a guess the layout does not
// carry, and they move the step by up to ~2x.
// tests/validate also checks, on held-out folds, that such intervals cover
// about 80% (NestedIntervalCoverage, tests/internal/intervals.h).
#pragma once

#include <string>
#include <vector>

#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/training_config.h"

namespace moetune::planner {

inline constexpr double kIntervalCoverage = 0.8;

struct ErrorPercentiles {
  double q10 = 0;  // signed error e = predicted / measured - 1, lower rank
  double q90 = 0;  // upper rank
  int rows = 0;    // held-out rows behind them
};

// The shipped percentiles (regenerate: tests/validate prints them).
struct IntervalTable {
  ErrorPercentiles dense;
  ErrorPercentiles moe;
  ErrorPercentiles unmeasured;
};
const IntervalTable& ShippedIntervalTable();

// The most tokens per micro-batch (micro-batch size x sequence length) of
// the megatron-core-2026 rows, per class: Qwen3-30B-A3B at MBS 8 x 4,096
// (MoE), Llama3-70B at MBS 2 x 8,192 (dense). Larger micro-batches amortise
// the per-micro-batch host time further than any published run measured
// (tests/validate checks these against the rows).
inline constexpr double kMeasuredMoeMicroBatchTokens = 32768;
inline constexpr double kMeasuredDenseMicroBatchTokens = 16384;

// The EP group (ep x etp consecutive ranks) of a MoE layout inside one
// 8-GPU NVLink node of an HGX-style cluster: where runs.json measured no EP
// A2A overlap and the public runs with it are missed (UnmeasuredSettings;
// the Megatron emitter says so beside the flag).
bool EpGroupInsideEightGpuNode(const ClusterSpec& cluster, const ParallelConfig& parallel);

// Settings of the plan outside what the megatron-core-2026 rows measured
// ("cuda_graphs off", "etp > 1", ...), each as a short phrase.
std::vector<std::string> UnmeasuredSettings(const ModelSpec& model, const ClusterSpec& cluster,
                                            const TrainingShape& shape,
                                            const ParallelConfig& parallel, const Knobs& knobs);

// The interval for a prediction of `tokens_per_sec_per_gpu`.
PredictionInterval IntervalFor(double tokens_per_sec_per_gpu, bool moe,
                               const std::vector<std::string>& unmeasured,
                               const IntervalTable& table = ShippedIntervalTable());

}  // namespace moetune::planner
