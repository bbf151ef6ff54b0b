// Memory per GPU; see internal/step_model_memory.h.
#include "planner/internal/step_model_memory.h"

#include <algorithm>

#include "planner/internal/step_model_data_parallel.h"
#include "planner/internal/step_model_layers.h"

namespace moetune::planner::step_model_internal {

double InflightChunks(int pp, int vp, int r, int m_micro) {
  if (pp <= 1) return 1.0;
  if (vp == 1) return std::min(m_micro, pp - r);
  // Megatron-Core schedules.py get_pp_rank_microbatches (interleaved):
  // warmup = (pp - r - 1) x 2 + (vp - 1) x microbatch_group_size_per_vp_stage
  // (default pp); the 1F1B phase runs one more forward before the first
  // backward. With overlap_moe_expert_parallel_comm the warmup has that
  // extra forward already and the combined 1F1B step (combined_1f1b.py)
  // runs the next chunk's forward layer by layer beside the oldest chunk's
  // backward, which frees as fast as the forward allocates: the same
  // count either way.
  const double warmup = (pp - r - 1) * 2.0 + (vp - 1.0) * pp;
  return std::min<double>(double(m_micro) * vp, warmup + 1.0);
}

double FineGrainedOffloadHostBytes(const ParallelConfig& p, int m_micro, const RankLayers& ranks,
                                   const KindResults& kinds) {
  double most = 0;
  for (int r : {0, p.pp - 1}) {
    double per_mb = 0;
    for (int k = 0; k < kNumLayerKinds; ++k) {
      per_mb += (ranks.counts[r][k] - ranks.counts_rc[r][k]) * kinds.fine_offload_norc[k];
    }
    most = std::max(most, per_mb / p.vp * InflightChunks(p.pp, p.vp, r, m_micro));
  }
  return most;
}

double ShardMainGradAtPeakBytes(double shard_main_grad_bytes, double activation_peak_bytes) {
  // Megatron-Core distrib_optimizer.py _copy_model_grads_to_main_grads
  // (shard_main_param.grad = shard_model_grad.float()) runs inside
  // optimizer.step(), after the last backward has freed the activations;
  // zero_grad(set_to_none=True) frees it again before the next
  // forward_backward_func (megatron/training/training.py train_step). The
  // step's peak is therefore max(activations, fp32 shard grads) above the
  // static memory, not their sum.
  return std::max(0.0, shard_main_grad_bytes - activation_peak_bytes);
}

namespace {

// Activations of pipeline rank r: its layers' activations for one
// micro-batch, the in-flight chunks, the recomputed layer and the logits.
double RankActivationBytes(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                           int m_micro, const RankLayers& ranks, const KindResults& kinds,
                           int r, double one_layer) {
  const bool full = c.knobs->recompute.mode == RecomputeMode::kFull;
  const double inflight_chunks = InflightChunks(p.pp, p.vp, r, m_micro);
  double act_per_mb = 0;  // all layers of the rank, one micro-batch
  for (int k = 0; k < kNumLayerKinds; ++k) {
    const int n_rc = ranks.counts_rc[r][k];
    act_per_mb += n_rc * kinds.act[k] + (ranks.counts[r][k] - n_rc) * kinds.act_norc[k];
  }
  // Layer-wise offload (pp 1): the first layers' activations are on the
  // host; TE keeps the other (L - N) layers' on the GPU at the peak
  // (LayerOffloadExposedSeconds' schedule).
  act_per_mb -= kinds.offloaded_act;
  double bytes = act_per_mb / p.vp * inflight_chunks;
  if (full) bytes += one_layer;
  if (r == p.pp - 1) {
    const double vocab_tp = double(plan.model->PaddedVocabSize()) / p.tp;
    bytes += c.tokens_cp * vocab_tp * kLogitsActivationBytes * (1 + plan.model->mtp_layers);
  }
  return bytes;
}

MemoryBreakdown RankMemory(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                           int m_micro, const RankLayers& ranks, const KindResults& kinds,
                           int r, double one_layer) {
  const ModelSpec& m = *plan.model;
  const double h = double(m.hidden_size);
  const int dp_dense = DenseDpGroup(p);
  const int dp_expert = ExpertDpGroup(p);
  // bf16 + low-precision copy
  const double weight_bytes_per_param = 2.0 + (c.low_precision ? c.operand_bytes : 0.0);
  const RankParams params = ParamsOnRank(plan, p, ranks.counts[r], r);
  const double dense = params.dense, expert = params.expert;
  MemoryBreakdown mem;
  // FSDP keeps a shard of weights and gradients plus the gathered
  // parameters of about two layers (current + prefetched).
  const double shard_div_dense = p.shard_params ? std::max(1, dp_dense) : 1;
  const double shard_div_expert = p.shard_params ? std::max(1, dp_expert) : 1;
  const double local = dense / shard_div_dense + expert / shard_div_expert;
  const double layers = std::max(1, ranks.layers_on_rank[r]);
  const double gathered = p.shard_params ? 2.0 * (dense + expert) / layers : 0.0;
  mem.weights_bytes = (local + gathered) * weight_bytes_per_param;
  mem.activations_bytes =
      RankActivationBytes(plan, c, p, m_micro, ranks, kinds, r, one_layer);
  const double fragmentation = kFragmentationFraction * mem.activations_bytes;
  if (!c.lora) {
    const double shard = OptimizerShardParams(params, dp_dense, dp_expert);
    const AdamBytesPerParam adam = AdamBytes(c.knobs->optimizer_states, c.precision);
    mem.grads_bytes = (local + gathered) * plan.stack->grad_buffer_bytes_per_param +
                      ShardMainGradAtPeakBytes(shard * adam.shard_main_grad,
                                               mem.activations_bytes + fragmentation);
    // Optimizer-state CPU offload: the offloaded share's state lives on the
    // host as fp32 weight, gradient and both moments (HybridDeviceOptimizer's
    // CPU copies; torch's CPU AdamW keeps fp32 moments).
    const double offload = std::clamp(c.knobs->optimizer_offload_fraction, 0.0, 1.0);
    mem.optimizer_bytes = shard * adam.state * (1.0 - offload);
    mem.host_optimizer_bytes = offload * shard * kHostOptimizerStateBytesPerParam;
  }
  // NCCL's buffers on top of the fixed reserve (see kNcclBufferBytes).
  mem.comm_buffers_bytes = kNcclBufferBytes;
  if (p.ep > 1) {
    mem.comm_buffers_bytes += 2.0 * c.tokens_rank * m.moe_top_k * h * kActivationBytes;
  }
  // Userbuffers' own buffers, only where the overlap runs (not for NVFP4).
  if (p.tp > 1 && c.knobs->overlap.tp_comm && TpCommOverlapSupports(c.precision)) {
    mem.comm_buffers_bytes += 2.0 * c.tokens_cp * h * kActivationBytes;
  }
  mem.reserve_bytes = kFixedReserveBytes + fragmentation;
  return mem;
}

}  // namespace

PeakMemory PeakMemoryPerGpu(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                            int m_micro, const RankLayers& ranks, const KindResults& kinds) {
  // The layer being recomputed holds its full activations once.
  double one_layer = 0;
  if (c.knobs->recompute.mode == RecomputeMode::kFull) {
    for (int k = 0; k < kNumLayerKinds; ++k) {
      if (plan.kinds[k].count > 0) {
        one_layer = std::max(one_layer, LayerActivationBytes(plan.kinds[k], c, false));
      }
    }
  }
  PeakMemory best;
  double best_total = -1;
  // With pp == 1 the first and last rank are the same (one pass).
  for (int r : {0, p.pp - 1}) {
    if (r == p.pp - 1 && r == 0 && best_total >= 0) break;
    const MemoryBreakdown mem = RankMemory(plan, c, p, m_micro, ranks, kinds, r, one_layer);
    const double total = mem.Total();
    if (total > best_total) {
      best_total = total;
      best.memory = mem;
    }
    if (r == p.pp - 1) {
      best.last_stage = mem;
      best.last_stage_total_bytes = total;
    }
  }
  best.total_bytes = best_total;
  return best;
}

}  // namespace moetune::planner::step_model_internal
