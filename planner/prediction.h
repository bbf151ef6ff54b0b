// What the step model answers for one configuration.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "planner/framework.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/training_config.h"

namespace moetune::planner {

enum class TermKind {
  kComputeAttention,    // core attention (flash attention), fwd + bwd
  kComputeDenseGemm,    // projections, dense MLP, shared experts, logits
  kComputeGroupedGemm,  // routed experts
  kComputeOther,        // memory-bound kernels, launches, router, loss
  kRecompute,           // forward work repeated in backward
  kCommTpExposed,
  kCommTpHidden,
  kCommEpExposed,
  kCommEpHidden,
  kCommCpExposed,
  kCommCpHidden,
  kCommPpExposed,
  kCommPpHidden,
  kCommDpExposed,
  kCommDpHidden,
  kPipelineBubble,
  kOptimizer,
  kOffloadExposed,
  kOffloadHidden,
};
std::string_view TermKindName(TermKind kind);
// Hidden terms run in parallel with others and are not on the critical path.
bool IsHidden(TermKind kind);

struct Term {
  std::string name;  // "moe.dispatch", "attention.core", ...
  TermKind kind;
  double seconds = 0;  // per optimizer step, on the slowest pipeline rank
  CostSource source = CostSource::kDatasheetPrior;
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;  // fp32 master weights + Adam moments, sharded
  double activations_bytes = 0;
  double comm_buffers_bytes = 0;
  double reserve_bytes = 0;  // allocator fragmentation, CUDA context, workspaces
  // Host memory, not in Total(): the optimizer-state CPU offload's pinned
  // fp32 weights, gradients and Adam moments (16 B per offloaded parameter).
  double host_optimizer_bytes = 0;
  double Total() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activations_bytes +
           comm_buffers_bytes + reserve_bytes;
  }
  // The tensors alone (what torch's allocated-memory counters see): the
  // total less the reserve and NCCL's buffers.
  double TensorBytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activations_bytes;
  }
};

// The range the measured tokens/s/GPU is expected to fall in, with the
// given coverage (0.8: an 80% interval), from the cross-validated errors of
// comparable published runs (planner/prediction_interval.h). coverage 0:
// not computed.
struct PredictionInterval {
  double coverage = 0;
  double tokens_per_sec_per_gpu_low = 0;
  double tokens_per_sec_per_gpu_high = 0;
  std::string basis;  // which rows' errors set it
  // Settings of this plan that no published run measured; non-empty: the
  // interval is the wider one (see prediction_interval.h).
  std::vector<std::string> unmeasured;
};

// The interval as one line for people, as every text output prints it:
// "80% interval 2272.5 .. 3821.0 tokens/s/GPU (<basis>; <unmeasured, ...>)".
// Empty when the prediction carries none (coverage 0).
std::string IntervalText(const PredictionInterval& interval);

struct Prediction {
  double step_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  double model_flops_per_token = 0;  // Megatron-Bridge counting rule
  double model_tflops_per_gpu = 0;
  double mfu = 0;  // vs the dense peak of the chosen precision
  MemoryBreakdown memory;
  double peak_memory_bytes = 0;  // on the most loaded pipeline rank
  // The last pipeline rank's memory (the same as `memory` when pp == 1).
  // Megatron-Bridge's TensorBoard / W&B memory metrics were written by the
  // last rank alone until 2026-05 (Bridge 2f7f48f6c, issue 3167): what
  // those logs show to compare with, while the peak is usually rank 0's.
  MemoryBreakdown last_stage_memory;
  double last_stage_memory_bytes = 0;
  double hbm_bytes = 0;
  bool fits = false;
  // What host memory holds per GPU: activations from the layer-wise offload
  // (Knobs::offload_layers) and the fine-grained one (Knobs::offload_modules:
  // the in-flight micro-batches' offloaded tensors), plus the optimizer-state
  // CPU offload's share (memory.host_optimizer_bytes), within
  // ClusterSpec::host_memory_bytes_per_gpu when the cluster states it; 0
  // without offload.
  double host_offload_bytes = 0;
  std::vector<Term> breakdown;  // exposed terms sum to step_time_s
  // True when every term came from calibration data.
  bool fully_calibrated = false;
  PredictionInterval interval;

  // The resolved inputs, echoed in ToJson.
  ModelSpec model;
  std::string cluster_name;
  ClusterSpec cluster;  // for the emitters (GPU generation, NVLink domain)
  TrainingShape shape;
  ParallelConfig parallel;  // dp resolved
  Knobs knobs;
  // The busiest EP rank's tokens / the mean this prediction was priced with:
  // knobs.moe_load_imbalance when set, else what knobs.routing implies for
  // this layout (planner/routing.h; 1 for balanced routing or a dense model).
  double moe_load_imbalance_priced = 1.0;
  // Transformer layers on each virtual pipeline stage, in stage order
  // (stage v runs on pipeline rank v % pp), as the step model placed them;
  // the embedding is on stage 0, the output layer, loss and MTP on the last.
  std::vector<int> stage_layers;
  // The framework the plan is for (set by the search from its options). In
  // ToJson as "framework" only when not Megatron, the default, so Megatron
  // outputs stay as they were.
  Framework framework = Framework::kMegatron;
};

// One JSON object: tokens_per_sec_per_gpu, model_tflops_per_gpu,
// step_time_s, mfu, peak_memory_gib, fits, memory, breakdown and config
// (model, cluster, shape, parallel, knobs), and "cost_source"
// ("calibrated", "datasheet_prior" or "mixed").
nlohmann::json ToJson(const Prediction& prediction);

// What Prediction::host_offload_bytes holds, for text: "activations",
// "optimizer state" or "activations and optimizer state".
std::string_view HostOffloadContents(const Prediction& prediction);
nlohmann::json ToJson(const ParallelConfig& parallel);
nlohmann::json ToJson(const Knobs& knobs);

}  // namespace moetune::planner
