#include "planner/hardware.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using nlohmann::json;
using units::kGB;
using units::kGbitPerSecInBytesPerSec;
using units::kMicrosecond;
using units::kTFLOP;

// Sources, quoted from ../shared/hardware/datasheets.json.
constexpr char kSrcDgxc[] =
    "NVIDIA/dgxc-benchmarking README.md 'Peak Theoretical Throughput' + "
    "'<X> Reference Architecture' sections (HEAD 841f546, 2026-07-30) - "
    "NVIDIA's own MFU denominators (non-sparse)";
constexpr char kSrcH100[] =
    "glennklockwood.com/garden/processors/h100 (theoretical peak table: BF16 "
    "989.4, FP8 1978.9 dense); awesomeagents.ai/hardware/nvidia-h100 "
    "(3,350 GB/s, NVLink 900 GB/s)";
constexpr char kSrcH200[] =
    "lzwjava.github.io/nvidia-h200-gpu-specs-en and ai-hpc.github.io 8x-H200 "
    "page: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s, 700 W; same GH100 "
    "compute as H100";
constexpr char kSrcH800[] =
    "philisun.com H800 vs H100 & tumgag page: same GH100 low-precision "
    "compute as H100, NVLink cut to 400 GB/s bidirectional";
constexpr char kSrcB200[] =
    "glennklockwood.com/garden/processors/B200 (HGX 1000 W); "
    "verda.com/blog/gb300-nvl72-architecture; docs.vultr.com HGX B200";
constexpr char kSrcGb200[] =
    "glennklockwood.com/garden/processors/B200 (GB200 1,200 W); "
    "aiwiki.ai/wiki/nvidia_gb200_nvl72; mlcommons/training_results_v5.1 "
    "NVIDIA/systems/tyche_ngpu512_ngc25.09_nemo.json ('4x ConnectX-7 IB NDR "
    "400 Gb/s' per 4-GPU node); NVLink-C2C 900 GB/s per Grace shared by two "
    "GPUs";
constexpr char kSrcB300[] =
    "glennklockwood.com/garden/processors/B300; "
    "verda.com/blog/gb300-nvl72-architecture; DGX B300 ref arch: 270 GB, "
    "7.7 TB/s, SpectrumX 8x 800 Gbit/s (1 per GPU)";
constexpr char kSrcGb300[] =
    "verda.com/blog/gb300-nvl72-architecture (279 GB usable); vendordeep.com "
    "GB300 report (CX-8 800 Gb/s per GPU); mlcommons/training_results_v5.1 "
    "theia_ngpu512_ngc25.09_nemo.json ('4x ConnectX-8 IB XDR 800 Gb/s' per "
    "4-GPU node)";
// Not in datasheets.json; general facts used for the host link and
// latencies.
constexpr char kSrcPcie[] =
    "PCIe Gen5 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s per direction "
    "(host link of HGX/DGX GPUs)";
constexpr char kSrcLatency[] =
    "latencies: NCCL src/graph/tuning.cc orders of magnitude (NVLink hop "
    "~0.6 us plus ~2-4 us base per collective step; InfiniBand ~5 us per "
    "inter-node step)";

// Round figures used by every preset (see kSrcPcie / kSrcLatency).
constexpr double kPcieGen5X16BytesPerSec = 63 * kGB;
constexpr double kNvlinkLatencyS = 3 * kMicrosecond;
constexpr double kScaleoutLatencyS = 5 * kMicrosecond;
// NVLink-C2C: 900 GB/s bidirectional per Grace, shared by its two GPUs:
// 900 / 2 directions / 2 GPUs = 225 GB/s per GPU per direction.
constexpr double kC2cBytesPerSecPerGpu = 900 * kGB / 2 / 2;

GpuSpec Hopper(std::string name, double hbm_gb, double hbm_tb_s) {
  GpuSpec g;
  g.name = std::move(name);
  g.generation = GpuGeneration::kHopper;
  // NVIDIA's MFU denominators (dgxc-benchmarking): 989 BF16, 1979 FP8.
  g.bf16_dense_flops_per_sec = 989 * kTFLOP;
  g.fp8_dense_flops_per_sec = 1979 * kTFLOP;
  g.hbm_bytes = hbm_gb * kGB;
  g.hbm_bytes_per_sec = hbm_tb_s * 1000 * kGB;
  g.sm_count = 132;
  g.tdp_watts = 700;
  return g;
}

GpuSpec Blackwell(std::string name, GpuGeneration generation, double bf16_tf,
                  double nvfp4_tf, double hbm_gb, double hbm_tb_s,
                  double tdp_watts) {
  GpuSpec g;
  g.name = std::move(name);
  g.generation = generation;
  g.bf16_dense_flops_per_sec = bf16_tf * kTFLOP;
  // FP8 and MXFP8 run at twice the BF16 rate (NVIDIA MFU denominators).
  g.fp8_dense_flops_per_sec = 2 * bf16_tf * kTFLOP;
  g.mxfp8_dense_flops_per_sec = 2 * bf16_tf * kTFLOP;
  g.nvfp4_dense_flops_per_sec = nvfp4_tf * kTFLOP;
  g.hbm_bytes = hbm_gb * kGB;
  g.hbm_bytes_per_sec = hbm_tb_s * 1000 * kGB;
  g.sm_count = 148;
  g.tdp_watts = tdp_watts;
  return g;
}

ClusterSpec Hgx(std::string name, GpuSpec gpu, double nvlink_gb_s_per_dir,
                double nic_gbit_s, double host_mem_gb,
                std::vector<std::string> sources) {
  ClusterSpec c;
  c.name = std::move(name);
  c.gpu = std::move(gpu);
  c.gpus_per_node = 8;
  c.nvlink_domain_gpus = 8;
  c.nvlink_bytes_per_sec = nvlink_gb_s_per_dir * kGB;
  c.nvlink_latency_s = kNvlinkLatencyS;
  c.scaleout_bytes_per_sec = nic_gbit_s * kGbitPerSecInBytesPerSec;
  c.scaleout_latency_s = kScaleoutLatencyS;
  c.host_link_bytes_per_sec = kPcieGen5X16BytesPerSec;
  c.host_memory_bytes_per_gpu = host_mem_gb * kGB;
  c.sources = std::move(sources);
  c.sources.push_back(kSrcPcie);
  c.sources.push_back(kSrcLatency);
  return c;
}

ClusterSpec Nvl72(std::string name, GpuSpec gpu, double nic_gbit_s,
                  std::vector<std::string> sources) {
  ClusterSpec c;
  c.name = std::move(name);
  c.gpu = std::move(gpu);
  c.gpus_per_node = 4;  // two Grace-Blackwell superchips per compute tray
  c.nvlink_domain_gpus = 72;
  c.nvlink_bytes_per_sec = 900 * kGB;  // NVLink5 1.8 TB/s bidirectional
  c.nvlink_latency_s = kNvlinkLatencyS;
  c.scaleout_bytes_per_sec = nic_gbit_s * kGbitPerSecInBytesPerSec;
  c.scaleout_latency_s = kScaleoutLatencyS;
  c.host_link_bytes_per_sec = kC2cBytesPerSecPerGpu;
  c.host_memory_bytes_per_gpu = 480 * kGB / 2;  // 480 GB LPDDR5X per Grace
  c.sources = std::move(sources);
  c.sources.push_back(kSrcLatency);
  return c;
}

std::vector<ClusterSpec> BuildPresets() {
  std::vector<ClusterSpec> p;
  // DGX H100: 2 TB host memory for 8 GPUs.
  p.push_back(Hgx("h100-sxm", Hopper("NVIDIA H100 SXM5 (80GB)", 80, 3.35), 450,
                  400, 2000.0 / 8, {kSrcDgxc, kSrcH100}));
  p.push_back(Hgx("h800", Hopper("NVIDIA H800 SXM", 80, 3.35), 200, 400,
                  2000.0 / 8, {kSrcH800, kSrcH100}));
  p.push_back(Hgx("h200", Hopper("NVIDIA H200 SXM (141GB)", 141, 4.8), 450,
                  400, 2000.0 / 8, {kSrcH200}));
  p.push_back(Hgx("b200",
                  Blackwell("NVIDIA B200 (HGX, 1000 W)", GpuGeneration::kBlackwell, 2250,
                            9000, 180, 7.7, 1000),
                  900, 400, 2000.0 / 8, {kSrcDgxc, kSrcB200}));
  p.push_back(Hgx("b300",
                  Blackwell("NVIDIA B300 (HGX)", GpuGeneration::kBlackwellUltra, 2250,
                            13500, 270, 7.7, 1100),
                  900, 800, 2000.0 / 8, {kSrcDgxc, kSrcB300}));
  p.push_back(Nvl72("gb200-nvl72",
                    Blackwell("NVIDIA GB200 (NVL72, 1200 W)", GpuGeneration::kBlackwell,
                              2450, 9800, 186, 8.0, 1200),
                    400, {kSrcDgxc, kSrcGb200}));
  p.push_back(Nvl72("gb300-nvl72",
                    Blackwell("NVIDIA GB300 (NVL72, 1400 W)",
                              GpuGeneration::kBlackwellUltra,
                              2450, 14700, 279, 8.0, 1400),
                    800, {kSrcDgxc, kSrcGb300}));
  return p;
}

const std::vector<ClusterSpec>& Presets() {
  static const auto* const kPresets =
      new std::vector<ClusterSpec>(BuildPresets());
  return *kPresets;
}

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
  for (const ClusterSpec& c : Presets()) {
    if (c.name == lower) return c;
  }
  return absl::NotFoundError(
      absl::StrCat("unknown cluster preset '", internal::Sv(name), "' (known: ",
                   absl::StrJoin(ClusterPresetNames(), ", "), ")"));
}

std::vector<std::string> ClusterPresetNames() {
  std::vector<std::string> names;
  for (const ClusterSpec& c : Presets()) names.push_back(c.name);
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
    double sms = c.gpu.sm_count;
    if (absl::Status s = ReadPositive(g, "sm_count", false, &sms); !s.ok()) {
      return s;
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
    if (count < 1 || count > 1e6 || count != std::floor(count)) {
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
