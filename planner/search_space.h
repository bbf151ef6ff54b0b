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
//     model (it balances embedding, output layer and MTP) unless fixed; the
//     search makes them explicit for the plans it reports. FSDP
//     (shard_params) is searched only when fixed (--fix shard_params=true),
//     except for MaxText (EnumerateLayouts' search_shard_params: both; its
//     default is FSDP). The rank order (dp_outermost) is never searched:
//     Megatron's default order unless fixed (--fix dp_outermost=true); no
//     published pair of runs measures one order against the other, so the
//     search would rank by an effect nothing validates.
//   knobs: precision x recompute level x offload level x dispatcher x
//     grouped GEMM x overlap level x TP overlap x CUDA graphs, where an axis
//     that cannot matter collapses to one value (no dispatcher or grouped
//     GEMM choice on a dense model or at ep = 1, no MoE offload modules on a
//     dense model, no TP overlap choice at tp = 1).
// Each knob axis but the TP overlap lists its values fastest first under
// the step model's physics: less recompute, less offload, grouped GEMM,
// CUDA graphs, de-duplicated dispatch (never more bytes than all-to-all)
// and the EP / DP / PP overlaps on one stream (hides the same communication
// as two streams with less SM contention; overlapping beats not overlapping
// while the contention slowdown is below 2x) never make a step slower. The
// TP overlap has no such order: it splits the GEMMs it overlaps, which can
// cost more than the collectives it hides, so on layouts with TP the search
// bounds it value by value. The default search bounds with the order,
// audits it on a sample of layouts before relying on it, and the exhaustive
// search checks the result (search_exhaustive_test.cc).
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
  std::optional<bool> shard_params;  // FSDP; unset: not searched (false;
                                     // MaxText: both)
  // Megatron's rank order with DP outermost (ParallelConfig::dp_outermost,
  // --use-tp-pp-dp-mapping); unset: not searched (false, the default order).
  std::optional<bool> dp_outermost;
  std::optional<Recompute> recompute;
  std::optional<uint32_t> offload_modules;  // 0: no offload
  // Layer-wise offload (Knobs::offload_layers; never searched: unset = 0).
  // Pinned > 0, the search keeps pp 1, no recompute, no offload_modules and
  // CUDA graphs off (what Megatron runs it with), and refuses pins that
  // contradict that.
  std::optional<int> offload_layers;
  std::optional<Dispatcher> dispatcher;
  std::optional<bool> grouped_gemm;
  std::optional<bool> overlap;  // all four communication overlaps on/off
  // Exactly these overlaps on (the others off): "overlap=tp+ep+dp" in the
  // --fix syntax. Sets `overlap` to whether any is on.
  std::optional<Overlap> overlap_exact;
  std::optional<int> comm_streams;
  std::optional<bool> cuda_graphs;
  std::optional<Precision> precision;
};

// Parses "tp=1,ep=64,recompute=full,dispatcher=alltoall". Keys: tp pp vp ep
// etp cp dp mbs first_stage_layers last_stage_layers (integers),
// shard_params (true/false: FSDP, parameters and gradients sharded over DP),
// dp_outermost (true/false: rank order tp-cp-ep-pp-dp, Megatron
// --use-tp-pp-dp-mapping; false: Megatron's default tp-cp-ep-dp-pp),
// recompute (none | full | selective | modules joined by '+', e.g.
// core_attn+moe_act), offload (none | all | modules joined by '+'),
// offload_layers (a non-negative integer: layer-wise activation offload of the
// first N layers, Megatron --cpu-offloading-num-layers; 0 = off),
// dispatcher (alltoall | fused_dedup | deepep | hybridep | flex),
// grouped_gemm overlap cuda_graphs (true/false/on/off/1/0; overlap also takes
// the communications to overlap joined by '+': tp, ep, dp, pp, or none),
// comm_streams (1..8), precision (bf16 | fp8 | mxfp8 | nvfp4).
// Empty string: nothing fixed. Errors are InvalidArgument naming the bad key
// or value, e.g. "--fix: unknown key 'tpp' (known: tp, pp, ...)".
absl::StatusOr<FixedKnobs> ParseFixSpec(std::string_view spec);
// The inverse: "tp=1,ep=64" (keys in the order above; "" when none).
std::string ToString(const FixedKnobs& fixed);
// Pins every knob of `knobs` in `fixed` (recompute, offload, dispatcher,
// grouped GEMM, exact overlaps, streams, CUDA graphs, precision); the layout
// fields are left as they are.
void PinKnobs(const Knobs& knobs, FixedKnobs* fixed);
// The inverse: sets in `knobs` every knob `fixed` pins (exact overlaps with
// their streams, then comm_streams if pinned); the others keep their values.
void ApplyKnobPins(const FixedKnobs& fixed, Knobs* knobs);
// The layout flags beside the degrees, as `fixed` gives them: shard_params
// and dp_outermost (false when unset: not searched), first/last stage
// layers. The degrees and dp are the caller's.
void ApplyLayoutPins(const FixedKnobs& fixed, ParallelConfig* parallel);

// What the user allows beyond --fix. Empty precisions: bf16 only.
// Empty dispatchers: both.
struct SpaceConstraints {
  FixedKnobs fixed;
  std::vector<Precision> precisions;
  std::vector<Dispatcher> dispatchers;
  // Routing every candidate is priced with (Knobs::routing, planner/
  // routing.h; not searched). The CLI and the API default to kNatural (real
  // training); kBalanced is what the published benchmarks force.
  Routing routing = Routing::kBalanced;
  // An explicit routing imbalance (Knobs::moe_load_imbalance; != 1.0
  // overrides what `routing` implies; not searched).
  double moe_load_imbalance = 1.0;
  // Precision of the Adam state every candidate runs with
  // (Knobs::optimizer_states; not searched: a numerics choice the user
  // makes).
  OptimizerStates optimizer_states = OptimizerStates::kFp32;
  // Optimizer-state CPU offload every candidate runs with
  // (Knobs::optimizer_offload_fraction / optimizer_offload_overlap; not
  // searched: the user states it).
  double optimizer_offload_fraction = 0;
  bool optimizer_offload_overlap = false;
};

// Sets the knobs `c` fixes for every candidate and never searches: the
// routing and its imbalance, the optimizer state's precision and its CPU
// offload.
void ApplyUnsearchedKnobs(const SpaceConstraints& c, Knobs* knobs);

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
  std::string_view name;  // "all_1_stream", "all_2_streams", "all_but_ep" (MoE),
                          // "none" (TP's apart)
  Overlap overlap;
};

// The knob values of one problem, per axis, already restricted by the
// constraints. Built once per search.
struct KnobAxes {
  std::vector<Precision> precisions;
  std::vector<RecomputeLevel> recompute;  // fastest first
  std::vector<OffloadLevel> offload;      // fastest first
  std::vector<Dispatcher> dispatchers;    // fastest first; used when ep > 1
  std::vector<bool> grouped_gemm;         // fastest first; MoE models only
  std::vector<OverlapLevel> overlap;      // fastest first; tp_comm set apart
  std::vector<bool> tp_overlap;           // TP overlap on / off: no order
  std::vector<bool> cuda_graphs;          // fastest first
  int offload_layers = 0;                 // every combo's (not an axis)
};

// The axes for a model under constraints. InvalidArgument when a fixed value
// is not allowed by the other constraints (e.g. precision=nvfp4 on a GPU
// without NVFP4, or dispatcher fixed outside the allowed list).
absl::StatusOr<KnobAxes> BuildKnobAxes(const ModelSpec& model,
                                       const ClusterSpec& cluster,
                                       const SpaceConstraints& constraints);

// The knob axes, for grouping and for the dominance audit of the search.
enum class KnobAxis {
  kPrecision,
  kRecompute,
  kOffload,
  kDispatcher,
  kGroupedGemm,
  kOverlap,
  kCudaGraphs,
  kTpOverlap,
};
inline constexpr int kNumKnobAxes = 8;
std::string_view KnobAxisName(KnobAxis axis);
inline uint32_t AxisBit(KnobAxis axis) {
  return 1u << static_cast<int>(axis);
}

// How many values an axis takes for a layout (dispatcher: 1 at ep = 1 or on
// a dense model; grouped GEMM: 1 on a dense model).
int AxisSize(const KnobAxes& axes, const ModelSpec& model, bool expert_parallel,
             KnobAxis axis);
// `knobs` with `axis` set to its value number `index` (0 = fastest).
Knobs WithAxisValue(const KnobAxes& axes, Knobs knobs, KnobAxis axis,
                    int index);

// The knob settings of a layout, as a flat list of combinations in four
// nested levels:
//   group     axes the search bounds value by value: precision, plus any
//             axis in `group_axes` (an axis whose fastest-first order the
//             search's audit found broken);
//   subgroup  the memory axes, recompute and offload;
//   block     the other axes that change peak memory (overlap: TP overlap
//             needs communication buffers);
//   member    the axes in `neutral_axes`, whose later values never lower
//             peak memory (dispatcher, grouped GEMM, CUDA graphs by default;
//             the search's audit moves one that does to the block level).
// Within a group every non-group axis starts at its fastest value, so the
// group's first combination (its head) is the fastest of the group; likewise
// for the head of each subgroup and each block. No member of a block needs
// less memory than its head.
struct KnobSet {
  std::vector<Knobs> combos;
  int group_size = 1;     // combos.size() % group_size == 0
  int subgroup_size = 1;  // group_size % subgroup_size == 0
  int block_size = 1;     // subgroup_size % block_size == 0
  // The group level's axes, outermost first, and each one's size: group g's
  // value of axis i is (g / product of the later sizes) % group_axis_sizes[i].
  std::vector<KnobAxis> group_axes;
  std::vector<int> group_axis_sizes;
  int num_groups() const {
    return static_cast<int>(combos.size()) / group_size;
  }
  int subgroups_per_group() const { return group_size / subgroup_size; }
  int blocks_per_subgroup() const { return subgroup_size / block_size; }
};
// The member axes assumed never to lower memory until an audit says otherwise.
inline constexpr uint32_t kDefaultNeutralAxes =
    (1u << static_cast<int>(KnobAxis::kDispatcher)) |
    (1u << static_cast<int>(KnobAxis::kGroupedGemm)) |
    (1u << static_cast<int>(KnobAxis::kCudaGraphs));
// The overlap level that bounds `value` from above when the overlap axis is
// searched value by value (its fastest-first order broken: with the EP A2A
// overlap's schedule host work, "all_but_ep" can beat "all"), or -1: a
// second stream only adds the overlap's SM contention, so "all_2_streams" is
// no faster than "all_1_stream", and "none" drops the DP / PP overlaps too,
// so it is no faster than "all_but_ep" (than the first "all" level for a
// dense model). The search's audit checks both on its sample before it
// relies on them.
int OverlapChainPredecessor(const KnobAxes& axes, int value);

// Knob combinations for layouts with ep > 1 (expert_parallel) or ep = 1 (no
// dispatch, so one dispatcher). On a dense model both are the same.
KnobSet BuildKnobSet(const KnobAxes& axes, const ModelSpec& model,
                     bool expert_parallel, uint32_t group_axes = 0,
                     uint32_t neutral_axes = kDefaultNeutralAxes);

// A layout the enumeration rejected, reported once per layout.
struct LayoutRejection {
  Infeasibility reason = Infeasibility::kNone;
  ParallelConfig layout;
};

// Every layout of the space in a fixed order (tp, cp, pp, ep, etp, vp, mbs
// ascending), honouring constraints.fixed. Layouts failing CheckLayout are
// not returned; each is passed to `on_reject` (may be null).
// search_shard_params: each layout also with FSDP (shard_params = true)
// unless fixed.shard_params pins it (MaxText, whose default is FSDP).
std::vector<ParallelConfig> EnumerateLayouts(
    const ModelSpec& model, const ClusterSpec& cluster,
    const TrainingShape& shape, const FixedKnobs& fixed,
    const std::function<void(const LayoutRejection&)>& on_reject,
    bool search_shard_params = false);

// A lower bound on the bytes per GPU that any knob setting of the layout
// needs: its parameters at 2 bytes each (Megatron keeps BF16 weights at every
// GEMM precision) plus, unless only adapters train (lora), 2 bytes of
// gradient each (the narrowest main-gradient type, --main-grads-dtype bf16),
// on the average pipeline stage (the fullest holds at least that).
// Non-expert parameters split over tp, routed experts over ep * etp; with
// shard_params both are further split over their data-parallel groups.
double WeightsFloorBytes(const ModelSpec& model, const ParallelConfig& layout,
                         bool lora);
// The model's part of that bound, computed once per model (the search asks
// for the floor of every layout): routed-expert and other parameters.
struct WeightsFloorParams {
  double expert = 0;      // routed experts of the decoder layers
  double non_expert = 0;  // everything else less the MTP layers' experts
};
WeightsFloorParams WeightsFloorParamsOf(const ModelSpec& model);
double WeightsFloorBytes(const WeightsFloorParams& params, const ParallelConfig& layout,
                         bool lora);

}  // namespace moetune::planner
