#include "planner/prediction.h"

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include "planner/units.h"

namespace moetune::planner {

std::string IntervalText(const PredictionInterval& iv) {
  if (iv.coverage <= 0) return "";
  return absl::StrFormat("%.0f%% interval %.1f .. %.1f tokens/s/GPU (%s%s)", 100 * iv.coverage,
                         iv.tokens_per_sec_per_gpu_low, iv.tokens_per_sec_per_gpu_high, iv.basis,
                         iv.unmeasured.empty() ? "" : "; " + absl::StrJoin(iv.unmeasured, ", "));
}

std::string_view TermKindName(TermKind kind) {
  switch (kind) {
    case TermKind::kComputeAttention:
      return "compute.attention";
    case TermKind::kComputeDenseGemm:
      return "compute.dense_gemm";
    case TermKind::kComputeGroupedGemm:
      return "compute.grouped_gemm";
    case TermKind::kComputeOther:
      return "compute.other";
    case TermKind::kRecompute:
      return "compute.recompute";
    case TermKind::kCommTpExposed:
      return "comm.tp.exposed";
    case TermKind::kCommTpHidden:
      return "comm.tp.hidden";
    case TermKind::kCommEpExposed:
      return "comm.ep.exposed";
    case TermKind::kCommEpHidden:
      return "comm.ep.hidden";
    case TermKind::kCommCpExposed:
      return "comm.cp.exposed";
    case TermKind::kCommCpHidden:
      return "comm.cp.hidden";
    case TermKind::kCommPpExposed:
      return "comm.pp.exposed";
    case TermKind::kCommPpHidden:
      return "comm.pp.hidden";
    case TermKind::kCommDpExposed:
      return "comm.dp.exposed";
    case TermKind::kCommDpHidden:
      return "comm.dp.hidden";
    case TermKind::kPipelineBubble:
      return "pipeline_bubble";
    case TermKind::kOptimizer:
      return "optimizer";
    case TermKind::kOffloadExposed:
      return "offload.exposed";
    case TermKind::kOffloadHidden:
      return "offload.hidden";
  }
  return "unknown";
}

bool IsHidden(TermKind kind) {
  switch (kind) {
    case TermKind::kCommTpHidden:
    case TermKind::kCommEpHidden:
    case TermKind::kCommCpHidden:
    case TermKind::kCommPpHidden:
    case TermKind::kCommDpHidden:
    case TermKind::kOffloadHidden:
      return true;
    default:
      return false;
  }
}

nlohmann::json ToJson(const ParallelConfig& p) {
  nlohmann::json j;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["vp"] = p.vp;
  j["ep"] = p.ep;
  j["etp"] = p.etp;
  j["cp"] = p.cp;
  j["dp"] = p.dp;
  j["mbs"] = p.mbs;
  j["shard_params"] = p.shard_params;
  // The rank order (ParallelConfig::dp_outermost): Megatron's default or
  // --use-tp-pp-dp-mapping.
  j["dp_outermost"] = p.dp_outermost;
  j["rank_order"] = std::string(RankOrderName(p));
  j["first_stage_layers"] = p.first_stage_layers
                                ? nlohmann::json(*p.first_stage_layers)
                                : nlohmann::json(nullptr);
  j["last_stage_layers"] = p.last_stage_layers
                               ? nlohmann::json(*p.last_stage_layers)
                               : nlohmann::json(nullptr);
  return j;
}

nlohmann::json ToJson(const Knobs& k) {
  nlohmann::json j;
  j["precision"] = std::string(PrecisionName(k.precision));
  j["recompute"] = std::string(RecomputeModeName(k.recompute.mode));
  j["recompute_modules"] = RecomputeModulesName(k.recompute.modules);
  j["recompute_num_layers"] = k.recompute.num_layers;
  j["offload_activations"] = k.offload_activations;
  j["offload_modules"] = OffloadModulesName(k.offload_modules);
  j["offload_layers"] = k.offload_layers;
  j["dispatcher"] = std::string(DispatcherName(k.dispatcher));
  j["grouped_gemm"] = k.grouped_gemm;
  j["routing"] = std::string(RoutingName(k.routing));
  j["moe_load_imbalance"] = k.moe_load_imbalance;
  j["overlap_tp_comm"] = k.overlap.tp_comm;
  j["overlap_ep_comm"] = k.overlap.ep_comm;
  j["overlap_dp_comm"] = k.overlap.dp_comm;
  j["overlap_pp_comm"] = k.overlap.pp_comm;
  j["num_comm_streams"] = k.overlap.num_comm_streams;
  j["cuda_graphs"] = k.cuda_graphs;
  j["optimizer_states"] = std::string(OptimizerStatesName(k.optimizer_states));
  j["optimizer_offload_fraction"] = k.optimizer_offload_fraction;
  j["optimizer_offload_overlap"] = k.optimizer_offload_overlap;
  return j;
}

std::string_view HostOffloadContents(const Prediction& p) {
  const bool optimizer = p.memory.host_optimizer_bytes > 0;
  const bool activations = p.host_offload_bytes > p.memory.host_optimizer_bytes;
  return optimizer && activations ? "activations and optimizer state"
         : optimizer              ? "optimizer state"
                                  : "activations";
}

nlohmann::json ToJson(const Prediction& p) {
  nlohmann::json j;
  if (p.framework != Framework::kMegatron) j["framework"] = FrameworkName(p.framework);
  j["step_time_s"] = p.step_time_s;
  j["tokens_per_sec_per_gpu"] = p.tokens_per_sec_per_gpu;
  j["model_flops_per_token"] = p.model_flops_per_token;
  j["model_tflops_per_gpu"] = p.model_tflops_per_gpu;
  j["mfu"] = p.mfu;
  j["peak_memory_bytes"] = p.peak_memory_bytes;
  j["peak_memory_gib"] = p.peak_memory_bytes / units::kGiB;
  j["hbm_gib"] = p.hbm_bytes / units::kGiB;
  j["fits"] = p.fits;
  if (p.host_offload_bytes > 0) j["host_offload_gib"] = p.host_offload_bytes / units::kGiB;
  j["moe_load_imbalance_priced"] = p.moe_load_imbalance_priced;
  auto memory_json = [](const MemoryBreakdown& m) {
    nlohmann::json out{
        {"weights_bytes", m.weights_bytes},
        {"grads_bytes", m.grads_bytes},
        {"optimizer_bytes", m.optimizer_bytes},
        {"activations_bytes", m.activations_bytes},
        {"comm_buffers_bytes", m.comm_buffers_bytes},
        {"reserve_bytes", m.reserve_bytes},
    };
    // Host memory (not in the GPU's peak): only where the optimizer is offloaded.
    if (m.host_optimizer_bytes > 0) out["host_optimizer_bytes"] = m.host_optimizer_bytes;
    return out;
  };
  j["memory"] = memory_json(p.memory);
  if (p.parallel.pp > 1) {
    // The last pipeline rank's own (what its memory logs show).
    j["last_stage_memory_bytes"] = p.last_stage_memory_bytes;
    j["last_stage_memory"] = memory_json(p.last_stage_memory);
  }
  nlohmann::json terms = nlohmann::json::array();
  bool any_calibrated = false;
  for (const Term& t : p.breakdown) {
    terms.push_back({{"name", t.name},
                     {"kind", std::string(TermKindName(t.kind))},
                     {"hidden", IsHidden(t.kind)},
                     {"seconds", t.seconds},
                     {"source", std::string(CostSourceName(t.source))}});
    any_calibrated = any_calibrated || t.source == CostSource::kCalibrated;
  }
  j["breakdown"] = terms;
  if (p.interval.coverage > 0) {
    j["interval"] = {{"coverage", p.interval.coverage},
                     {"tokens_per_sec_per_gpu_low", p.interval.tokens_per_sec_per_gpu_low},
                     {"tokens_per_sec_per_gpu_high", p.interval.tokens_per_sec_per_gpu_high},
                     {"basis", p.interval.basis},
                     {"unmeasured", p.interval.unmeasured}};
  }
  j["cost_source"] = p.fully_calibrated ? "calibrated"
                     : any_calibrated   ? "mixed"
                                        : "datasheet_prior";
  nlohmann::json config;
  config["model"] = nlohmann::json::parse(ModelSpecToNativeJson(p.model));
  config["cluster"] = p.cluster_name;
  config["gpus"] = p.shape.gpus;
  config["seq_len"] = p.shape.seq_len;
  config["global_batch"] = p.shape.global_batch;
  config["objective"] = std::string(ObjectiveName(p.shape.objective));
  config["parallel"] = ToJson(p.parallel);
  config["knobs"] = ToJson(p.knobs);
  if (!p.stage_layers.empty()) config["stage_layers"] = p.stage_layers;
  j["config"] = config;
  return j;
}

}  // namespace moetune::planner
