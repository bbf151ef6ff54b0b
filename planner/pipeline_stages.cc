// Pipeline stage assignment; see internal/pipeline_stages.h.
#include "planner/internal/pipeline_stages.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace moetune::planner::step_model_internal {

Infeasibility SplitStages(const ParallelConfig& p, const std::vector<int>& layer_kind_index,
                          const double kind_time_norc[], double head_time,
                          double embed_time, StageSplit* split) {
  const int stages = p.pp * p.vp;
  const int L = int(layer_kind_index.size());
  StageSplit& s = *split;
  if (p.first_stage_layers || p.last_stage_layers) {
    s.fixed_first = p.first_stage_layers.has_value();
    s.fixed_last = p.last_stage_layers.has_value();
    s.first = p.first_stage_layers.value_or(0);
    s.last = p.last_stage_layers.value_or(0);
  } else if (stages > L) {
    // One stage holds only the embedding, one only the loss.
    s.fixed_first = s.fixed_last = true;
  } else if (stages > 1) {
    // Balance: the last virtual stage also runs the output layer, loss and
    // MTP; the first the embedding. Count them in average-layer units.
    double sum = 0;
    for (int l = 0; l < L; ++l) sum += kind_time_norc[layer_kind_index[l]];
    const double avg = sum / L;
    const double target = (L + (head_time + embed_time) / avg) / stages;
    s.last = std::max(0, int(std::lround(target - head_time / avg)));
    s.first = std::max(0, int(std::lround(target - embed_time / avg)));
    s.fixed_first = s.fixed_last = true;
    if (s.first + s.last > L) s.first = s.last = 0, s.fixed_first = s.fixed_last = false;
  }
  s.mid_stages = stages - (s.fixed_first ? 1 : 0) - (s.fixed_last ? 1 : 0);
  s.rest = L - (s.fixed_first ? s.first : 0) - (s.fixed_last ? s.last : 0);
  if (s.mid_stages <= 0 && s.rest != 0) return Infeasibility::kBadUnevenStages;
  if (s.mid_stages > 0 && s.rest < 0) return Infeasibility::kBadUnevenStages;
  return Infeasibility::kNone;
}

Infeasibility AssignLayers(const ParallelConfig& p, const StageSplit& split,
                           const std::vector<std::array<int, kNumLayerKinds>>& kind_prefix,
                           RankLayers* ranks, std::vector<int>* stage_layers) {
  // Locals, not reads through p / split / kind_prefix: the stores into
  // *ranks (ints) could alias them, which would redo the divisions below on
  // every stage (measured: +10% on Quick).
  const int pp = p.pp;
  if (pp > kMaxPp) return Infeasibility::kTooFewLayers;
  const int stages = pp * p.vp;
  const int L = int(kind_prefix.size()) - 1;
  const std::array<int, kNumLayerKinds>* const prefix = kind_prefix.data();
  const StageSplit s = split;
  const int per_mid = s.mid_stages > 0 ? s.rest / s.mid_stages : 0;
  const int extra = s.mid_stages > 0 ? s.rest % s.mid_stages : 0;
  // Only the first pp rows are used; zero just those.
  std::memset(ranks->counts, 0, sizeof(ranks->counts[0]) * pp);
  std::memset(ranks->counts_rc, 0, sizeof(ranks->counts_rc[0]) * pp);
  std::memset(ranks->layers_on_rank, 0, sizeof(ranks->layers_on_rank[0]) * pp);
  int layer = 0;
  int mid_index = 0;
  for (int v = 0; v < stages; ++v) {
    int n_layers;
    if (v == 0 && s.fixed_first) {
      n_layers = s.first;
    } else if (v == stages - 1 && s.fixed_last) {
      n_layers = s.last;
    } else {
      n_layers = per_mid + (mid_index < extra ? 1 : 0);
      ++mid_index;
    }
    const int rank = v % pp;
    const int end = layer + std::max(0, std::min(n_layers, L - layer));
    if (stage_layers != nullptr) stage_layers->push_back(end - layer);
    const std::array<int, kNumLayerKinds> lo = prefix[layer];
    const std::array<int, kNumLayerKinds> hi = prefix[end];
    for (int k = 0; k < kNumLayerKinds; ++k) ranks->counts[rank][k] += hi[k] - lo[k];
    ranks->layers_on_rank[rank] += end - layer;
    layer = end;
  }
  if (layer != L) return Infeasibility::kBadUnevenStages;
  return Infeasibility::kNone;
}

void TimeRanks(const ParallelConfig& p, const Recompute& recompute, const KindResults& kinds,
               double embed_time, double head_time, RankLayers* ranks, RankTimes* times) {
  const bool full = recompute.mode == RecomputeMode::kFull;
  const int rc_layers = recompute.num_layers;
  const int pp = p.pp;
  double kind_time[kNumLayerKinds], kind_time_norc[kNumLayerKinds];
  for (int k = 0; k < kNumLayerKinds; ++k) {
    kind_time[k] = kinds.time[k];
    kind_time_norc[k] = kinds.time_norc[k];
  }
  double sum = 0;
  int bottleneck = 0;
  double bottleneck_time = 0;
  for (int r = 0; r < pp; ++r) {
    int left_rc = full ? (rc_layers > 0 ? rc_layers : ranks->layers_on_rank[r]) : 0;
    double t = 0;
    for (int k = 0; k < kNumLayerKinds; ++k) {
      const int n = ranks->counts[r][k];
      const int n_rc = std::min(left_rc, n);
      ranks->counts_rc[r][k] = n_rc;
      left_rc -= n_rc;
      t += n_rc * kind_time[k] + (n - n_rc) * kind_time_norc[k];
    }
    if (r == 0) t += embed_time;
    if (r == pp - 1) t += head_time;
    times->time[r] = t;
    sum += t;
    if (r == 0 || t > bottleneck_time) bottleneck = r, bottleneck_time = t;
  }
  times->sum = sum;
  times->bottleneck = bottleneck;
}

Cost PpSendRecv(const Context& c, const ModelSpec& m, const TrainingShape& shape, int pp) {
  // Megatron's default order tp-cp-ep-dp-pp puts PP outermost (stride
  // gpus / pp); with DP outermost (ParallelConfig::dp_outermost) PP strides
  // over tp x cp only. Both stride values reach the next stage's GPU
  // inside the domain when below its size.
  const int stride = c.dp_outermost ? c.tp * c.cp : shape.gpus / pp;
  const int domain = c.cost->cluster().nvlink_domain_gpus;
  const LinkSpan span = stride < domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  return c.cost->Collective(CollectiveKind::kSendRecv,
                            c.tokens_rank * double(m.hidden_size) * kActivationBytes, 2, span);
}

double PpTransferExposedSeconds(double send_s, double overlap_window_s) {
  return std::max(0.0, send_s - std::max(0.0, overlap_window_s));
}

Slots PpSendRecvSlots(const ParallelConfig& p, const Knobs& knobs, const StackConstants& stack,
                      const Cost& send, double rank_time_per_micro_s) {
  Slots pp_slots;
  if (p.pp <= 1) return pp_slots;
  const double per_mb = 2.0 * p.vp * send.seconds;
  // Megatron overlaps P2P only in the interleaved schedule (vp > 1); the
  // non-interleaved one turns overlap_p2p_comm off (validate_args).
  const bool overlapped = knobs.overlap.pp_comm && p.vp > 1;
  if (overlapped) {
    // Each transfer hides behind one chunk pass of this rank only (steady
    // 1F1B: the activation posted after a forward chunk is waited on before
    // the next forward, a backward chunk (2/3 of a chunk's time) between;
    // the gradient posted after a backward chunk, a forward one (1/3)).
    const double chunk = rank_time_per_micro_s / p.vp;
    const double exposed =
        p.vp * (PpTransferExposedSeconds(send.seconds, chunk / 3.0) +
                PpTransferExposedSeconds(send.seconds, 2.0 * chunk / 3.0));
    pp_slots.Add(kSPpHidden, {per_mb - exposed, send.source});
    pp_slots.Add(kSPpExposed, {exposed, send.source});
  } else {
    pp_slots.Add(kSPpExposed, {per_mb, send.source});
  }
  // Each virtual-stage visit (forward and backward) also waits on its
  // peer's matching send/recv, exposed whatever the overlap.
  if (stack.pp_stage_visit_s > 0) {
    pp_slots.AddSeconds(kSPpExposed, 2.0 * p.vp * stack.pp_stage_visit_s, kPriorBit);
  }
  return pp_slots;
}

}  // namespace moetune::planner::step_model_internal
