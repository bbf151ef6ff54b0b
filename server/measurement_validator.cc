#include "server/measurement_validator.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;

absl::Status Number(const std::string& field, double v, double max) {
  if (std::isnan(v) || std::isinf(v)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be finite, got ", v));
  }
  if (v < 0) return absl::InvalidArgumentError(absl::StrCat(field, " must be >= 0, got ", v));
  if (v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is absurd: ", v, " (more than ", max, ")"));
  }
  return absl::OkStatus();
}

absl::Status Text(const std::string& field, const std::string& s, size_t max) {
  if (s.size() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", s.size(), " bytes, limit ", max));
  }
  return absl::OkStatus();
}

// A per-message count limit: past it the result can never be accepted as it
// is (REFUSAL_SCOPE_MESSAGE, see server/limits.h).
absl::Status Count(const std::string& field, int n, int limit, const char* limit_name) {
  if (limit > 0 && n > limit) {
    return MessageLimitError(absl::StrCat(field, " has ", n, " entries, limit ", limit),
                             limit_name, limit, n);
  }
  return absl::OkStatus();
}

absl::Status StringMap(const std::string& field,
                       const google::protobuf::Map<std::string, std::string>& m) {
  if (auto st = Count(field, static_cast<int>(m.size()), kMaxMapEntries, "max_map_entries");
      !st.ok()) {
    return st;
  }
  for (const auto& [k, v] : m) {
    if (auto st = Text(absl::StrCat(field, " key"), k, kMaxNameBytes); !st.ok()) return st;
    if (auto st = Text(absl::StrCat(field, "[", k.substr(0, 64), "]"), v, kMaxNameBytes * 4);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

#define RETURN_IF_ERROR(expr)              \
  do {                                     \
    if (absl::Status _st = (expr); !_st.ok()) return _st; \
  } while (0)

absl::Status CheckMeasurement(const std::string& f, const v1::Measurement& m,
                              const ServiceLimits& limits) {
  RETURN_IF_ERROR(Text(f + ".name", m.name(), kMaxNameBytes));
  RETURN_IF_ERROR(StringMap(f + ".labels", m.labels()));
  RETURN_IF_ERROR(Count(f + ".samples_seconds", m.samples_seconds_size(),
                        limits.max_samples_per_measurement, "max_samples_per_measurement"));
  for (int j = 0; j < m.samples_seconds_size(); ++j) {
    RETURN_IF_ERROR(
        Number(absl::StrCat(f, ".samples_seconds[", j, "]"), m.samples_seconds(j), kMaxProbeSeconds));
  }
  RETURN_IF_ERROR(Number(f + ".min_seconds", m.min_seconds(), kMaxProbeSeconds));
  RETURN_IF_ERROR(Number(f + ".median_seconds", m.median_seconds(), kMaxProbeSeconds));
  RETURN_IF_ERROR(Number(f + ".max_seconds", m.max_seconds(), kMaxProbeSeconds));
  if (!v1::StatisticKind_IsValid(m.planner_statistic())) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".planner_statistic has unknown value ",
                                                   static_cast<int>(m.planner_statistic())));
  }
  RETURN_IF_ERROR(Number(f + ".flops", m.flops(), kMaxProbeFlops));
  RETURN_IF_ERROR(Number(f + ".bytes", m.bytes(), kMaxProbeBytes));
  RETURN_IF_ERROR(Number(f + ".bus_factor", m.bus_factor(), kMaxRatio));
  if (m.has_tflops()) RETURN_IF_ERROR(Number(f + ".tflops", m.tflops(), kMaxTflops));
  if (m.has_alg_bw_gbps()) {
    RETURN_IF_ERROR(Number(f + ".alg_bw_gbps", m.alg_bw_gbps(), kMaxBandwidthGbps));
  }
  if (m.has_bus_bw_gbps()) {
    RETURN_IF_ERROR(Number(f + ".bus_bw_gbps", m.bus_bw_gbps(), kMaxBandwidthGbps));
  }
  if (m.has_efficiency_vs_reference()) {
    RETURN_IF_ERROR(
        Number(f + ".efficiency_vs_reference", m.efficiency_vs_reference(), kMaxRatio));
  }
  RETURN_IF_ERROR(
      Count(f + ".values", static_cast<int>(m.values().size()), kMaxMapEntries, "max_map_entries"));
  for (const auto& [k, v] : m.values()) {
    RETURN_IF_ERROR(Text(f + ".values key", k, kMaxNameBytes));
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".values[", k, "] must be finite, got ", v));
    }
  }
  // A failed verification may report a huge relative error, but never NaN.
  if (std::isnan(m.max_rel_error()) || m.max_rel_error() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ".max_rel_error must be >= 0, got ", m.max_rel_error()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProbeResult(const v1::ProbeResult& r, const ServiceLimits& limits) {
  RETURN_IF_ERROR(Text("result.result_id", r.result_id(), kMaxNameBytes));
  if (r.result_id().empty()) return absl::InvalidArgumentError("result.result_id is empty");
  RETURN_IF_ERROR(Text("result.task_id", r.task_id(), kMaxNameBytes));
  RETURN_IF_ERROR(Text("result.campaign_id", r.campaign_id(), kMaxNameBytes));
  if (r.attempt() < 0 || r.rank() < 0 || r.rank() >= (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("result.attempt/rank must be >= 0 (rank < 2^20), got ",
                                                   r.attempt(), "/", r.rank()));
  }
  if (!v1::ProbeKind_IsValid(r.kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("result.kind has unknown value ", static_cast<int>(r.kind())));
  }
  RETURN_IF_ERROR(Text("result.error_message", r.error_message(), kMaxTextBytes));
  RETURN_IF_ERROR(Text("result.params_json", r.params_json(), kMaxTextBytes));
  RETURN_IF_ERROR(Count("result.measurements", r.measurements_size(),
                        limits.max_measurements_per_result, "max_measurements_per_result"));
  for (int i = 0; i < r.measurements_size(); ++i) {
    RETURN_IF_ERROR(CheckMeasurement(absl::StrCat("result.measurements[", i, "]"),
                                     r.measurements(i), limits));
  }
  const v1::Provenance& p = r.provenance();
  RETURN_IF_ERROR(StringMap("result.provenance.env", p.env()));
  for (auto [name, s] : {std::pair<const char*, const std::string*>{"host", &p.host()},
                         {"device_name", &p.device_name()},
                         {"device_uuid", &p.device_uuid()},
                         {"node", &p.node()},
                         {"compute_dtype", &p.compute_dtype()},
                         {"start_time_utc", &p.start_time_utc()},
                         {"end_time_utc", &p.end_time_utc()}}) {
    RETURN_IF_ERROR(Text(absl::StrCat("result.provenance.", name), *s, kMaxNameBytes));
  }
  if (p.world_size() < 0 || p.rank() < 0 || p.local_rank() < 0 || p.ranks_per_node() < 0) {
    return absl::InvalidArgumentError("result.provenance rank/world_size fields must be >= 0");
  }
  return absl::OkStatus();
}

}  // namespace moetune::server
