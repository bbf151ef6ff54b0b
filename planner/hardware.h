// GPUs and clusters as plain data. Every field carries its unit in its name.
// Presets are data: planner/data/clusters/<name>.json, in the very form a
// user's cluster JSON takes (ParseClusterJson), compiled in, each number's
// source in its "sources" (quoted from ../shared/hardware/datasheets.json,
// with the derivations). Nothing here probes a device.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/precision.h"

namespace moetune::planner {

// The GPU architecture generation: it selects the datasheet prior constants
// (cost_model.cc PriorConstantsFor) and generation-specific launch settings
// (emitters.cc). Hopper: H100/H200/H800; Blackwell: B200/GB200; Blackwell
// Ultra: B300/GB300.
enum class GpuGeneration { kHopper, kBlackwell, kBlackwellUltra };
inline constexpr GpuGeneration kGpuGenerations[] = {
    GpuGeneration::kHopper, GpuGeneration::kBlackwell,
    GpuGeneration::kBlackwellUltra};

// "hopper", "blackwell", "blackwell_ultra".
std::string_view GpuGenerationName(GpuGeneration generation);
// Accepts the names above (case-insensitive); InvalidArgument naming the
// value and the known ones otherwise.
absl::StatusOr<GpuGeneration> ParseGpuGeneration(std::string_view name);

struct GpuSpec {
  std::string name;  // "NVIDIA H100 SXM5 (80GB)"
  GpuGeneration generation = GpuGeneration::kHopper;
  // Dense (non-sparse) tensor-core peaks, the MFU denominators NVIDIA uses.
  double bf16_dense_flops_per_sec = 0;
  double fp8_dense_flops_per_sec = 0;
  // Unset: the GPU has no such tensor-core mode (Hopper: no MXFP8/NVFP4).
  std::optional<double> mxfp8_dense_flops_per_sec;
  std::optional<double> nvfp4_dense_flops_per_sec;
  double hbm_bytes = 0;
  double hbm_bytes_per_sec = 0;
  // Fraction of the dense peaks above that the tensor cores sustain in
  // training at the GPU's power limit (1 = the datasheet clocks). The cost
  // model prices GEMMs and attention at peak x this fraction; MFU keeps
  // NVIDIA's denominators (the peaks). Optional in the JSON, (0, 1].
  double sustained_tensor_fraction = 1.0;
  int sm_count = 0;
  double tdp_watts = 0;
};

// The peak for a precision; nullopt when the GPU lacks that mode.
std::optional<double> PeakDenseFlopsPerSec(const GpuSpec& gpu,
                                           Precision precision);

// The NVLink domain of an 8-GPU HGX-style node (H100, H200, B200, B300):
// where the EP A2A overlap's public A/B runs were measured
// (planner/SEARCH.md, "Ties the step model cannot break").
inline constexpr int kEightGpuNvlinkNode = 8;

struct ClusterSpec {
  std::string name;  // preset name or from the JSON
  GpuSpec gpu;
  int gpus_per_node = 8;       // GPUs sharing one host (and its host link)
  int nvlink_domain_gpus = 8;  // GPUs behind one NVSwitch fabric
  double nvlink_bytes_per_sec = 0;  // per GPU, per direction
  double nvlink_latency_s = 0;      // one NVLink collective step
  double scaleout_bytes_per_sec = 0;  // per GPU NIC, per direction
  double scaleout_latency_s = 0;      // one inter-node message
  // GPU <-> host memory, per GPU per direction (PCIe Gen5 x16 or its share of
  // NVLink-C2C), and the pinned host memory per GPU available for offload.
  double host_link_bytes_per_sec = 0;
  double host_memory_bytes_per_gpu = 0;
  std::vector<std::string> sources;  // where each number came from
};

// Presets: h100-sxm, h800, h200, b200, b300, gb200-nvl72, gb300-nvl72.
// Unknown name: NotFound listing the known ones.
absl::StatusOr<ClusterSpec> LoadClusterPreset(std::string_view name);
std::vector<std::string> ClusterPresetNames();

// JSON form (units in the key names; optional keys marked (opt)):
//   {"name": "my-cluster",
//    "gpu": {"name": "...", "generation": "hopper",
//            "bf16_dense_flops_per_sec": 9.894e14,
//            "fp8_dense_flops_per_sec": 1.979e15,
//            "mxfp8_dense_flops_per_sec": (opt), "nvfp4_dense_flops_per_sec": (opt),
//            "hbm_bytes": 8e10, "hbm_bytes_per_sec": 3.35e12,
//            "sm_count": 132 (opt), "tdp_watts": 700 (opt)},
//    "gpus_per_node": 8, "nvlink_domain_gpus": 8,
//    "nvlink_bytes_per_sec": 4.5e11, "nvlink_latency_s": (opt),
//    "scaleout_bytes_per_sec": 5e10, "scaleout_latency_s": (opt),
//    "host_link_bytes_per_sec": 6.4e10 (opt), "host_memory_bytes_per_gpu": (opt),
//    "sources": ["..."] (opt)}
// Or {"preset": "h100-sxm", ...overrides of top-level numeric keys}.
// "generation" is one of GpuGenerationName's names (required unless from a
// preset). Missing required key, non-positive value or unknown generation:
// InvalidArgument naming it.
absl::StatusOr<ClusterSpec> ParseClusterJson(std::string_view json);
std::string ClusterSpecToJson(const ClusterSpec& cluster);

}  // namespace moetune::planner
