// Data parallelism and the optimizer step of the step model
// (planner/step_model_data_parallel.cc): parameters per GPU of a pipeline
// rank, the gradient reduce-scatter / parameter all-gather of the
// distributed optimizer (or FSDP) and the Adam step over the local shard.
#pragma once

#include <algorithm>

#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

// Dense parameters are replicated over dp x cp (the gradient group); expert
// parameters over the expert-DP group tp x cp x dp / (ep x etp).
inline int DenseDpGroup(const ParallelConfig& p) { return p.dp * p.cp; }
inline int ExpertDpGroup(const ParallelConfig& p) {
  return p.tp * p.cp * p.dp / (p.ep * p.etp);
}

// Word-embedding-sized matrices (padded vocab x hidden, before TP) that
// pipeline rank r of pp holds under Megatron-Core's GPTModel: the input
// embedding on the first stage (pre_process), the output layer on the last
// (post_process; with pp == 1 and tied embeddings the same matrix), and,
// with MTP modules on the last stage and pp > 1, that stage's own input
// embedding: gpt_model.py builds self.embedding when `pre_process or
// mtp_process` ("there will be both embedding layer and output layer in the
// mtp process stage"), tied to the first stage's, a parameter with its own
// gradient and optimizer state. MaxText (megatron = false) runs the MTP
// block on the model's one embedding: no extra copy.
int EmbeddingMatricesOnRank(int r, int pp, bool tied, int mtp_layers, bool megatron);

// Parameters held per GPU on pipeline rank r: its layers' dense parameters
// / tp and expert parameters / (ep x etp); the embedding-sized matrices of
// EmbeddingMatricesOnRank / tp; rank pp - 1 the MTP modules (a layer of the
// MTP kind plus its 2h x h projection).
struct RankParams {
  double dense = 0;
  double expert = 0;
};
RankParams ParamsOnRank(const PlanTables& plan, const ParallelConfig& p,
                        const int counts[kNumLayerKinds], int r);
// The rank's distributed-optimizer shard, in parameters: dense ones split
// over dp_dense GPUs, expert ones over dp_expert.
inline double OptimizerShardParams(const RankParams& params, int dp_dense, int dp_expert) {
  return params.dense / std::max(1, dp_dense) + params.expert / std::max(1, dp_expert);
}

// The optimizer step: Adam over the local shard of `params` (dense ones
// sharded over dp_dense GPUs, expert ones over dp_expert), memory-bound:
// shard x step_bytes_per_param (AdamBytes().step_traffic) + all local params
// x kGradNormBytesPerParam (the gradient-norm pass reads every local
// gradient). Both frameworks.
Cost OptimizerStepCost(const CostModel& cost, const RankParams& params, int dp_dense, int dp_expert,
                       double step_bytes_per_param);

// The host side of the optimizer-state CPU offload, per step
// (Knobs::optimizer_offload_fraction; HybridDeviceOptimizer.step): for the
// n = fraction x shard parameters stepped on the host,
//   d2h = n x grad_bytes / host link        (gradients to pinned host memory)
//   cpu = n x 28 B / kHostAdamStreamBytesPerSec   (CPU AdamW, one thread)
//   h2d = n x 4 B / host link               (fp32 weights back)
// one after the other (one CPU optimizer; the copies on the compute stream),
// or, with overlap (one optimizer per parameter, copies on their own
// streams), pipelined: max(d2h, cpu, h2d). The GPU waits for all of it: the
// next forward needs the weights. The copies are priced by
// cost.HostOffload (the agent's measured host link where it has one); the
// CPU step is a prior (kHostAdamStreamBytesPerSec).
struct HostOptimizerTerms {
  double d2h_s = 0, cpu_s = 0, h2d_s = 0;
  double exposed_s = 0;
  CostSource copy_source = CostSource::kDatasheetPrior;  // the copies' (cost.HostOffload)
};
HostOptimizerTerms HostOptimizerSeconds(const CostModel& cost, double offloaded_params,
                                        double grad_bytes_per_param, bool overlap);

// Where the data-parallel groups lie (ParallelConfig::dp_outermost picks
// the rank order): inside one NVLink domain or across domains, and how many
// members of a dense (DP x CP) and of an expert DP group share a domain
// (their NICs share the inter-domain traffic, HierarchicalCollective).
struct DpPlacement {
  LinkSpan span = LinkSpan::kNvlinkDomain;
  int dense_per_domain = 1;
  int expert_per_domain = 1;
};
DpPlacement DpGroupPlacement(const ParallelConfig& p, int domain_gpus);

// Distributed optimizer with overlap_grad_reduce / overlap_param_gather:
// the part of one reduce-scatter (rs_s) and one all-gather (ag_s) per step
// left outside compute. Megatron's interleaved schedule launches each model
// chunk's grad sync as soon as that chunk's last backward is done
// (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving: "launch grad
// synchronization" per grad_sync_chunk_id), and waits on each chunk's
// parameter all-gather at its first forward (the DDP forward pre-hook), so
// the traffic splits into vp pieces with pp chunk passes between them:
//   exposed = max(0, [max(rs/v, rs - (v-1) pp t_b / v) - t_b / v]
//                  + [max(ag/v, ag - (v-1) pp t_f / v) - t_f / v]),
// t_b = 2/3 t_max, t_f = 1/3 t_max (t_max: the bottleneck rank's pass of
// one micro-batch). vp = 1: rs + ag - t_max, the non-interleaved rule.
// Not priced: the schedule's alignment of the launches across pipeline
// ranks (grad_sync_microbatch_id = microbatch_id - pipeline_parallel_rank,
// which moves a launch by up to pp - 1 chunk passes) and NCCL kernels
// slowing the compute they overlap.
double DistOptDpExposedSeconds(double rs_s, double ag_s, double t_max_s, int pp, int vp);

struct DpAndOptimizer {
  double dp_exposed_s = 0;  // DP traffic outside its overlap window
  double optimizer_s = 0;
};
// The bottleneck rank's DP collectives and optimizer step (not for LoRA,
// which has no trainable base weights). DP bytes = params x
// kDpCommBytesPerParam per group (HierarchicalCollective); distributed
// optimizer: one reduce-scatter + one all-gather per step, hidden (dp_comm)
// behind one stage time t_max; FSDP: per micro-batch 2 all-gathers + 1
// reduce-scatter, hidden behind the whole step (m_micro x t_max). Optimizer:
// memory-bound, shard x AdamBytes(knobs.optimizer_states).step_traffic + all
// local params x kGradNormBytesPerParam. step (if not null) gets the breakdown terms.
DpAndOptimizer DataParallelAndOptimizer(const CostModel& cost, const ParallelConfig& p,
                                        const Knobs& knobs, int m_micro, double t_max,
                                        const RankParams& params, Slots* step);

}  // namespace moetune::planner::step_model_internal
