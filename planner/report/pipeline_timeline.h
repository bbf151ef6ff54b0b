// One training step of the pipeline schedule, as a timeline the report draws.
//
// The step model (planner/step_model.h) predicts the pipeline bubble as one
// number and does not expose per-micro-batch timings. This file derives them
// from what a Prediction carries, and simulates the schedule that Megatron-LM
// runs (1F1B, and interleaved 1F1B when vp > 1) to place every forward and
// backward pass of every micro-batch on every pipeline rank:
//
//   m        = NumMicroBatches(shape, parallel)   micro-batches per DP rank
//   F_total  = forward share of the rank's compute per step
//   B_total  = backward share (+ all of the recompute term)
//   forward_s  per (micro-batch, model chunk) = F_total / (m x vp)
//   backward_s per (micro-batch, model chunk) = B_total / (m x vp)
//   p2p_s    per message = (PP exposed + PP hidden) / (2 x m x vp)
//
// Forward/backward split of the compute terms (attention, dense GEMM,
// grouped GEMM, other): 1 : 2 for pretraining and full fine-tuning (the
// backward pass computes input and weight gradients), 1 : 1 for LoRA (input
// gradients only). Exposed TP/EP/CP communication sits on each pass's
// critical path and is split 1 : 1 (each forward collective has its mirror in
// backward); hidden communication is drawn on the communication lane under
// the passes it overlaps. Every rank is given the step model's slowest-rank
// times (the model's terms are "on the slowest pipeline rank"), so the
// timeline shows the schedule's bubbles, not stage imbalance.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/prediction.h"

namespace moetune::planner {

// Inputs of the schedule simulation; every time is in seconds.
struct PipelineScheduleSpec {
  int pp = 1;              // pipeline ranks
  int vp = 1;              // model chunks per rank (interleaving)
  int micro_batches = 1;   // per DP rank per step
  double forward_s = 0;    // one micro-batch through one model chunk
  double backward_s = 0;
  double p2p_s = 0;        // one PP send/recv between ranks
  // Per pass: communication overlapped with it (TP/EP/CP hidden), drawn on
  // the communication lane; does not change the schedule.
  double forward_hidden_comm_s = 0;
  double backward_hidden_comm_s = 0;
  // After the last backward pass: exposed DP gradient reduce-scatter (and
  // exposed offload), then the optimizer step. Same on every rank.
  double tail_comm_s = 0;
  double optimizer_s = 0;
};

// The spec for a prediction, derived as documented above.
PipelineScheduleSpec DeriveScheduleSpec(const Prediction& prediction);

enum class PipelineOpKind { kForward, kBackward, kSend, kTailComm, kOptimizer };

struct PipelineOp {
  PipelineOpKind kind = PipelineOpKind::kForward;
  int rank = 0;
  int chunk = 0;        // model chunk (virtual stage) on the rank
  int micro_batch = 0;  // -1 for the tail ops
  double start_s = 0;
  double end_s = 0;
};

struct PipelineTimeline {
  PipelineScheduleSpec spec;
  // Compute-stream ops (forward, backward, optimizer) of every rank, in
  // execution order per rank.
  std::vector<PipelineOp> compute;
  // Communication-lane ops (PP sends, tail communication) of every rank.
  std::vector<PipelineOp> comm;
  double step_s = 0;  // end of the last op
  // Per rank: time the compute stream idles between the step's start and the
  // end of its last backward pass (the pipeline bubble).
  std::vector<double> bubble_s;
};

// Simulates one step: each rank runs its op list in Megatron's order; an op
// starts when the rank is free and its input has arrived (the previous
// stage's forward, or the next stage's backward, plus p2p_s across ranks).
// InvalidArgument for a non-positive pp, vp or micro-batch count, negative
// times, or vp > 1 with pp == 1.
absl::StatusOr<PipelineTimeline> SimulatePipeline(
    const PipelineScheduleSpec& spec);

}  // namespace moetune::planner
