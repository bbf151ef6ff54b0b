// One planning request, as every front door states it -- the CLI (`moetune
// plan`, `moetune predict`), the server API (SubmitPlan, Predict) and the
// validator -- and its one translation to the search.
//
// Predict is the search with the given knobs pinned: whatever the request
// does not pin, the autotuner chooses -- or, when the request asks for run
// defaults and pins the layout, what a run does with those flags unset
// (run_defaults.h) -- through every door alike; what it pins
// goes through the framework's rules (framework_rules.h), so a combination
// the framework refuses is InvalidArgument naming the rule.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/search.h"
#include "planner/search_space.h"
#include "planner/software_stack.h"
#include "planner/training_config.h"

namespace moetune::planner {

// How PredictPinned fills the knobs a request does not pin.
enum class UnpinnedKnobs {
  kSearch,       // the autotuner's choice: the fastest plan that fits
  kRunDefaults,  // what a run does with those flags unset (run_defaults.h),
                 // when the request pins the run layout (PinsRunLayout);
                 // else as kSearch
};

struct PlanRequest {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingShape shape;  // with the objective
  SpaceConstraints constraints;  // pins, allowed precisions and dispatchers,
                                 // routing imbalance
  double max_memory_fraction = kDefaultMaxMemoryFraction;  // (0, 1]
  int top_k = 5;
  bool exhaustive = false;
  int threads = 0;  // 0: one per core
  SoftwareStack stack;  // what the user runs (default: Megatron, the latest
                        // generation); stack.framework selects the rules,
                        // the search space and the step model's pricing
  // Read by PredictPinned only (the CLI's `predict` and the Predict RPC set
  // kRunDefaults unless asked to search).
  UnpinnedKnobs unpinned_knobs = UnpinnedKnobs::kSearch;
  // With kRunDefaults: whether stack.cuda_graph_scope is the caller's; false
  // lets RunDefaultCudaGraphScope decide.
  bool cuda_graph_scope_given = true;
  // Read by PredictPinned only: whether the caller said how the MoE router
  // spreads tokens (constraints.routing or an explicit moe_load_imbalance).
  // false -- the CLI's predict without --routing / --moe-imbalance, the
  // Predict RPC with ROUTING_UNSPECIFIED -- prices constraints.routing (the
  // callers' default, natural: real training) and widens the interval over
  // the other routing too (forced balancing is what benchmark runs use).
  bool routing_given = true;
};

// The search the request asks for.
SearchProblem ProblemOf(const PlanRequest& request);
SearchOptions OptionsOf(const PlanRequest& request);

// The plan search over `cost_model`, with the step model of the request's
// software generation.
absl::StatusOr<SearchResult> PlanSearch(const PlanRequest& request,
                                        std::shared_ptr<const CostModel> cost_model);

// The prediction of the best plan with the request's pins (top 1) -- or,
// with unpinned_knobs == kRunDefaults and the run layout pinned, of the plan
// WithRunDefaults pins (run_defaults.h). Errors as
// Search(): InvalidArgument for bad or framework-refused pins (the message
// names the rule), FailedPrecondition when nothing fits -- except when the
// request pins every knob: that one plan is predicted with fits = false.
// With run defaults filling execution knobs the request did not give
// (RunKnobsNotGiven), the interval is the union of the intervals at the
// defaults and at both ends of what those knobs could be -- eager (no
// graphs, NCCL all-to-all, no overlap) and graphed (graphs on, the whole
// iteration for MoE, every overlap on) -- so it spans what the run may have
// set them to; the basis names both ends' predictions (usually the slow and
// the fast end; not always: full-iteration graphs price natural routing's
// static token budget). A MoE request that does not give its routing
// (routing_given false) gets the union with the other routing's prediction
// as well (its own knob ends included); its basis names that prediction and
// its unmeasured list says "routing not given".
absl::StatusOr<Prediction> PredictPinned(const PlanRequest& request,
                                         std::shared_ptr<const CostModel> cost_model);

// A model given as a preset name or a path to a Hugging Face config.json or
// native model JSON; a cluster as a preset name or a cluster JSON path. A
// path is anything that names a readable file. NotFound (unknown preset,
// listing the known ones) or InvalidArgument (a file that does not parse,
// naming it).
absl::StatusOr<ModelSpec> LoadModelArg(std::string_view preset_or_path);

// The name a model file gives a config that names no model: its file name
// without ".json", or for a ".../NAME/config.json" the folder's name.
std::string ModelNameFromPath(std::string_view path);
absl::StatusOr<ClusterSpec> LoadClusterArg(std::string_view preset_or_path);
// The text of a model/cluster file, or nullopt when the argument is no
// readable file (then it is a preset name).
absl::StatusOr<std::optional<std::string>> ReadIfFile(std::string_view arg);

}  // namespace moetune::planner
