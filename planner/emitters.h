// Config emitters: a plan and its prediction -> what training frameworks take.
//
// The plan is the configuration the prediction echoes (prediction.parallel,
// with dp resolved, and prediction.knobs); the model and shape come from the
// prediction too, so one Prediction is all an emitter needs.
//   canonical JSON   the plan and the full prediction (format moetune.plan.v1)
//   Megatron-LM      pretrain_gpt.py arguments, as a bash array
//   MaxText          a YAML overrides file for base.yml plus the XLA_FLAGS
//                    and the environment (MaxText plans only)
// Every flag and key emitted exists in Megatron-LM (megatron/training/
// arguments.py) or MaxText (configs/base.yml); where a framework cannot
// express a knob, a comment says so instead of inventing a flag.
// Time-dependent text sits on lines containing "generated_at" only, so golden
// tests can strip them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "planner/hardware.h"
#include "planner/prediction.h"

namespace moetune::planner {

struct EmitContext {
  std::string generated_at;  // e.g. "2026-11-29T18:30:00Z"; empty: omitted
  std::string problem;       // one-line problem description; empty: derived
};

// {"format": "moetune.plan.v1", "generated_at", "problem",
//  "plan": {"parallel", "knobs"}, "prediction": ToJson(prediction)}, indented.
std::string EmitCanonicalJson(const Prediction& prediction,
                              const EmitContext& context);

// A bash array MEGATRON_ARGS=( ... ) with the model shape, the parallel
// layout, batch and sequence, recompute/offload, MoE dispatch, overlap, CUDA
// graphs and precision flags; prediction figures in comments.
std::string EmitMegatronArgs(const Prediction& prediction,
                             const EmitContext& context);

// The MaxText and XLA versions whose keys and flags the MaxText emitter
// writes (tests/maxtext checks the keys against the list recorded from it).
inline constexpr const char* kMaxTextCommit = "e591f30cbbf217ed67ef71263ec0538239f9c3b8";
inline constexpr const char* kXlaCommit = "00ccad5d1736ed6fc9234ae7460407891be5fbe2";

struct MaxTextConfig {
  std::string yaml;       // overrides for MaxText's base.yml
  std::string xla_flags;  // value for the XLA_FLAGS environment variable
  std::vector<std::string> environment;  // "NAME=value" the job exports
};
// Slices of a MaxText job: the fewest that split the GPUs into equal parts
// inside one NVLink domain (ici_* axes stay inside a slice, dcn_* cross).
int MaxTextSlices(int gpus, const ClusterSpec& cluster);
// The plan as MaxText runs it (a plan of --framework maxtext; the mapping of
// layout and knobs onto MaxText's mesh and keys is in framework_rules.h).
// FailedPrecondition for a Megatron plan; InvalidArgument naming the rule
// for a plan MaxText's rules refuse.
absl::StatusOr<MaxTextConfig> EmitMaxText(const Prediction& prediction,
                                          const ClusterSpec& cluster,
                                          const EmitContext& context);
// The YAML with the `export` lines (environment, XLA_FLAGS) as leading
// comments.
std::string RenderMaxText(const MaxTextConfig& config);

// A human-readable summary: the plan, the headline figures and the time
// breakdown.
std::string EmitText(const Prediction& prediction, const EmitContext& context);

}  // namespace moetune::planner
