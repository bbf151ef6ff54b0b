// The step model: one training step of a model on a cluster under a parallel
// layout and knobs -> step time, throughput, memory and a breakdown.
//
// Create() builds everything that depends only on (model, cluster, shape):
// per-layer FLOPs and parameter counts, per-layer-kind byte counts. Each
// Predict() is then arithmetic plus a few dozen cost-model lookups. Estimate()
// is the search's fast path: same numbers, no strings, no allocation.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "planner/flops.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/training_config.h"

namespace moetune::planner {

// The fast path's answer. reason != kNone: the layout cannot run and the
// numbers are meaningless.
struct Estimate {
  Infeasibility reason = Infeasibility::kNone;
  double step_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  double peak_memory_bytes = 0;
  bool fits = false;
};

class StepModel {
 public:
  // InvalidArgument for an inconsistent model or shape (non-positive sizes).
  static absl::StatusOr<StepModel> Create(
      const ModelSpec& model, const ClusterSpec& cluster,
      const TrainingShape& shape, std::shared_ptr<const CostModel> cost_model);

  // Full prediction with breakdown. InvalidArgument (one-line reason) for an
  // invalid layout; Unimplemented if the GPU lacks the precision.
  absl::StatusOr<Prediction> Predict(const ParallelConfig& parallel,
                                     const Knobs& knobs) const;

  // The search's fast path: no allocation, no strings.
  Estimate Quick(const ParallelConfig& parallel, const Knobs& knobs) const;

  const ModelSpec& model() const { return model_; }
  const ClusterSpec& cluster() const { return cost_->cluster(); }
  const TrainingShape& shape() const { return shape_; }
  double model_flops_per_token() const { return model_flops_per_token_; }

  // Per-plan tables, public so tests can check them by hand. Element
  // counts are per token of one layer, before dividing by tp.
  struct LayerKindTables {
    int count = 0;              // layers of this kind
    bool moe = false;
    bool sliding = false;
    LayerMacs macs;             // per token, full context
    double causal_context = 0;  // average keys per query under the mask
    double qkv_out_dim = 0;     // output width of the Q/K/V projections
    double num_proj_gemms = 0;  // GEMM launches of the attention block
    double params = 0;          // non-expert parameters of one layer
    double expert_params = 0;   // all routed experts of one layer
    // Memory-bound traffic (elements read + written, forward) of the
    // attention block, the MLP/MoE block (excluding what scales with top-k)
    // and the part that scales with top-k (permute, activation, unpermute).
    double mb_attn_elems = 0;
    double mb_mlp_elems = 0;
    double mb_topk_elems = 0;
    double mb_quant_elems = 0;  // GEMM inputs cast to low precision (fwd)
    // Saved activations (elements) by recompute module.
    double act_norm = 0;        // norm outputs (layernorm recompute)
    double act_attn = 0;        // norm inputs, q/k/v, core output
    double act_mla_up = 0;      // MLA up-projection outputs
    double act_mlp = 0;         // dense MLP fc1/act outputs
    double act_moe = 0;         // routed: permuted inputs, fc1, fc2 outputs
    double act_moe_act = 0;     // routed activation outputs (moe_act)
    double act_shared = 0;      // shared experts
    double kernels_fwd = 0;     // kernel launches in the forward pass
  };
  // Layer kinds: [0] dense full-attention, [1] dense sliding,
  // [2] MoE full-attention, [3] MoE sliding.
  static constexpr int kNumLayerKinds = 4;
  const LayerKindTables& layer_kind(int i) const { return kinds_[i]; }

 private:
  StepModel() = default;
  struct Accumulator;  // defined in step_model.cc
  Infeasibility Evaluate(const ParallelConfig& parallel, const Knobs& knobs,
                         Accumulator* acc) const;

  ModelSpec model_;
  TrainingShape shape_;
  std::shared_ptr<const CostModel> cost_;
  double model_flops_per_token_ = 0;
  LayerKindTables kinds_[kNumLayerKinds];
  // Kind index of each layer, in layer order (pipeline stage assignment).
  std::vector<int> layer_kind_index_;
  int mtp_kind_ = 0;  // MTP modules are shaped as the last layer
  double logits_macs_per_token_ = 0;
  double embedding_params_ = 0;  // one of input embedding / output layer
};

}  // namespace moetune::planner
