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

  // Per-plan tables, public so tests can check them by hand.
  struct LayerKindTables {
    int count = 0;             // layers of this kind
    LayerMacs macs;            // per token, full context
    double causal_context = 0;  // average keys per query (masked)
    double params = 0;         // non-expert parameters of one layer
    double expert_params = 0;  // routed-expert parameters of one layer
    bool moe = false;
    bool sliding = false;
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
  // Per-layer kind index, in layer order (for pipeline stage assignment).
  std::vector<int> layer_kind_index_;
  double logits_macs_per_token_ = 0;
  double mtp_layer_macs_per_token_ = 0;  // one MTP module without logits
  double embedding_params_ = 0;
  double mtp_params_ = 0;
  double mtp_expert_params_ = 0;
};

}  // namespace moetune::planner
