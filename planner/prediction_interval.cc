#include "planner/prediction_interval.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/precision.h"

namespace moetune::planner {

const IntervalTable& ShippedIntervalTable() {
  // From tests/validate (leave-one-container-out, megatron-core-2026 rows;
  // other-stack rows at the shipped constants), 2026-12-07 (each MoE row
  // at its recipe's dispatcher; the EP-overlap schedule's host work priced).
  static const IntervalTable kTable = [] {
    IntervalTable t;
    t.dense = {-0.1237, 0.0731, 43};
    t.moe = {-0.0889, 0.1217, 45};
    t.unmeasured = {-0.1431, 0.4424, 83};
    return t;
  }();
  return kTable;
}

bool EpGroupInsideEightGpuNode(const ClusterSpec& cluster, const ParallelConfig& p) {
  return p.ep > 1 && cluster.nvlink_domain_gpus <= kEightGpuNvlinkNode &&
         p.ep * std::max(1, p.etp) <= cluster.nvlink_domain_gpus;
}

std::vector<std::string> UnmeasuredSettings(const ModelSpec& model, const ClusterSpec& cluster,
                                            const TrainingShape& shape,
                                            const ParallelConfig& p, const Knobs& k) {
  // The envelope of the megatron-core-2026 rows as tests/validate predicts
  // them: CUDA graphs, grouped GEMM, fused de-duplicated dispatch, TP / DP /
  // PP overlap on, the EP A2A overlap either way (most MoE rows' recipes
  // leave it off, the A2A-overlap recipes turn it on), no offload,
  // forced-balanced routing; micro-batches of at most
  // kMeasured{Moe,Dense}MicroBatchTokens tokens; tp <= 8, pp <= 16,
  // cp <= 2, etp 1, 8..1,024 GPUs, FSDP only inside one NVLink domain, the
  // five GPU presets with rows (h100-sxm, b200, b300, gb200-nvl72,
  // gb300-nvl72).
  std::vector<std::string> u;
  const bool moe = model.IsMoe();
  if (!k.cuda_graphs) u.push_back("cuda_graphs off");
  if (moe && !k.grouped_gemm) u.push_back("grouped_gemm off");
  if (moe && p.ep > 1 && k.dispatcher == Dispatcher::kAllToAll) u.push_back("alltoall dispatcher");
  if (k.offload_activations) u.push_back("activation offload");
  // The published rows that ran it (Megatron-Bridge's Llama3-70B FSDP
  // recipes) are priced by the validator with the rule's recompute instead.
  if (k.offload_layers > 0) u.push_back("layer-wise offload");
  // Only a Megatron-Bridge skill card's ladder measures it (outside runs.json).
  if (k.optimizer_offload_fraction > 0) u.push_back("optimizer-state CPU offload");
  if (moe && k.moe_load_imbalance > 1.0) u.push_back("moe_load_imbalance > 1");
  // Every published row forces balance; none measures real-data routing.
  if (moe && k.moe_load_imbalance == 1.0 && k.routing == Routing::kNatural) {
    u.push_back("natural routing");
  }
  // An overlap counts only where the layout has that communication and
  // Megatron could overlap it. TP overlap off is how every published NVFP4
  // row ran (no userbuffers path, TpCommOverlapSupports), and the
  // non-interleaved pipeline has no P2P overlap (Megatron turns it off
  // itself): both measured, not outside the envelope.
  const bool tp_overlap_off =
      p.tp > 1 && !k.overlap.tp_comm && TpCommOverlapSupports(k.precision);
  const bool pp_overlap_off = p.pp > 1 && p.vp > 1 && !k.overlap.pp_comm;
  if (tp_overlap_off || !k.overlap.dp_comm || pp_overlap_off) {
    u.push_back("an overlap off");
  }
  // The combined-1F1B EP overlap with the EP group inside one 8-GPU NVLink
  // node: one runs.json row ran it (Qwen3-30B-A3B on 16 H100, 26.02: the
  // slow row of the contradictory pair, +59%), and the other public runs
  // that did are missed by 7-40% (Megatron-Bridge PR 1760's Qwen3-235B on
  // 64 B200, the 26.02 B300 table row): planner/SEARCH.md "Ties the step
  // model cannot break", planner/FINDINGS.md "The recipes' EP A2A overlap and
  // dispatchers, audited".
  const bool ep_overlap_runs = p.pp == 1 || p.vp > 1;  // Megatron's schedule
  if (moe && k.overlap.ep_comm && ep_overlap_runs && EpGroupInsideEightGpuNode(cluster, p)) {
    u.push_back("EP A2A overlap inside one 8-GPU node");
  }
  const double micro_batch_tokens = double(p.mbs) * double(shape.seq_len);
  const double measured_tokens =
      moe ? kMeasuredMoeMicroBatchTokens : kMeasuredDenseMicroBatchTokens;
  if (micro_batch_tokens > measured_tokens) {
    u.push_back(absl::StrFormat("micro-batch of %.0f tokens (rows: at most %.0f)",
                                micro_batch_tokens, measured_tokens));
  }
  if (p.tp > 8) u.push_back("tp > 8");
  if (p.pp > 16) u.push_back("pp > 16");
  if (p.cp > 2) u.push_back("cp > 2");
  if (p.etp > 1) u.push_back("etp > 1");
  if (shape.gpus > 1024) u.push_back("more than 1,024 GPUs");
  const int dp = p.dp > 0 ? p.dp : ResolvedDp(shape, p);
  if (p.shard_params && p.tp * p.cp * dp > cluster.nvlink_domain_gpus) {
    u.push_back("FSDP across NVLink domains");
  }
  const std::string& c = cluster.name;
  if (c != "h100-sxm" && c != "b200" && c != "b300" && c != "gb200-nvl72" &&
      c != "gb300-nvl72") {
    u.push_back(absl::StrCat("cluster ", c, " (no published rows)"));
  }
  return u;
}

PredictionInterval IntervalFor(double tokens, bool moe, const std::vector<std::string>& unmeasured,
                               const IntervalTable& table) {
  PredictionInterval r;
  const ErrorPercentiles& measured = moe ? table.moe : table.dense;
  // Settings no published run measured: the other-stack rows' errors at
  // the same ranks, never narrower than the measured class's on either side.
  ErrorPercentiles q = measured;
  if (!unmeasured.empty()) {
    q = table.unmeasured;
    q.q10 = std::min(q.q10, measured.q10);
    q.q90 = std::max(q.q90, measured.q90);
  }
  r.coverage = kIntervalCoverage;
  r.tokens_per_sec_per_gpu_low = tokens / (1 + q.q90);
  r.tokens_per_sec_per_gpu_high = tokens / (1 + q.q10);
  r.basis = !unmeasured.empty()
                ? absl::StrCat("settings no published run measured: errors of ", q.rows,
                               " other-stack rows")
                : absl::StrCat("cross-validated errors of ", q.rows, moe ? " MoE" : " dense",
                               " megatron-core-2026 rows");
  r.unmeasured = unmeasured;
  return r;
}

}  // namespace moetune::planner
