// Data parallelism and the optimizer step; see
// internal/step_model_data_parallel.h.
#include "planner/internal/step_model_data_parallel.h"

#include <algorithm>
#include <tuple>

#include "planner/internal/step_model_maxtext.h"

namespace moetune::planner::step_model_internal {

int EmbeddingMatricesOnRank(int r, int pp, bool tied, int mtp_layers, bool megatron) {
  int n = 0;
  if (r == 0) ++n;                            // input embedding
  if (r == pp - 1 && (!tied || pp > 1)) ++n;  // output layer
  if (r == pp - 1 && pp > 1 && mtp_layers > 0 && megatron) ++n;  // the MTP stage's embedding
  return n;
}

RankParams ParamsOnRank(const PlanTables& plan, const ParallelConfig& p,
                        const int counts[kNumLayerKinds], int r) {
  const ModelSpec& m = *plan.model;
  const double h = double(m.hidden_size);
  RankParams rp;
  for (int k = 0; k < kNumLayerKinds; ++k) {
    rp.dense += counts[k] * plan.kinds[k].params / p.tp;
    rp.expert += counts[k] * plan.kinds[k].expert_params / (double(p.ep) * p.etp);
  }
  rp.dense += EmbeddingMatricesOnRank(r, p.pp, m.tie_word_embeddings, m.mtp_layers,
                                      !IsMaxText(*plan.stack)) *
              plan.embedding_params / p.tp;
  if (r == p.pp - 1) {
    if (m.mtp_layers > 0) {
      const StepModel::LayerKindTables& t = plan.kinds[plan.mtp_kind];
      rp.dense += m.mtp_layers * (t.params + 2 * h * h) / p.tp;
      rp.expert += m.mtp_layers * t.expert_params / (double(p.ep) * p.etp);
    }
  }
  return rp;
}

Cost OptimizerStepCost(const CostModel& cost, const RankParams& params, int dp_dense, int dp_expert,
                       double step_bytes_per_param) {
  const double shard = OptimizerShardParams(params, dp_dense, dp_expert);
  return cost.MemoryBound(shard * step_bytes_per_param +
                          (params.dense + params.expert) * kGradNormBytesPerParam);
}

DpPlacement DpGroupPlacement(const ParallelConfig& p, int domain_gpus) {
  const int domain = std::max(1, domain_gpus);
  const int dp_dense = DenseDpGroup(p);
  const int dp_expert = ExpertDpGroup(p);
  DpPlacement w;
  if (!p.dp_outermost) {
    // Megatron's default order tp-cp-ep-dp-pp: the dense DP (x CP) group
    // strides over tp ranks, the expert DP group over ep x etp; the group
    // stays inside a domain when tp x cp x dp GPUs fit in one.
    w.span = p.tp * p.cp * p.dp <= domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
    w.dense_per_domain = std::max(1, std::min(dp_dense, domain / std::max(1, p.tp)));
    w.expert_per_domain = std::max(1, std::min(dp_expert, domain / std::max(1, p.ep * p.etp)));
    return w;
  }
  // Order tp-cp-ep-pp-dp: a replica of tp x cp x pp consecutive GPUs; the
  // dense DP x CP group holds the cp ranks of each replica (consecutive
  // over tp, inside a domain when tp x cp fits) and one member per replica,
  // replicas packing domain / (tp x cp x pp) to a domain. The expert DP
  // group (tp x cp x dp / (ep x etp) members) likewise: the tp x cp / (ep x
  // etp) of each replica, times its replicas per domain.
  const int replica = p.tp * p.cp * p.pp;
  const int replicas_per_domain = std::max(1, std::min(p.dp, domain / std::max(1, replica)));
  w.span = replica * p.dp <= domain ? LinkSpan::kNvlinkDomain : LinkSpan::kScaleOut;
  const int cp_in_domain = p.tp * p.cp <= domain ? p.cp : 1;
  w.dense_per_domain = std::max(1, std::min(dp_dense, cp_in_domain * replicas_per_domain));
  const int expert_in_replica = std::max(1, p.tp * p.cp / std::max(1, p.ep * p.etp));
  w.expert_per_domain =
      std::max(1, std::min(dp_expert, expert_in_replica * replicas_per_domain));
  return w;
}

double DistOptDpExposedSeconds(double rs_s, double ag_s, double t_max_s, int pp, int vp) {
  // Backward is ~2/3 of a stage pass, forward ~1/3 (bwd = 2 x fwd GEMMs).
  const double t_bwd = t_max_s * 2.0 / 3.0;
  const double t_fwd = t_max_s / 3.0;
  const int v = std::max(1, vp);
  if (v == 1) return std::max(0.0, rs_s + ag_s - t_max_s);
  // The reduce-scatter of chunk j is launched when chunk j's last
  // backward is done and the chunks finish pp chunk-backwards apart, so
  // the serialized chain of v pieces of rs_s / v ends max(rs_s / v,
  // rs_s - (v - 1) x pp x t_bwd / v) after the last chunk's grads are
  // ready; that chunk's own backward (t_bwd / v) hides its buckets. The
  // all-gathers, all dispatched at the step's start (align_param_gather),
  // must each end before their chunk's first forward, pp chunk-forwards
  // apart: the same with ag_s and t_fwd. v = 1 is the plain 1F1B rule:
  // rs_s + ag_s - t_max.
  const double spacing_bwd = double(std::max(1, pp)) * t_bwd / v;
  const double spacing_fwd = double(std::max(1, pp)) * t_fwd / v;
  const double rs_tail = std::max(rs_s / v, rs_s - (v - 1) * spacing_bwd) - t_bwd / v;
  const double ag_head = std::max(ag_s / v, ag_s - (v - 1) * spacing_fwd) - t_fwd / v;
  return std::max(0.0, rs_tail + ag_head);
}

DpAndOptimizer DataParallelAndOptimizer(const CostModel& cost, const ParallelConfig& p,
                                        const Knobs& knobs, int m_micro, double t_max,
                                        const RankParams& params, Slots* step) {
  const int domain = cost.cluster().nvlink_domain_gpus;
  const int dp_dense = DenseDpGroup(p);
  const int dp_expert = ExpertDpGroup(p);
  const DpPlacement where = DpGroupPlacement(p, domain);
  DpAndOptimizer out;
  double dp_total = 0, rs_total = 0, ag_total = 0;
  uint8_t src = 0;
  for (auto [n_params, group, per_domain] :
       {std::tuple<double, int, int>{params.dense, dp_dense, where.dense_per_domain},
        std::tuple<double, int, int>{params.expert, dp_expert, where.expert_per_domain}}) {
    if (group <= 1 || n_params <= 0) continue;
    const double bytes = n_params * kDpCommBytesPerParam;
    const Cost rs = HierarchicalCollective(cost, CollectiveKind::kReduceScatter, bytes, group,
                                           where.span, per_domain);
    const Cost ag = HierarchicalCollective(cost, CollectiveKind::kAllGather, bytes, group,
                                           where.span, per_domain);
    // Distributed optimizer: one reduce-scatter and one all-gather per
    // step. FSDP: per micro-batch, gather for forward and for backward,
    // reduce-scatter after backward.
    dp_total += p.shard_params ? m_micro * (2 * ag.seconds + rs.seconds)
                               : rs.seconds + ag.seconds;
    rs_total += rs.seconds;
    ag_total += ag.seconds;
    src |= SourceBit(rs.source) | SourceBit(ag.source);
  }
  if (dp_total > 0) {
    // Windows: distributed optimizer: backward of the last micro-batch
    // (~2/3 of a stage time) for the reduce-scatter, forward of the first
    // (~1/3) for the gather, together one stage time. FSDP prefetches
    // layer by layer through the whole step.
    if (!knobs.overlap.dp_comm) {
      out.dp_exposed_s = dp_total;
    } else if (p.shard_params) {
      out.dp_exposed_s = std::max(0.0, dp_total - m_micro * t_max);
    } else {
      out.dp_exposed_s = DistOptDpExposedSeconds(rs_total, ag_total, t_max, p.pp, p.vp);
    }
    if (step != nullptr) {
      step->AddSeconds(kSDpExposed, out.dp_exposed_s, src);
      step->AddSeconds(kSDpHidden, dp_total - out.dp_exposed_s, src);
    }
  }
  // Optimizer over the local shard: the GPU's FusedAdam on what stays on the
  // GPU, the host's on the offloaded share.
  const AdamBytesPerParam adam = AdamBytes(knobs.optimizer_states, knobs.precision);
  const double offload = std::clamp(knobs.optimizer_offload_fraction, 0.0, 1.0);
  const Cost opt = OptimizerStepCost(cost, params, dp_dense, dp_expert,
                                     adam.step_traffic * (1.0 - offload));
  out.optimizer_s = opt.seconds;
  if (step != nullptr) step->Add(kSOptimizer, opt);
  if (offload > 0) {
    const double shard = OptimizerShardParams(params, dp_dense, dp_expert);
    // The gradient copied is the main gradient the optimizer reads: fp32,
    // or BF16 with BF16 moments (AdamBytes: 8 B of state).
    const double grad_bytes = knobs.optimizer_states == OptimizerStates::kFp32 ? 4.0 : 2.0;
    const HostOptimizerTerms host =
        HostOptimizerSeconds(cost, offload * shard, grad_bytes, knobs.optimizer_offload_overlap);
    out.optimizer_s += host.exposed_s;
    if (step != nullptr) {
      // The copies' source (measured or datasheet) and the CPU step's prior.
      step->AddSeconds(kSOptimizer, host.exposed_s, SourceBit(host.copy_source) | kPriorBit);
    }
  }
  return out;
}

HostOptimizerTerms HostOptimizerSeconds(const CostModel& cost, double offloaded_params,
                                        double grad_bytes_per_param, bool overlap) {
  HostOptimizerTerms t;
  if (offloaded_params <= 0) return t;
  const Cost d2h = cost.HostOffload(offloaded_params * grad_bytes_per_param);
  t.d2h_s = d2h.seconds;
  t.copy_source = d2h.source;
  t.cpu_s = offloaded_params * kHostAdamBytesPerParam / kHostAdamStreamBytesPerSec;
  t.h2d_s = cost.HostOffload(offloaded_params * kHostOptimizerWeightCopyBytesPerParam).seconds;
  t.exposed_s = overlap ? std::max({t.d2h_s, t.cpu_s, t.h2d_s}) : t.d2h_s + t.cpu_s + t.h2d_s;
  return t;
}

}  // namespace moetune::planner::step_model_internal

namespace moetune::planner {

Cost HierarchicalCollective(const CostModel& cost, CollectiveKind kind, double bytes,
                            int group_size, LinkSpan span, int members_per_domain) {
  const Cost flat = cost.Collective(kind, bytes, group_size, span);
  if (span != LinkSpan::kScaleOut || members_per_domain <= 1 ||
      flat.source == CostSource::kCalibrated) {
    return flat;
  }
  // NCCL builds one ring per NIC: each crosses every domain boundary once,
  // so the m members of a domain share the inter-domain traffic over their
  // m NICs (one per GPU in every preset), while the hops inside a domain
  // carry the whole buffer over NVLink; the slower of the two bounds.
  // nccl-tests all_reduce busbw across H100 nodes with one 400G NIC per GPU:
  // 400-450 GB/s, ~8x one NIC's 50 GB/s (Saturn Cloud / Crusoe, "Validating
  // Multi-Node GPU Clusters with NCCL Tests").
  const Cost nics = cost.Collective(kind, bytes / members_per_domain, group_size, span);
  const Cost nvlink = cost.Collective(kind, bytes, group_size, LinkSpan::kNvlinkDomain);
  return {std::max(nics.seconds, nvlink.seconds), CostSource::kDatasheetPrior};
}

}  // namespace moetune::planner
