// The autotuner: problem -> candidates -> score -> compare -> derive.
//
//   problem     SearchProblem: model, cluster, training shape (printable).
//   candidates  search_space.h: every (layout, knobs) pair of the space.
//   score       StepModel::Quick() for each candidate the search evaluates:
//               step time, tokens/s/GPU and peak memory; a candidate is
//               feasible when its layout is valid and its peak memory is at
//               most max_memory_fraction x HBM.
//   compare     by tokens/s/GPU, ties broken by enumeration order, so the
//               result does not depend on thread timing.
//   derive      full Predictions (StepModel::Predict) of the top layouts
//               and the Pareto front, each with its pipeline split made
//               explicit (the step model balances stages itself while
//               scoring; frameworks need first/last stage sizes as flags);
//               as that can reorder plans, the search tracks K + 10 layouts
//               and keeps the K best after deriving. Counts and pruning
//               reasons. (Progress reports the best as scored, before this.)
//
// Default mode is an exact branch-and-bound over layouts:
//   1. a layout whose weights and gradients alone exceed the memory limit is
//      dropped
//      (rule kWeightsExceedMemory);
//   2. for each remaining layout and each (precision, dispatcher, overlap)
//      group, the group's head -- no recompute, no offload, grouped GEMM,
//      CUDA graphs -- is scored: its throughput bounds every member of the
//      group from above (rule kBoundBelowTopK prunes groups whose head is
//      below the K-th best layout found);
//      A group whose head fits needs nothing more: its head is its best
//      feasible member (rule kDominatedInGroup). Where the overlap is
//      searched value by value, a group whose overlap level is bounded by
//      another level (OverlapChainPredecessor: two streams by one, none by
//      all but EP) is not scored here while the audit finds the chain
//      holding: it is settled (kDominatedInGroup) when that level's group
//      head of the same layout fits, and otherwise left open with that
//      head's throughput as its bound, its own head scored in step 3 only
//      if the bound reaches the bar;
//   3. groups whose head does not fit are then visited best head first. In
//      a visited group the heads of its (recompute, offload) subgroups are
//      scored, and the same two rules apply one level down: a subgroup whose
//      head fits is settled, one whose head is below the bar is skipped. In
//      the rest, each block head (one per value of the memory-changing
//      member axes, overlap) is scored; it settles its block, whose members
//      differ only in knobs that never make a step faster nor its peak
//      memory lower (rule kSameMemoryOverLimit when it is over the limit).
//      The group's best feasible member competes for the top K.
// Groups are per layout and precision (plus any axis the audit bounds value
// by value, see search_space.h).
// The bound rests on the order of each knob axis (search_space.h): less
// recompute, less offload, grouped GEMM and CUDA graphs never slow a step.
// The Pareto front of the default mode covers the candidates it scored; the
// exhaustive front covers the whole space.
// Exhaustive mode scores every candidate of the space and applies only the
// memory check; it must find the same best plan (search_test.cc checks it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/search_space.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::planner {

// What to plan for.
struct SearchProblem {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingShape shape;
};
// "deepseek-v3 on 1024 x gb200-nvl72 (NVIDIA GB200 ...), seq 4096, gbs 8192,
// pretrain".
std::string ToString(const SearchProblem& problem);

struct SearchProgress {
  uint64_t candidates_total = 0;  // the whole space
  uint64_t candidates_done = 0;   // evaluated or pruned so far
  uint64_t candidates_evaluated = 0;
  double seconds = 0;
  double best_tokens_per_sec_per_gpu = 0;  // 0 until a feasible plan exists
};

// The share of the GPU's memory (ClusterSpec::gpu.hbm_bytes, what
// nvidia-smi reports) a plan may use unless told otherwise: 6% is left for
// what the memory model does not see or misses -- allocator fragmentation
// beyond the 2% it prices, the caching allocator's reserve above the
// tensors' peak -- against its error on the published peaks (tests/validate
// "Memory anchors": mean |error| 4.0%, the worst -9.8%). Until 2026-12-03 the
// presets read NVIDIA's binary GB as decimal, 6.4-6.5% short, and the
// search used 100% of that: the same budget, within half a percent, stated.
inline constexpr double kDefaultMaxMemoryFraction = 0.94;

struct SearchOptions {
  int top_k = 5;            // layouts reported in SearchResult::top (>= 1)
  bool exhaustive = false;  // score every candidate; memory check only
  SpaceConstraints constraints;
  // A plan fits when its peak memory <= max_memory_fraction x HBM. (0, 1].
  double max_memory_fraction = kDefaultMaxMemoryFraction;
  int threads = 0;  // 0: one per hardware thread
  // Whose rules restrict the space (framework_rules.h) and how the layouts
  // are enumerated: MaxText drops the layouts it cannot run, searches FSDP
  // (shard_params) both ways unless pinned and keeps pipeline stages even.
  // Search() requires it to equal StackConstants::framework.
  Framework framework = Framework::kMegatron;
  // The step model's CUDA graphs capture the whole iteration
  // (StackConstants features.graph_full_iteration; Search() sets it from the
  // stack): Megatron's per-layer-graph exclusions do not apply
  // (framework_rules.h MegatronViolation). Only `predict` prices such a
  // stack; the emitted Megatron files write per-layer graphs.
  bool full_iteration_graphs = false;
  // Called from the calling thread about every progress_interval_s while the
  // search runs, and once at the end. May be empty.
  std::function<void(const SearchProgress&)> progress;
  double progress_interval_s = 0.1;
};

// Why candidates were not scored (or not kept). One-line reasons in
// PruneRuleText().
enum class PruneRule {
  kInvalidLayout,         // CheckLayout() rejected the layout (see detail)
  kWeightsExceedMemory,   // default mode: weights + grads over the limit
  kBoundBelowTopK,        // default mode: group head below the K-th best
  kDominatedInGroup,      // default mode: group head fits, so it is the best
  kSameMemoryOverLimit,   // default mode: no less memory than a head over the limit
  kOverMemory,            // scored, peak memory over the limit
  kUnsupportedByModel,    // the step model rejected the configuration
  kFrameworkRule,         // the framework refuses the combination (pinned
                          // values in conflict; see framework_rules.h)
  kFrameworkLayout,       // MaxText: a layout the framework cannot run,
                          // dropped before scoring (the rule in detail)
};
inline constexpr int kNumPruneRules = 9;
std::string_view PruneRuleName(PruneRule rule);
std::string_view PruneRuleText(PruneRule rule);

struct PruneCount {
  PruneRule rule;
  std::string detail;    // the Infeasibility, for kInvalidLayout and
                         // kUnsupportedByModel; the FrameworkRule name for
                         // kFrameworkRule and kFrameworkLayout
  bool evaluated = false;  // scored then rejected (vs never scored)
  uint64_t candidates = 0;
  std::string example;   // one pruned candidate, with its numbers
};

struct Plan {
  ParallelConfig parallel;  // dp resolved
  Knobs knobs;
};
std::string ToString(const Plan& plan);

struct RankedPlan {
  Plan plan;
  Prediction prediction;  // full prediction with breakdown
};

struct SearchResult {
  SearchProblem problem;
  bool exhaustive = false;
  RankedPlan best;
  std::vector<RankedPlan> top;     // best first; one entry per layout
  std::vector<RankedPlan> pareto;  // tokens/s/GPU vs peak memory, by memory
  uint64_t candidates_total = 0;
  uint64_t candidates_evaluated = 0;
  uint64_t candidates_feasible = 0;  // evaluated and fits in memory
  std::vector<PruneCount> pruned;    // every rule that removed something
  double search_seconds = 0;
  double memory_limit_bytes = 0;
  // Default mode: scores spent checking the fastest-first order of the knob
  // axes (not counted as candidates), and the axes where it failed and that
  // were therefore bounded value by value.
  uint64_t audit_evaluations = 0;
  std::vector<std::string> audit_failed_axes;
  // Axes assumed not to change memory that the audit found to change it
  // (scored value by value instead).
  std::vector<std::string> audit_memory_axes;
};

// What the search needs from a step model: the fast estimate for scoring and
// the full prediction for the plans it reports. StepModel provides both
// (Search() wraps it); tests use small hand-checkable scorers.
class CandidateScorer {
 public:
  virtual ~CandidateScorer() = default;
  virtual Estimate Quick(const ParallelConfig& parallel,
                         const Knobs& knobs) const = 0;
  virtual absl::StatusOr<Prediction> Predict(const ParallelConfig& parallel,
                                             const Knobs& knobs) const = 0;
  // Optional fast path for the many knob settings of one layout: Prepare
  // once (true: supported), then QuickPrepared per setting, which must
  // return what Quick(prepared.parallel, knobs) returns. Default: none.
  virtual bool Prepare(const ParallelConfig& /*parallel*/,
                       StepModel::PreparedLayout* /*prepared*/) const {
    return false;
  }
  virtual Estimate QuickPrepared(StepModel::PreparedLayout& prepared,
                                 const Knobs& knobs) const {
    return Quick(prepared.parallel, knobs);
  }
};

// Runs the search with `scorer` (same contract as Search below).
absl::StatusOr<SearchResult> SearchWith(const SearchProblem& problem,
                                        const CandidateScorer& scorer,
                                        const SearchOptions& options);

// Runs the search with the step model over `cost_model`.
//   InvalidArgument / Unimplemented: bad options or constraints (message names
//     the value).
//   FailedPrecondition: no candidate is feasible; the message names the
//     tightest constraint, e.g. "no plan fits in memory: weights and
//     gradients alone need 312.6 GiB per GPU at best (tp=1 pp=8 ep=1 etp=1,
//     the most sharded layout on 8 GPUs), the limit is 74.5 GiB of HBM".
// `stack`: the software generation's constants (default: the latest;
// software_stack.h names them from a container version).
absl::StatusOr<SearchResult> Search(const SearchProblem& problem,
                                    std::shared_ptr<const CostModel> cost_model,
                                    const SearchOptions& options,
                                    const StackConstants& stack = StackConstants());

// JSON: best (Prediction ToJson), top, pareto (each a Prediction ToJson),
// candidates_total, candidates_evaluated, candidates_feasible, pruned (a list
// of {rule, detail, reason, evaluated, candidates, example}), search_seconds,
// mode, problem, memory_limit_gib. Accounting: candidates_total =
// candidates_evaluated + the pruned entries with evaluated = false, and
// candidates_feasible = candidates_evaluated - those with evaluated = true.
nlohmann::json ToJson(const SearchResult& result);

// The --explain table: per rule, candidates removed, its one-line reason and
// one example.
std::string ExplainPruning(const SearchResult& result);

}  // namespace moetune::planner
