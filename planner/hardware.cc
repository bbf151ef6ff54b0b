#include "planner/hardware.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "planner/internal/cluster_presets.h"
#include "planner/internal/strings.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using nlohmann::json;
using units::kGB;
using units::kMicrosecond;

// Defaults for the optional keys of a user's cluster JSON (the presets in
// planner/data/clusters/ set every key): PCIe Gen5 x16, 32 GT/s x 16 lanes,
// 128b/130b = 63 GB/s per direction; latencies of NCCL src/graph/tuning.cc's
// order (NVLink ~3 us per collective step, InfiniBand ~5 us per inter-node
// step).
constexpr double kPcieGen5X16BytesPerSec = 63 * kGB;
constexpr double kNvlinkLatencyS = 3 * kMicrosecond;
constexpr double kScaleoutLatencyS = 5 * kMicrosecond;

absl::Status ReadPositive(const json& j, const char* key, bool required,
                          double* out) {
  if (!j.contains(key) || j.at(key).is_null()) {
    if (required) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing field '", key, "' in cluster JSON"));
    }
    return absl::OkStatus();
  }
  const json& v = j.at(key);
  if (!v.is_number() || v.get<double>() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field '", key, "' in cluster JSON must be a positive number, got ",
        v.dump()));
  }
  *out = v.get<double>();
  return absl::OkStatus();
}

// A count read from JSON (GPUs, SMs): a whole number in 1..1e6, so that the
// int it becomes neither overflows nor rounds to 0.
bool IsWholeCount(double v) { return v >= 1 && v <= 1e6 && v == std::floor(v); }

}  // namespace

std::string_view GpuGenerationName(GpuGeneration generation) {
  switch (generation) {
    case GpuGeneration::kHopper:
      return "hopper";
    case GpuGeneration::kBlackwell:
      return "blackwell";
    case GpuGeneration::kBlackwellUltra:
      return "blackwell_ultra";
  }
  return "unknown";
}

absl::StatusOr<GpuGeneration> ParseGpuGeneration(std::string_view name) {
  const std::string lower = internal::Lower(name);
  std::vector<std::string> known;
  for (GpuGeneration g : kGpuGenerations) {
    if (lower == GpuGenerationName(g)) return g;
    known.emplace_back(GpuGenerationName(g));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown GPU generation '", internal::Sv(name),
                   "' (known: ", absl::StrJoin(known, ", "), ")"));
}

std::optional<double> PeakDenseFlopsPerSec(const GpuSpec& gpu,
                                           Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return gpu.bf16_dense_flops_per_sec;
    case Precision::kFp8:
      return gpu.fp8_dense_flops_per_sec;
    case Precision::kMxfp8:
      return gpu.mxfp8_dense_flops_per_sec;
    case Precision::kNvfp4:
      return gpu.nvfp4_dense_flops_per_sec;
  }
  return std::nullopt;
}

absl::StatusOr<ClusterSpec> LoadClusterPreset(std::string_view name) {
  const std::string lower = internal::Lower(name);
  for (const internal::EmbeddedCluster& preset : internal::EmbeddedClusters()) {
    if (lower != preset.name) continue;
    absl::StatusOr<ClusterSpec> spec = ParseClusterJson(preset.json);
    if (!spec.ok()) {
      return absl::InternalError(absl::StrCat("built-in cluster preset ", internal::Sv(preset.name),
                                              ": ", spec.status().message()));
    }
    return spec;
  }
  return absl::NotFoundError(
      absl::StrCat("unknown cluster preset '", internal::Sv(name), "' (known: ",
                   absl::StrJoin(ClusterPresetNames(), ", "), ")"));
}

std::vector<std::string> ClusterPresetNames() {
  // Fastest-known first is no concern here: the order of the README.
  static const std::vector<std::string> kOrder = {"h100-sxm", "h800", "h200", "b200",
                                                  "b300", "gb200-nvl72", "gb300-nvl72"};
  std::vector<std::string> names;
  for (const std::string& n : kOrder) {
    for (const internal::EmbeddedCluster& preset : internal::EmbeddedClusters()) {
      if (preset.name == n) names.push_back(n);
    }
  }
  for (const internal::EmbeddedCluster& preset : internal::EmbeddedClusters()) {
    if (std::find(names.begin(), names.end(), preset.name) == names.end()) {
      names.emplace_back(preset.name);
    }
  }
  return names;
}

absl::StatusOr<ClusterSpec> ParseClusterJson(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("cluster JSON is not a JSON object");
  }
  ClusterSpec c;
  bool from_preset = false;
  if (j.contains("preset")) {
    if (!j.at("preset").is_string()) {
      return absl::InvalidArgumentError("field 'preset' must be a string");
    }
    absl::StatusOr<ClusterSpec> base =
        LoadClusterPreset(j.at("preset").get<std::string>());
    if (!base.ok()) return absl::InvalidArgumentError(base.status().message());
    c = *std::move(base);
    from_preset = true;
  }
  if (j.contains("name")) {
    if (!j.at("name").is_string()) {
      return absl::InvalidArgumentError("field 'name' must be a string");
    }
    c.name = j.at("name").get<std::string>();
  } else if (!from_preset) {
    return absl::InvalidArgumentError("missing field 'name' in cluster JSON");
  }
  if (j.contains("gpu")) {
    const json& g = j.at("gpu");
    if (!g.is_object()) {
      return absl::InvalidArgumentError("field 'gpu' must be an object");
    }
    if (g.contains("name") && g.at("name").is_string()) {
      c.gpu.name = g.at("name").get<std::string>();
    }
    const bool req = !from_preset;
    if (g.contains("generation")) {
      if (!g.at("generation").is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field 'generation' in cluster JSON must be a string, got ",
            g.at("generation").dump()));
      }
      absl::StatusOr<GpuGeneration> generation =
          ParseGpuGeneration(g.at("generation").get<std::string>());
      if (!generation.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("field 'generation' in cluster JSON: ",
                         generation.status().message()));
      }
      c.gpu.generation = *generation;
    } else if (req) {
      return absl::InvalidArgumentError(
          "missing field 'generation' in cluster JSON");
    }
    if (absl::Status s = ReadPositive(g, "bf16_dense_flops_per_sec", req,
                                      &c.gpu.bf16_dense_flops_per_sec);
        !s.ok())
      return s;
    if (absl::Status s = ReadPositive(g, "fp8_dense_flops_per_sec", req,
                                      &c.gpu.fp8_dense_flops_per_sec);
        !s.ok())
      return s;
    double v = 0;
    if (absl::Status s =
            ReadPositive(g, "mxfp8_dense_flops_per_sec", false, &v);
        !s.ok())
      return s;
    if (v > 0) c.gpu.mxfp8_dense_flops_per_sec = v;
    v = 0;
    if (absl::Status s =
            ReadPositive(g, "nvfp4_dense_flops_per_sec", false, &v);
        !s.ok())
      return s;
    if (v > 0) c.gpu.nvfp4_dense_flops_per_sec = v;
    if (absl::Status s = ReadPositive(g, "hbm_bytes", req, &c.gpu.hbm_bytes);
        !s.ok())
      return s;
    if (absl::Status s = ReadPositive(g, "hbm_bytes_per_sec", req,
                                      &c.gpu.hbm_bytes_per_sec);
        !s.ok())
      return s;
    double fraction = 0;
    if (absl::Status s = ReadPositive(g, "sustained_tensor_fraction", false, &fraction); !s.ok()) {
      return s;
    }
    if (fraction > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster JSON: gpu.sustained_tensor_fraction must be in (0, 1], got ", fraction));
    }
    if (fraction > 0) c.gpu.sustained_tensor_fraction = fraction;
    double sms = c.gpu.sm_count;
    if (absl::Status s = ReadPositive(g, "sm_count", false, &sms); !s.ok()) {
      return s;
    }
    // Optional (0: not given); given, a whole number of SMs (a huge value
    // would overflow the int).
    if (sms != c.gpu.sm_count && !IsWholeCount(sms)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster JSON: gpu.sm_count=", sms, " must be a whole number between 1 and 1000000"));
    }
    c.gpu.sm_count = int(sms);
    if (absl::Status s = ReadPositive(g, "tdp_watts", false, &c.gpu.tdp_watts);
        !s.ok())
      return s;
  } else if (!from_preset) {
    return absl::InvalidArgumentError("missing field 'gpu' in cluster JSON");
  }
  const bool req = !from_preset;
  double gpus_per_node = c.gpus_per_node;
  double domain = c.nvlink_domain_gpus;
  struct Field {
    const char* key;
    bool required;
    double* out;
  };
  const Field fields[] = {
      {"gpus_per_node", req, &gpus_per_node},
      {"nvlink_domain_gpus", req, &domain},
      {"nvlink_bytes_per_sec", req, &c.nvlink_bytes_per_sec},
      {"nvlink_latency_s", false, &c.nvlink_latency_s},
      {"scaleout_bytes_per_sec", req, &c.scaleout_bytes_per_sec},
      {"scaleout_latency_s", false, &c.scaleout_latency_s},
      {"host_link_bytes_per_sec", false, &c.host_link_bytes_per_sec},
      {"host_memory_bytes_per_gpu", false, &c.host_memory_bytes_per_gpu},
  };
  for (const Field& f : fields) {
    if (absl::Status s = ReadPositive(j, f.key, f.required, f.out); !s.ok()) {
      return s;
    }
  }
  // GPU counts: whole numbers >= 1 (a positive fraction such as 8e-308 would
  // become 0 GPUs and divide by zero below).
  for (const auto& [key, count] : {std::pair<const char*, double>{"gpus_per_node", gpus_per_node},
                                   {"nvlink_domain_gpus", domain}}) {
    if (!IsWholeCount(count)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "=", count, " must be a whole number of GPUs between 1 and 1000000"));
    }
  }
  c.gpus_per_node = int(gpus_per_node);
  c.nvlink_domain_gpus = int(domain);
  if (!from_preset) {
    if (c.nvlink_latency_s == 0) c.nvlink_latency_s = kNvlinkLatencyS;
    if (c.scaleout_latency_s == 0) c.scaleout_latency_s = kScaleoutLatencyS;
    if (c.host_link_bytes_per_sec == 0) {
      c.host_link_bytes_per_sec = kPcieGen5X16BytesPerSec;
    }
  }
  if (c.nvlink_domain_gpus % c.gpus_per_node != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nvlink_domain_gpus=", c.nvlink_domain_gpus,
        " is not a multiple of gpus_per_node=", c.gpus_per_node));
  }
  if (j.contains("sources") && j.at("sources").is_array()) {
    for (const json& s : j.at("sources")) {
      if (s.is_string()) c.sources.push_back(s.get<std::string>());
    }
  }
  return c;
}

std::string ClusterSpecToJson(const ClusterSpec& c) {
  json g;
  g["name"] = c.gpu.name;
  g["generation"] = std::string(GpuGenerationName(c.gpu.generation));
  g["bf16_dense_flops_per_sec"] = c.gpu.bf16_dense_flops_per_sec;
  g["fp8_dense_flops_per_sec"] = c.gpu.fp8_dense_flops_per_sec;
  if (c.gpu.mxfp8_dense_flops_per_sec) {
    g["mxfp8_dense_flops_per_sec"] = *c.gpu.mxfp8_dense_flops_per_sec;
  }
  if (c.gpu.nvfp4_dense_flops_per_sec) {
    g["nvfp4_dense_flops_per_sec"] = *c.gpu.nvfp4_dense_flops_per_sec;
  }
  g["hbm_bytes"] = c.gpu.hbm_bytes;
  g["hbm_bytes_per_sec"] = c.gpu.hbm_bytes_per_sec;
  // Optional fields: 0 = unknown, and the parser takes only positive values.
  if (c.gpu.sustained_tensor_fraction != 1.0) g["sustained_tensor_fraction"] = c.gpu.sustained_tensor_fraction;
  if (c.gpu.sm_count > 0) g["sm_count"] = c.gpu.sm_count;
  if (c.gpu.tdp_watts > 0) g["tdp_watts"] = c.gpu.tdp_watts;
  json j;
  j["name"] = c.name;
  j["gpu"] = g;
  j["gpus_per_node"] = c.gpus_per_node;
  j["nvlink_domain_gpus"] = c.nvlink_domain_gpus;
  j["nvlink_bytes_per_sec"] = c.nvlink_bytes_per_sec;
  j["nvlink_latency_s"] = c.nvlink_latency_s;
  j["scaleout_bytes_per_sec"] = c.scaleout_bytes_per_sec;
  j["scaleout_latency_s"] = c.scaleout_latency_s;
  j["host_link_bytes_per_sec"] = c.host_link_bytes_per_sec;
  // 0 = unknown; the parser takes only positive values, so leave it out
  // (a round trip must parse again; found by cluster_fuzzer).
  if (c.host_memory_bytes_per_gpu > 0) {
    j["host_memory_bytes_per_gpu"] = c.host_memory_bytes_per_gpu;
  }
  j["sources"] = c.sources;
  return j.dump(2);
}

}  // namespace moetune::planner
