#include "agent/task_convert.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace moetune::agent {
namespace {

namespace v1 = ::moetune::v1;
namespace k = ::moetune::kernels;

absl::StatusOr<k::DType> ToDType(v1::DType d, k::DType fallback, const char* field) {
  switch (d) {
    case v1::DTYPE_UNSPECIFIED: return fallback;
    case v1::DTYPE_FP32: return k::DType::kFp32;
    case v1::DTYPE_BF16: return k::DType::kBf16;
    case v1::DTYPE_FP16: return k::DType::kFp16;
    case v1::DTYPE_FP8_E4M3: return k::DType::kFp8E4M3;
    case v1::DTYPE_MXFP8: return k::DType::kMxfp8;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " has unknown value ", static_cast<int>(d)));
}

absl::StatusOr<k::CollectiveOp> ToOp(v1::CollectiveOp op, const char* field) {
  switch (op) {
    case v1::COLLECTIVE_OP_ALL_REDUCE: return k::CollectiveOp::kAllReduce;
    case v1::COLLECTIVE_OP_ALL_GATHER: return k::CollectiveOp::kAllGather;
    case v1::COLLECTIVE_OP_REDUCE_SCATTER: return k::CollectiveOp::kReduceScatter;
    case v1::COLLECTIVE_OP_ALL_TO_ALL: return k::CollectiveOp::kAllToAll;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " has unknown value ", static_cast<int>(op)));
}

k::TokenDistribution ToDist(const v1::TokenDistribution& d) {
  switch (d.kind()) {
    case v1::TokenDistribution::KIND_ZIPF: return k::TokenDistribution::Zipf(d.zipf_s());
    case v1::TokenDistribution::KIND_HISTOGRAM:
      return k::TokenDistribution::Histogram({d.histogram().begin(), d.histogram().end()});
    default: return k::TokenDistribution::Balanced();
  }
}

k::TimingOptions ToTiming(const v1::TimingOptions& t) {
  k::TimingOptions out;
  if (t.warmup_iters() > 0) out.warmup_iters = t.warmup_iters();
  if (t.timed_iters() > 0) out.timed_iters = t.timed_iters();
  out.verify = t.verify();
  if (t.seed() != 0) out.seed = t.seed();
  out.memory_budget_bytes = t.memory_budget_bytes();
  if (t.iters_per_sample() > 0) out.iters_per_sample = t.iters_per_sample();
  return out;
}

v1::StatisticKind ToProtoStat(k::Statistic s) {
  switch (s) {
    case k::Statistic::kMin: return v1::STATISTIC_MIN;
    case k::Statistic::kMedian: return v1::STATISTIC_MEDIAN;
    case k::Statistic::kMax: return v1::STATISTIC_MAX;
  }
  return v1::STATISTIC_UNSPECIFIED;
}

}  // namespace

v1::ProbeKind ToProtoKind(k::ProbeKind kind) {
  switch (kind) {
    case k::ProbeKind::kGroupedGemm: return v1::PROBE_KIND_GROUPED_GEMM;
    case k::ProbeKind::kDispatchCombine: return v1::PROBE_KIND_DISPATCH_COMBINE;
    case k::ProbeKind::kCollective: return v1::PROBE_KIND_COLLECTIVE;
    case k::ProbeKind::kOffload: return v1::PROBE_KIND_OFFLOAD;
    case k::ProbeKind::kOverlap: return v1::PROBE_KIND_OVERLAP;
  }
  return v1::PROBE_KIND_UNSPECIFIED;
}

absl::StatusOr<k::ProbeParams> ToProbeParams(const v1::ProbeTask& task) {
  const int64_t group =
      task.local_devices() > 1 ? task.local_devices() : std::max(1, task.world_size());
  const k::TimingOptions timing = ToTiming(task.timing());
  switch (task.params_case()) {
    case v1::ProbeTask::kGroupedGemm: {
      const v1::GroupedGemmProbe& p = task.grouped_gemm();
      k::GroupedGemmParams out;
      out.num_experts = p.num_experts();
      out.total_tokens = p.total_tokens();
      out.hidden = p.hidden();
      out.ffn_hidden = p.ffn_hidden();
      out.distribution = ToDist(p.distribution());
      auto dtype = ToDType(p.dtype(), out.dtype, "grouped_gemm.dtype");
      if (!dtype.ok()) return dtype.status();
      out.dtype = *dtype;
      out.forward = p.forward();
      out.backward_data = p.backward_data();
      out.backward_weight = p.backward_weight();
      out.timing = timing;
      return k::ProbeParams(out);
    }
    case v1::ProbeTask::kDispatchCombine: {
      const v1::DispatchCombineProbe& p = task.dispatch_combine();
      k::DispatchCombineParams out;
      out.tokens_per_rank = p.tokens_per_rank();
      out.hidden = p.hidden();
      out.top_k = p.top_k();
      out.num_experts = p.num_experts();
      out.ep_size = group;
      out.ranks_per_node = p.ranks_per_node();
      out.routing = ToDist(p.routing());
      out.max_nodes_per_token = p.max_nodes_per_token();
      switch (p.mode()) {
        case v1::DISPATCH_MODE_PER_EXPERT: out.mode = k::DispatchMode::kPerExpert; break;
        case v1::DISPATCH_MODE_DEDUP_NODE: out.mode = k::DispatchMode::kDedupNode; break;
        default: out.mode = k::DispatchMode::kDedupRank; break;
      }
      auto dtype = ToDType(p.dtype(), out.dtype, "dispatch_combine.dtype");
      if (!dtype.ok()) return dtype.status();
      out.dtype = *dtype;
      out.timing = timing;
      return k::ProbeParams(out);
    }
    case v1::ProbeTask::kCollective: {
      const v1::CollectiveProbe& p = task.collective();
      k::CollectiveParams out;
      auto op = ToOp(p.op(), "collective.op");
      if (!op.ok()) return op.status();
      out.op = *op;
      if (p.sizes_bytes_size() > 0) out.sizes_bytes.assign(p.sizes_bytes().begin(), p.sizes_bytes().end());
      out.group_size = group;
      out.span = task.span() == v1::SPAN_INTRA_NODE ? k::Span::kIntraNode : k::Span::kInterNode;
      auto dtype = ToDType(p.dtype(), out.dtype, "collective.dtype");
      if (!dtype.ok()) return dtype.status();
      out.dtype = *dtype;
      out.timing = timing;
      return k::ProbeParams(out);
    }
    case v1::ProbeTask::kOffload: {
      const v1::OffloadProbe& p = task.offload();
      k::OffloadParams out;
      if (p.sizes_bytes_size() > 0) out.sizes_bytes.assign(p.sizes_bytes().begin(), p.sizes_bytes().end());
      out.host_to_device = p.host_to_device();
      out.device_to_host = p.device_to_host();
      out.pinned = p.pinned();
      out.pageable = p.pageable();
      out.gemm_m = p.gemm_m();
      out.gemm_n = p.gemm_n();
      out.gemm_k = p.gemm_k();
      out.under_gemm = p.under_gemm();
      auto dtype = ToDType(p.gemm_dtype(), out.gemm_dtype, "offload.gemm_dtype");
      if (!dtype.ok()) return dtype.status();
      out.gemm_dtype = *dtype;
      out.timing = timing;
      return k::ProbeParams(out);
    }
    case v1::ProbeTask::kOverlap: {
      const v1::OverlapProbe& p = task.overlap();
      k::OverlapParams out;
      out.gemm_m = p.gemm_m();
      out.gemm_n = p.gemm_n();
      out.gemm_k = p.gemm_k();
      auto dtype = ToDType(p.gemm_dtype(), out.gemm_dtype, "overlap.gemm_dtype");
      if (!dtype.ok()) return dtype.status();
      out.gemm_dtype = *dtype;
      auto op = ToOp(p.op(), "overlap.op");
      if (!op.ok()) return op.status();
      out.op = *op;
      out.collective_bytes = p.collective_bytes();
      out.group_size = group;
      out.timing = timing;
      return k::ProbeParams(out);
    }
    case v1::ProbeTask::PARAMS_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("task '", task.task_id(), "' has no probe parameters (params not set)"));
}

v1::ProbeResult ToResultProto(const k::ProbeResult& r) {
  v1::ProbeResult out;
  out.set_kind(ToProtoKind(r.kind));
  out.set_params_json(r.params_json);
  for (const k::Measurement& m : r.measurements) {
    v1::Measurement* pm = out.add_measurements();
    pm->set_name(m.name);
    for (const auto& [key, value] : m.labels) (*pm->mutable_labels())[key] = value;
    for (double s : m.samples_seconds) pm->add_samples_seconds(s);
    pm->set_min_seconds(m.summary.min_seconds);
    pm->set_median_seconds(m.summary.median_seconds);
    pm->set_max_seconds(m.summary.max_seconds);
    pm->set_planner_statistic(ToProtoStat(m.planner_statistic));
    pm->set_flops(m.flops);
    pm->set_bytes(m.bytes);
    pm->set_bus_factor(m.bus_factor);
    if (m.tflops) pm->set_tflops(*m.tflops);
    if (m.alg_bw_gbps) pm->set_alg_bw_gbps(*m.alg_bw_gbps);
    if (m.bus_bw_gbps) pm->set_bus_bw_gbps(*m.bus_bw_gbps);
    if (m.efficiency_vs_reference) pm->set_efficiency_vs_reference(*m.efficiency_vs_reference);
    for (const auto& [key, value] : m.values) (*pm->mutable_values())[key] = value;
    pm->set_verified(m.verified);
    pm->set_max_rel_error(m.max_rel_error);
  }
  const k::Provenance& p = r.provenance;
  v1::Provenance* pp = out.mutable_provenance();
  pp->set_schema_version(p.schema_version);
  pp->set_start_time_utc(p.start_time_utc);
  pp->set_end_time_utc(p.end_time_utc);
  pp->set_host(p.host);
  pp->set_backend(p.backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_CPU);
  pp->set_device_name(p.device_name);
  pp->set_device_uuid(p.device_uuid);
  pp->set_compute_capability(p.compute_capability);
  v1::SoftwareVersions* v = pp->mutable_versions();
  v->set_driver(p.driver_version);
  v->set_cuda_runtime(p.cuda_runtime_version);
  v->set_cublas(p.cublas_version);
  v->set_nccl(p.nccl_version);
  v->set_blas(p.blas_version);
  pp->set_compute_dtype(p.compute_dtype);
  for (const auto& [key, value] : p.env) (*pp->mutable_env())[key] = value;
  pp->set_rank(p.rank);
  pp->set_world_size(p.world_size);
  pp->set_ranks_per_node(p.ranks_per_node);
  pp->set_local_rank(p.local_rank);
  return out;
}

}  // namespace moetune::agent
