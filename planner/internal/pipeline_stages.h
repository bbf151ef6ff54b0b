// Pipeline stage assignment of the step model (planner/pipeline_stages.cc):
// how many layers each virtual stage holds, which layer kinds land on each
// pipeline rank (virtual stage v runs on rank v % pp), each rank's time per
// micro-batch, the send/recv terms and the bubble.
#pragma once

#include <array>
#include <vector>

#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

inline constexpr int kMaxPp = 256;

// Layers per virtual stage: the first and last may be fixed (given, or
// balanced against the embedding and the head); the `rest` layers spread
// evenly over the `mid_stages` others, the earlier ones taking the remainder.
struct StageSplit {
  int first = 0, last = 0;
  bool fixed_first = false, fixed_last = false;
  int mid_stages = 0;
  int rest = 0;
};

// kBadUnevenStages when the layers cannot fill the stages, else kNone.
// Balanced split (no stage sizes given, 1 < stages <= L): with avg the mean
// layer time (without recompute), target = (L + (head + embed) / avg) /
// stages layers per stage; the last stage holds round(target - head / avg)
// layers, the first round(target - embed / avg) (Megatron-Bridge pipeline
// layouts do the same). stages > L: one stage holds only the embedding, one
// only the loss.
Infeasibility SplitStages(const ParallelConfig& p, const std::vector<int>& layer_kind_index,
                          const double kind_time_norc[], double head_time,
                          double embed_time, StageSplit* split);

// Layers of each kind on each pipeline rank; only the first pp rows are set.
struct RankLayers {
  int counts[kMaxPp][kNumLayerKinds];
  int counts_rc[kMaxPp][kNumLayerKinds];  // of them fully recomputed
  int layers_on_rank[kMaxPp];
};

// Walks the layers through the virtual stages (kind_prefix[l][k]: layers of
// kind k before layer l). stage_layers (if not null) gets each virtual
// stage's layer count. kTooFewLayers for pp > kMaxPp, kBadUnevenStages when
// the split does not place every layer.
Infeasibility AssignLayers(const ParallelConfig& p, const StageSplit& split,
                           const std::vector<std::array<int, kNumLayerKinds>>& kind_prefix,
                           RankLayers* ranks, std::vector<int>* stage_layers);

// Time of each rank per micro-batch: its layers (the first num_layers of
// each rank fully recomputed, in kind order, or all with num_layers 0),
// plus the embedding on rank 0 and the head on rank pp - 1. Fills
// ranks->counts_rc.
struct RankTimes {
  double time[kMaxPp];
  double sum = 0;
  int bottleneck = 0;  // the slowest rank (the first of equals)
};
void TimeRanks(const ParallelConfig& p, const Recompute& recompute, const KindResults& kinds,
               double embed_time, double head_time, RankLayers* ranks, RankTimes* times);

// PP send/recv of [tr x h] BF16 (sequence-parallel shard) between
// neighbouring stages, 2 ranks, over NVLink when the pp stride (gpus / pp)
// stays inside a domain.
Cost PpSendRecv(const Context& c, const ModelSpec& m, const TrainingShape& shape, int pp);

// Exposed part of one P2P transfer that can overlap only a window of
// compute (the next virtual stage's pass on this rank): max(0, send -
// window). Megatron-Core's interleaved schedule with overlap_p2p_comm posts
// each isend/irecv when the chunk that produces it ends and waits on it
// before the next chunk of the same direction (megatron/core/
// pipeline_parallel/schedules.py, forward_backward_pipelining_with_
// interleaving: pp_post_forward / pp_pre_forward and the backward pair, the
// recv_prev / recv_next wait handles), one chunk pass of the other
// direction in between, so a transfer longer than that pass shows.
double PpTransferExposedSeconds(double send_s, double overlap_window_s);

// Per micro-batch: each virtual stage boundary, activation forward and
// gradient backward: 2 vp x send. The interleaved schedule with the overlap
// hides each transfer behind one chunk pass of this rank (chunk =
// rank_time_per_micro_s / vp; a forward pass 1/3 of it, a backward 2/3,
// the 1 : 2 forward : backward FLOP ratio): exposed = vp x (
// PpTransferExposedSeconds(send, chunk / 3) + PpTransferExposedSeconds(send,
// 2 chunk / 3)); the non-interleaved schedule exposes all of it. Plus 2 vp x
// StackConstants::pp_stage_visit_s handshakes, exposed.
Slots PpSendRecvSlots(const ParallelConfig& p, const Knobs& knobs, const StackConstants& stack,
                      const Cost& send, double rank_time_per_micro_s);

// Fill and drain: (pp - 1) / vp stage-times (1F1B / interleaved 1F1B).
inline double PipelineBubble(const ParallelConfig& p, double t_avg) {
  return p.pp > 1 ? (p.pp - 1) * t_avg / p.vp : 0.0;
}

}  // namespace moetune::planner::step_model_internal
