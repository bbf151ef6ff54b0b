// Data parallelism and the optimizer step of the step model
// (planner/step_model_data_parallel.cc): parameters per GPU of a pipeline
// rank, the gradient reduce-scatter / parameter all-gather of the
// distributed optimizer (or FSDP) and the Adam step over the local shard.
#pragma once

#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

// Dense parameters are replicated over dp x cp (the gradient group); expert
// parameters over the expert-DP group tp x cp x dp / (ep x etp).
inline int DenseDpGroup(const ParallelConfig& p) { return p.dp * p.cp; }
inline int ExpertDpGroup(const ParallelConfig& p) {
  return p.tp * p.cp * p.dp / (p.ep * p.etp);
}

// Parameters held per GPU on pipeline rank r: its layers' dense parameters
// / tp and expert parameters / (ep x etp); rank 0 also the input embedding,
// rank pp - 1 the output layer (unless tied with pp == 1) and the MTP modules
// (a layer of the MTP kind plus its 2h x h projection).
struct RankParams {
  double dense = 0;
  double expert = 0;
};
RankParams ParamsOnRank(const PlanTables& plan, const ParallelConfig& p,
                        const int counts[kNumLayerKinds], int r);

// The optimizer step: Adam over the local shard of `params` (dense ones
// sharded over dp_dense GPUs, expert ones over dp_expert), memory-bound:
// shard x kOptimizerBytesPerParam + all local params x kGradNormBytesPerParam
// (the gradient-norm pass reads every local gradient). Both frameworks.
Cost OptimizerStepCost(const CostModel& cost, const RankParams& params, int dp_dense, int dp_expert);

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
// memory-bound, shard x kOptimizerBytesPerParam + all local params x
// kGradNormBytesPerParam. step (if not null) gets the breakdown terms.
DpAndOptimizer DataParallelAndOptimizer(const CostModel& cost, const ParallelConfig& p,
                                        const Knobs& knobs, int m_micro, double t_max,
                                        const RankParams& params, Slots* step);

}  // namespace moetune::planner::step_model_internal
