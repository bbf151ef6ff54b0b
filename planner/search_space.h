// The candidates of the autotuner: which parallel layouts and knob settings
// exist for a problem, and the user's constraints on them (--fix, allowed
// precisions and dispatchers).
//
// A candidate is one (layout, knobs) pair. The space is the same for the
// default and the exhaustive search:
//   layout: tp, cp, pp (dp derived), ep, etp, vp, mbs, enumerated over
//     divisors so that gpus = tp * cp * pp * dp, then checked with
//     CheckLayout() (each rejection counted under its Infeasibility);
//     limited to tp <= the NVLink domain (TP all-gathers every layer; nobody
//     runs them over the scale-out network), vp <= kMaxVirtualStages and
//     mbs <= kMaxMicroBatch. Uneven first/last stages are left to the step
//     model (it balances embedding, output layer and MTP) unless fixed.
//   knobs: precision x recompute level x offload level x dispatcher x
//     grouped GEMM x overlap level x CUDA graphs, where an axis that cannot
//     matter collapses to one value (no dispatcher or grouped GEMM choice on
//     a dense model or at ep = 1, no MoE offload modules on a dense model).
// Each knob axis lists its values fastest first under the step model's
// physics (less recompute, less offload, grouped GEMM, CUDA graphs never make
// a step slower); the default search relies on that order for its bound and
// the exhaustive search checks it (search_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/precision.h"
#include "planner/training_config.h"

namespace moetune::planner {

// Space limits, shared by both search modes.
// Interleaving beyond 8 virtual stages per rank only adds PP messages; the
// Megatron-Core recipes for the largest MoE models use at most 8.
inline constexpr int kMaxVirtualStages = 8;
// Micro-batches beyond 16 sequences only make the pipeline bubble larger
// (GEMMs are already large at mbs = 1 for seq >= 2048) and memory grows.
inline constexpr int kMaxMicroBatch = 16;

// Values pinned by the user. Unset: searched.
struct FixedKnobs {
  std::optional<int> tp, pp, vp, ep, etp, cp, dp, mbs;
  std::optional<int> first_stage_layers, last_stage_layers;
  std::optional<Recompute> recompute;
  std::optional<uint32_t> offload_modules;  // 0: no offload
  std::optional<Dispatcher> dispatcher;
  std::optional<bool> grouped_gemm;
  std::optional<bool> overlap;  // all four communication overlaps on/off
  std::optional<int> comm_streams;
  std::optional<bool> cuda_graphs;
  std::optional<Precision> precision;
};

// Parses "tp=1,ep=64,recompute=full,dispatcher=alltoall". Keys: tp pp vp ep
// etp cp dp mbs first_stage_layers last_stage_layers (integers),
// recompute (none | full | selective | modules joined by '+', e.g.
// core_attn+moe_act), offload (none | all | modules joined by '+'),
// dispatcher (alltoall | fused_dedup | deepep | hybridep | flex),
// grouped_gemm overlap cuda_graphs (true/false/on/off/1/0),
// comm_streams (1..8), precision (bf16 | fp8 | mxfp8 | nvfp4).
// Empty string: nothing fixed. Errors are InvalidArgument naming the bad key
// or value, e.g. "--fix: unknown key 'tpp' (known: tp, pp, ...)".
absl::StatusOr<FixedKnobs> ParseFixSpec(std::string_view spec);
// The inverse: "tp=1,ep=64" (keys in the order above; "" when none).
std::string ToString(const FixedKnobs& fixed);

// What the user allows beyond --fix. Empty precisions: bf16 only.
// Empty dispatchers: both.
struct SpaceConstraints {
  FixedKnobs fixed;
  std::vector<Precision> precisions;
  std::vector<Dispatcher> dispatchers;
};

// Precisions the GPU has tensor-core modes for, in enum order.
std::vector<Precision> SupportedPrecisions(const GpuSpec& gpu);

// Divisors of n in increasing order (n > 0).
std::vector<int> Divisors(int n);

// One knob axis level that the search enumerates. Ordered fastest first.
struct RecomputeLevel {
  std::string_view name;  // "none", "selective_light", ..., "full"
  Recompute recompute;
};
struct OffloadLevel {
  std::string_view name;  // "none", "moe", "all"
  uint32_t modules = 0;
};
struct OverlapLevel {
  std::string_view name;  // "all_2_streams", "all_1_stream", "none"
  Overlap overlap;
};

// The knob values of one problem, per axis, already restricted by the
// constraints. Built once per search.
struct KnobAxes {
  std::vector<Precision> precisions;
  std::vector<RecomputeLevel> recompute;  // fastest first
  std::vector<OffloadLevel> offload;      // fastest first
  std::vector<Dispatcher> dispatchers;    // used when ep > 1
  std::vector<bool> grouped_gemm;         // fastest first; MoE models only
  std::vector<OverlapLevel> overlap;
  std::vector<bool> cuda_graphs;          // fastest first
};

// The axes for a model under constraints. InvalidArgument when a fixed value
// is not allowed by the other constraints (e.g. precision=nvfp4 on a GPU
// without NVFP4, or dispatcher fixed outside the allowed list).
absl::StatusOr<KnobAxes> BuildKnobAxes(const ModelSpec& model,
                                       const ClusterSpec& cluster,
                                       const SpaceConstraints& constraints);

// The knob settings of a layout, as a flat list of combinations. The
// combinations that share (precision, dispatcher, overlap) form a group; the
// first member of each group (index group * group_size) uses the fastest
// value of every other axis and is the group's "head": no other member of the
// group is faster (the bound of the default search).
struct KnobSet {
  std::vector<Knobs> combos;
  int group_size = 1;  // members per group; combos.size() % group_size == 0
  int num_groups() const {
    return static_cast<int>(combos.size()) / group_size;
  }
};
// Knob combinations for layouts with ep > 1 (expert_parallel) or ep = 1 (no
// dispatch, so one dispatcher). On a dense model both are the same.
KnobSet BuildKnobSet(const KnobAxes& axes, const ModelSpec& model,
                     bool expert_parallel);

// A layout the enumeration rejected, reported once per layout.
struct LayoutRejection {
  Infeasibility reason = Infeasibility::kNone;
  ParallelConfig layout;
};

// Every layout of the space in a fixed order (tp, cp, pp, ep, etp, vp, mbs
// ascending), honouring constraints.fixed. Layouts failing CheckLayout are
// not returned; each is passed to `on_reject` (may be null).
std::vector<ParallelConfig> EnumerateLayouts(
    const ModelSpec& model, const ClusterSpec& cluster,
    const TrainingShape& shape, const FixedKnobs& fixed,
    const std::function<void(const LayoutRejection&)>& on_reject);

// A lower bound on the bytes per GPU that any knob setting of the layout
// needs: the weights alone, at `bytes_per_param` (the least any allowed
// precision stores), on the average pipeline stage (the fullest stage holds
// at least that). Non-expert parameters split over tp, routed experts over
// ep * etp.
double WeightsFloorBytes(const ModelSpec& model, const ParallelConfig& layout,
                         double bytes_per_param);

}  // namespace moetune::planner
