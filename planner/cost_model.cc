#include "planner/cost_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "planner/internal/prior_tables.h"
#include "planner/internal/strings.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using units::kMicrosecond;

// Rows of a GEMM tile: an expert (or GEMM) with m rows reaches
// m / (m + kGemmHalfEfficiencyRows) of the large-GEMM efficiency. Source:
// CUTLASS/cuBLASLt Hopper and Blackwell kernels use 128-row tiles; a GEMM
// with m = 128 fills half of the last tile on average and pays one full
// tile of prologue/epilogue, i.e. about half efficiency (DeepGEMM grouped
// GEMM benchmarks show ~50-60% of peak at 128 tokens per expert, ~90% at
// 1,024+).
constexpr double kGemmHalfEfficiencyRows = 128;

// SM share of each communication stream beyond the first, relative to the
// first (NCCL channels of a second concurrent collective).
constexpr double kExtraStreamSmShare = 0.25;

// Ceiling on the inter-node EP dispatch/combine rate per GPU on Blackwell
// HGX, whatever the NIC: GPT-OSS-120B with EP 64 over 8 HGX nodes measured
// 8,047 tokens/s/GPU on B200 (400 Gb/s NIC per GPU) and 8,359 on B300 (800
// Gb/s), Megatron-Bridge 26.02 (runs.json): doubling the line rate bought
// 4%, so the NIC is not what bounds it. Both recipes run NCCL's all-to-all
// (no flex backend in their presets). Given the rest of the step model the
// rows imply ~29 GB/s per GPU when priced with DeepEP and ~40 GB/s with the
// all-to-all they ran (B300 held at the ceiling, B200 at its 400G NIC's
// 32.5 GB/s, 6% low); a 400G-class per-GPU RDMA path (the kernels' fixed
// SM/proxy budget, or an 800G port run as 2 x 400G planes) would explain
// it. Applied to every Blackwell GPU (no NVL72 row of runs.json spreads EP
// beyond its NVLink domain, so none tests it there). Hopper rows (H100, EP
// 32 over 8 nodes, NCCL all-to-all) fit the plain
// dispatch_scaleout_efficiency x NIC and get no ceiling. The value is
// DataSetPriors::blackwell_dispatch_scaleout_max_bytes_per_sec (set from
// those rows by the cross-validated rule).

// Unfused attention moves each BF16 score through HBM four times in the
// forward pass (write QK^T, read for softmax, write probabilities, read
// for AV): 4 x 2 bytes.
constexpr double kUnfusedScoreBytesForward = 8.0;

// Collective startup: NCCL uses trees/rings whose step count grows with the
// group; 2 log2(n) latency steps is the tree all-reduce depth.
double LatencySteps(int group_size) {
  return group_size <= 1 ? 0.0 : 2.0 * std::ceil(std::log2(group_size));
}

// Fraction of a collective's buffer that crosses the links per rank
// (nccl-tests doc/PERFORMANCE.md busBw factors).
double BusFactor(CollectiveKind kind, int n) {
  if (n <= 1) return 0.0;
  const double f = double(n - 1) / n;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * f;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return f;
    case CollectiveKind::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

// Expected number of distinct bins hit by k uniform picks among n bins:
// n (1 - (1 - 1/n)^k).
double DistinctHits(double n, double k) {
  if (n <= 1) return std::min<double>(n, 1.0);
  return n * (1.0 - std::pow(1.0 - 1.0 / n, k));
}

// C(n, r) / C(m, r) for n <= m: the chance that r picks without
// replacement from m avoid m - n given items.
double ChooseRatio(int n, int m, int r) {
  if (r > n) return 0.0;
  double ratio = 1.0;
  for (int i = 0; i < r; ++i) ratio *= double(n - i) / double(m - i);
  return ratio;
}

}  // namespace

double DistinctDestinations(double units, int top_k, int groups, int group_topk) {
  if (groups <= 1 || group_topk <= 0 || group_topk >= groups || top_k < group_topk) {
    return DistinctHits(units, top_k);
  }
  if (units <= 1) return std::min(units, 1.0);
  if (units < groups) {
    // q whole groups per destination. EP divides the experts and the
    // groups divide them, so with power-of-two EP and domain sizes units
    // divides groups; a fractional domain count (EP 128 over 72-GPU
    // racks: 1.78) rounds.
    const int q = std::max(1, int(std::lround(groups / units)));
    return units * (1.0 - ChooseRatio(groups - q, groups, group_topk));
  }
  return group_topk * DistinctHits(units / groups, double(top_k) / group_topk);
}

std::string_view CostSourceName(CostSource source) {
  return source == CostSource::kCalibrated ? "calibrated" : "datasheet_prior";
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  return "unknown";
}

std::string_view LinkSpanName(LinkSpan span) {
  return span == LinkSpan::kNvlinkDomain ? "nvlink_domain" : "scale_out";
}

// The efficiency constants: one table per GPU generation, data in
// planner/data/priors/<generation>.json, each value with its public source
// in the file's "sources". Global per generation (never per model or per
// run). Three entries name a DataSetPriors value instead of a number
// ("fitted"): Blackwell's dispatch ceiling, Blackwell Ultra's sustained
// clock gain and its sustained share of the NVFP4 peak;
// gemm_efficiency_scale multiplies every GEMM efficiency.
absl::StatusOr<PriorConstants> ParsePriorTable(std::string_view text, const DataSetPriors& fitted) {
  using nlohmann::json;
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError("prior table: not a JSON object");
  static const char* const kNumbers[] = {
      "attention_efficiency", "attention_bwd_over_fwd", "gemm_fixed_s", "gemm_loop_per_expert_s",
      "hbm_efficiency", "nvlink_efficiency", "scaleout_efficiency", "host_link_efficiency",
      "dispatch_nvlink_efficiency", "dispatch_scaleout_efficiency", "comm_sms", "reference_sm_count",
      "kernel_launch_s", "kernel_launch_graphs_s", "bf16_flops_per_exp2"};
  static const char* const kOthers[] = {"generation", "gemm_efficiency", "dispatch_scaleout_ceiling",
                                        "sustained_clock_gain", "sustained_clock_gain_precisions",
                                        "nvfp4_sustained_fraction",
                                        "sources"};
  for (const auto& [key, value] : j.items()) {
    const bool known = std::any_of(std::begin(kNumbers), std::end(kNumbers), [&](const char* k) { return key == k; }) ||
                       std::any_of(std::begin(kOthers), std::end(kOthers), [&](const char* k) { return key == k; });
    if (!known) return absl::InvalidArgumentError(absl::StrCat("prior table: unknown field '", key, "'"));
  }
  std::map<std::string, double> number;
  for (const char* key : kNumbers) {
    if (!j.contains(key) || !j.at(key).is_number() || !(j.at(key).get<double>() > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("prior table: field '", key, "' must be a positive number"));
    }
    number[key] = j.at(key).get<double>();
  }
  PriorConstants k;
  if (!j.contains("gemm_efficiency") || !j.at("gemm_efficiency").is_object()) {
    return absl::InvalidArgumentError("prior table: field 'gemm_efficiency' must be an object {precision: fraction}");
  }
  for (const auto& [name, value] : j.at("gemm_efficiency").items()) {
    absl::StatusOr<Precision> p = ParsePrecision(name);
    if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("prior table: gemm_efficiency: ", p.status().message()));
    if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("prior table: gemm_efficiency.", name, " must be in (0, 1]"));
    }
    k.gemm_efficiency[int(*p)] = value.get<double>();
  }
  auto fitted_or_none = [&](const char* key) -> absl::StatusOr<bool> {
    const std::string v = j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
    if (v == "fitted") return true;
    if (v == "none") return false;
    return absl::InvalidArgumentError(absl::StrCat("prior table: field '", key, "' must be \"fitted\" or \"none\""));
  };
  absl::StatusOr<bool> ceiling = fitted_or_none("dispatch_scaleout_ceiling");
  if (!ceiling.ok()) return ceiling.status();
  absl::StatusOr<bool> clock_gain = fitted_or_none("sustained_clock_gain");
  if (!clock_gain.ok()) return clock_gain.status();
  if (*clock_gain) {
    // Sustained clocks raise the GEMMs whose peak the datasheet did not
    // already raise (see the table's source).
    const json& names = j.contains("sustained_clock_gain_precisions") ? j.at("sustained_clock_gain_precisions") : json();
    if (!names.is_array() || names.empty()) {
      return absl::InvalidArgumentError("prior table: a fitted sustained_clock_gain needs sustained_clock_gain_precisions");
    }
    for (const json& name : names) {
      absl::StatusOr<Precision> p = ParsePrecision(name.is_string() ? name.get<std::string>() : "");
      if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("prior table: sustained_clock_gain_precisions: ", p.status().message()));
      k.gemm_efficiency[int(*p)] *= fitted.blackwell_ultra_clock_gain;
    }
  }
  absl::StatusOr<bool> nvfp4_sustained = fitted_or_none("nvfp4_sustained_fraction");
  if (!nvfp4_sustained.ok()) return nvfp4_sustained.status();
  if (*nvfp4_sustained) {
    k.gemm_efficiency[int(Precision::kNvfp4)] *= fitted.blackwell_ultra_nvfp4_sustained;
  }
  k.gemm_fixed_s = number["gemm_fixed_s"];
  k.gemm_loop_per_expert_s = number["gemm_loop_per_expert_s"];
  k.attention_efficiency = number["attention_efficiency"];
  k.attention_bwd_over_fwd = number["attention_bwd_over_fwd"];
  k.bf16_flops_per_exp2 = number["bf16_flops_per_exp2"];
  k.hbm_efficiency = number["hbm_efficiency"];
  k.nvlink_efficiency = number["nvlink_efficiency"];
  k.scaleout_efficiency = number["scaleout_efficiency"];
  k.host_link_efficiency = number["host_link_efficiency"];
  k.dispatch_nvlink_efficiency = number["dispatch_nvlink_efficiency"];
  k.dispatch_scaleout_efficiency = number["dispatch_scaleout_efficiency"];
  k.dispatch_scaleout_max_bytes_per_sec = *ceiling ? fitted.blackwell_dispatch_scaleout_max_bytes_per_sec : 0.0;
  // The communication kernels' SMs, as a share of the GPU the figure is for.
  k.comm_sm_fraction = number["comm_sms"] / number["reference_sm_count"];
  k.kernel_launch_s = number["kernel_launch_s"];
  k.kernel_launch_graphs_s = number["kernel_launch_graphs_s"];
  for (double& e : k.gemm_efficiency) e *= fitted.gemm_efficiency_scale;
  return k;
}

PriorConstants PriorConstantsFor(const GpuSpec& gpu) {
  return PriorConstantsFor(gpu, DataSetPriors());
}

PriorConstants PriorConstantsFor(const GpuSpec& gpu, const DataSetPriors& fitted) {
  const std::string_view name = GpuGenerationName(gpu.generation);
  for (const internal::EmbeddedPriorTable& table : internal::EmbeddedPriorTables()) {
    if (table.name != name) continue;
    absl::StatusOr<PriorConstants> k = ParsePriorTable(table.json, fitted);
    // Built-in data, checked by cost_model_test for every generation.
    if (!k.ok()) {
      std::fprintf(stderr, "moetune: built-in prior table %s: %s\n", std::string(name).c_str(),
                   std::string(k.status().message()).c_str());
      std::abort();
    }
    return *k;
  }
  std::fprintf(stderr, "moetune: no built-in prior table for GPU generation %s\n", std::string(name).c_str());
  std::abort();
}

DatasheetCostModel::DatasheetCostModel(ClusterSpec cluster)
    : DatasheetCostModel(cluster, PriorConstantsFor(cluster.gpu)) {}

DatasheetCostModel::DatasheetCostModel(ClusterSpec cluster,
                                       const PriorConstants& constants)
    : cluster_(std::move(cluster)), k_(constants) {
  for (int p = 0; p < kNumPrecisions; ++p) {
    // What the tensor cores sustain: the datasheet peak x the GPU's
    // sustained fraction (planner/hardware.h).
    peak_flops_[p] = PeakDenseFlopsPerSec(cluster_.gpu, Precision(p)).value_or(0.0) *
                     cluster_.gpu.sustained_tensor_fraction;
  }
}

Cost DatasheetCostModel::DenseGemm(double m, double n, double k,
                                   Precision precision) const {
  // Roofline: max(2 m n k / (peak x eff x tile factor), operand bytes / HBM)
  // plus a fixed kernel time. The tile factor d / (d + 128) of the smallest
  // dimension captures partial tiles.
  const double flops = 2 * m * n * k;
  const double d = std::min(m, std::min(n, k));
  const double eff = k_.gemm_efficiency[int(precision)] *
                     (d / (d + kGemmHalfEfficiencyRows));
  const double compute = flops / (peak_flops_[int(precision)] * eff);
  const double bytes =
      (m * k + k * n) * GemmOperandBytes(precision) + m * n * 2.0;
  const double memory =
      bytes / (cluster_.gpu.hbm_bytes_per_sec * k_.hbm_efficiency);
  return {k_.gemm_fixed_s + std::max(compute, memory),
          CostSource::kDatasheetPrior};
}

Cost DatasheetCostModel::GroupedGemm(const GroupedGemmShape& s) const {
  // One grouped GEMM over num_experts experts of tokens_per_expert rows
  // each; the slowest GPU holds `imbalance` x the mean. Rows per expert set
  // the tile factor.
  const double rows = s.tokens_per_expert * s.imbalance;
  const double flops = 2.0 * s.num_experts * rows * double(s.n) * double(s.k);
  const double eff = k_.gemm_efficiency[int(s.precision)] *
                     (s.tokens_per_expert /
                      (s.tokens_per_expert + kGemmHalfEfficiencyRows));
  double t = flops / (peak_flops_[int(s.precision)] * eff) + k_.gemm_fixed_s;
  const double weight_bytes =
      double(s.num_experts) * s.n * s.k * GemmOperandBytes(s.precision);
  t = std::max(t, weight_bytes / (cluster_.gpu.hbm_bytes_per_sec *
                                  k_.hbm_efficiency));
  if (!s.grouped) t += s.num_experts * k_.gemm_loop_per_expert_s;
  return {t, CostSource::kDatasheetPrior};
}

namespace {
// Fused (flash) attention's two bounds, each at the kernel's efficiency:
// the tensor cores' QK^T and AV, 2 FLOPs x scores x (d_qk + d_v), and the
// SFU's one exponential per score, worth bf16_flops_per_exp2 tensor FLOPs
// of time. The kernel pipelines the two, so the slower bounds:
// max(mma, exp). Example: head dim 64 (d_qk + d_v = 128, 256 FLOPs per
// score) on Blackwell (512 FLOPs per exponential) is bound by the
// exponentials at twice its MMA time; head dim 128 is balanced there, and
// Hopper and Blackwell Ultra (256 per exponential) are MMA-bound from head
// dim 64 up (FlashAttention-4, Zadouri et al. 2026: B200's forward is bound
// by MUFU.EX2 at 16 per clock per SM; NVIDIA, "Making softmax more
// efficient with Blackwell Ultra": twice the SFU rate).
struct FusedAttentionBounds {
  double mma_s = 0;
  double exp_s = 0;
};
FusedAttentionBounds FusedBounds(const AttentionShape& a, double peak_bf16, double efficiency,
                                 double flops_per_exp) {
  const double scores = a.queries * a.context * a.heads;
  const double rate = peak_bf16 * efficiency;
  return {2.0 * scores * (a.qk_head_dim + a.v_head_dim) / rate, scores * flops_per_exp / rate};
}
}  // namespace

Cost DatasheetCostModel::AttentionForward(const AttentionShape& a) const {
  if (a.fused) {
    const FusedAttentionBounds b = FusedBounds(a, peak_flops_[int(Precision::kBf16)],
                                               k_.attention_efficiency, k_.bf16_flops_per_exp2);
    return {k_.gemm_fixed_s + std::max(b.mma_s, b.exp_s), CostSource::kDatasheetPrior};
  }
  // Unfused: batched GEMMs over every key (the mask is applied to the
  // materialised scores), then the score matrix passes through HBM:
  // write scores, read them for softmax, write probabilities, read them for
  // AV = kUnfusedScoreBytesForward per score.
  const double flops = 2.0 * a.queries * a.keys * a.heads * (a.qk_head_dim + a.v_head_dim);
  const double gemm = flops / (peak_flops_[int(Precision::kBf16)] *
                               k_.gemm_efficiency[int(Precision::kBf16)]);
  const double scores = a.queries * a.keys * a.heads;
  const double memory = scores * kUnfusedScoreBytesForward /
                        (cluster_.gpu.hbm_bytes_per_sec * k_.hbm_efficiency);
  return {3 * k_.gemm_fixed_s + gemm + memory, CostSource::kDatasheetPrior};
}

Cost DatasheetCostModel::AttentionBackward(const AttentionShape& a) const {
  if (a.fused) {
    // attention_bwd_over_fwd x the forward's MMA time (five GEMMs to the
    // forward's two, at lower efficiency), or the softmax re-computation's
    // one exponential per score where that is slower.
    const FusedAttentionBounds b = FusedBounds(a, peak_flops_[int(Precision::kBf16)],
                                               k_.attention_efficiency, k_.bf16_flops_per_exp2);
    return {k_.attention_bwd_over_fwd * k_.gemm_fixed_s +
                std::max(k_.attention_bwd_over_fwd * b.mma_s, b.exp_s),
            CostSource::kDatasheetPrior};
  }
  // Unfused backward: four batched GEMMs (dV, dP, dQ, dK: twice the
  // forward FLOPs) and the softmax backward reading probabilities and their
  // gradient, writing the score gradient, twice the forward traffic.
  const AttentionShape& s = a;
  const double dims = s.qk_head_dim + s.v_head_dim;
  const double flops = 4.0 * s.queries * s.keys * s.heads * dims;
  const double gemm = flops / (peak_flops_[int(Precision::kBf16)] *
                               k_.gemm_efficiency[int(Precision::kBf16)]);
  const double scores = s.queries * s.keys * s.heads;
  const double memory = scores * 2 * kUnfusedScoreBytesForward /
                        (cluster_.gpu.hbm_bytes_per_sec * k_.hbm_efficiency);
  return {5 * k_.gemm_fixed_s + gemm + memory, CostSource::kDatasheetPrior};
}

Cost DatasheetCostModel::MemoryBound(double bytes) const {
  return {bytes / (cluster_.gpu.hbm_bytes_per_sec * k_.hbm_efficiency),
          CostSource::kDatasheetPrior};
}

Cost DatasheetCostModel::Collective(CollectiveKind kind, double bytes,
                                    int group_size, LinkSpan span) const {
  if (group_size <= 1 || bytes <= 0) return {0.0, CostSource::kDatasheetPrior};
  // alpha-beta: latency steps + bus bytes / achieved bus bandwidth. Across
  // NVLink domains every rank's traffic leaves through its own NIC.
  const bool nvlink = span == LinkSpan::kNvlinkDomain;
  const double bw = nvlink ? cluster_.nvlink_bytes_per_sec * k_.nvlink_efficiency
                           : cluster_.scaleout_bytes_per_sec *
                                 k_.scaleout_efficiency;
  const double latency =
      nvlink ? cluster_.nvlink_latency_s : cluster_.scaleout_latency_s;
  const double steps = kind == CollectiveKind::kSendRecv ? 1.0
                                                         : LatencySteps(group_size);
  return {steps * latency + BusFactor(kind, group_size) * bytes / bw,
          CostSource::kDatasheetPrior};
}

namespace {
// The two link times of one EP exchange (DatasheetCostModel::Dispatch).
struct DispatchLinkTimes {
  double nvlink_s = 0;
  double nic_s = 0;
  double latency_s = 0;
};
DispatchLinkTimes DispatchLinks(const ClusterSpec& cluster, const PriorConstants& k,
                                const DispatchShape& s) {
  DispatchLinkTimes t;
  const double g = std::max(1, std::min(s.ep_gpus_per_domain, s.ep));
  const double domains = double(s.ep) / g;
  double nvlink_copies = 0;  // per token, to other GPUs of this domain
  double remote_copies = 0;  // per token, to other domains
  if (s.dedup) {
    // Fused dispatch sends a token once per destination GPU in the domain
    // and once per destination domain (forwarded inside it over NVLink).
    // By symmetry the token's own GPU (domain) is as likely a destination
    // as any other: (g - 1) / ep of the distinct GPUs are its domain's
    // others, (domains - 1) / domains of the distinct domains are remote.
    const int groups = s.router_groups, gk = s.router_group_topk;
    nvlink_copies = DistinctDestinations(s.ep, s.top_k, groups, gk) * (g - 1) / s.ep;
    remote_copies = DistinctDestinations(domains, s.top_k, groups, gk) * (domains - 1) / domains;
  } else {
    // All-to-all sends one copy per (token, expert); 1/ep stay local.
    nvlink_copies = s.top_k * (g - 1) / s.ep;
    remote_copies = s.top_k * (s.ep - g) / s.ep;
  }
  double nv_rate = cluster.nvlink_bytes_per_sec * k.dispatch_nvlink_efficiency;
  if (s.nvlink_rate_cap_bytes_per_sec > 0) {
    nv_rate = std::min(nv_rate, s.nvlink_rate_cap_bytes_per_sec);
  }
  t.nvlink_s = s.tokens * nvlink_copies * s.bytes_per_token / nv_rate;
  double ib_rate = cluster.scaleout_bytes_per_sec * k.dispatch_scaleout_efficiency;
  if (k.dispatch_scaleout_max_bytes_per_sec > 0) {
    ib_rate = std::min(ib_rate, k.dispatch_scaleout_max_bytes_per_sec);
  }
  t.nic_s = s.tokens * remote_copies * s.bytes_per_token / ib_rate;
  t.latency_s = remote_copies > 0 ? 2 * cluster.scaleout_latency_s
                                  : 2 * cluster.nvlink_latency_s;
  return t;
}
}  // namespace

Cost DatasheetCostModel::Dispatch(const DispatchShape& s) const {
  if (s.ep <= 1 || s.tokens <= 0) return {0.0, CostSource::kDatasheetPrior};
  const DispatchLinkTimes t = DispatchLinks(cluster_, k_, s);
  // NVLink and NIC transfers proceed concurrently; the slower one bounds.
  return {t.latency_s + std::max(t.nvlink_s, t.nic_s), CostSource::kDatasheetPrior};
}

double DatasheetCostModel::DispatchNvlinkShare(const DispatchShape& s) const {
  if (s.ep <= 1 || s.tokens <= 0) return 0.0;
  const DispatchLinkTimes t = DispatchLinks(cluster_, k_, s);
  // The time the SM-issued NVLink copying outlasts the NIC transfer, as a
  // share of the exchange: 1 without a NIC part, 0 when the NIC bounds.
  const double bound = std::max(t.nvlink_s, t.nic_s);
  return bound > 0 ? (bound - t.nic_s) / bound : 0.0;
}

Cost DatasheetCostModel::HostOffload(double bytes) const {
  return {bytes / (cluster_.host_link_bytes_per_sec * k_.host_link_efficiency),
          CostSource::kDatasheetPrior};
}

double DatasheetCostModel::OverlapSlowdown(int num_comm_streams) const {
  // Compute concurrent with communication kernels runs on the SMs those
  // leave free: 1 / (1 - f). The dispatch/combine kernels hold their SM
  // share whatever the stream count; each extra stream adds a quarter of
  // it (more concurrent NCCL channels).
  const int streams = std::min(std::max(num_comm_streams, 1), 4);
  const double f = k_.comm_sm_fraction * (1.0 + kExtraStreamSmShare * (streams - 1));
  return 1.0 / (1.0 - std::min(f, 0.5));
}

double DatasheetCostModel::KernelLaunchSeconds(bool cuda_graphs) const {
  return cuda_graphs ? k_.kernel_launch_graphs_s : k_.kernel_launch_s;
}

double InterpolateSeconds(const MeasuredCurve& c, double size) {
  const size_t n = c.sizes.size();
  if (n == 1 || size <= c.sizes.front()) {
    // Hold the edge rate.
    return c.seconds.front() * size / c.sizes.front();
  }
  if (size >= c.sizes.back()) return c.seconds.back() * size / c.sizes.back();
  const auto it = std::upper_bound(c.sizes.begin(), c.sizes.end(), size);
  const size_t hi = size_t(it - c.sizes.begin());
  const size_t lo = hi - 1;
  // Rate linear in log(size).
  const double r_lo = c.sizes[lo] / c.seconds[lo];
  const double r_hi = c.sizes[hi] / c.seconds[hi];
  const double t = (std::log(size) - std::log(c.sizes[lo])) /
                   (std::log(c.sizes[hi]) - std::log(c.sizes[lo]));
  const double rate = r_lo + t * (r_hi - r_lo);
  return size / rate;
}

namespace {

absl::Status CheckCurve(const MeasuredCurve& c, const std::string& what,
                        bool allow_empty) {
  if (c.sizes.empty() && allow_empty) return absl::OkStatus();
  if (c.sizes.empty() || c.sizes.size() != c.seconds.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", c.sizes.size(), " sizes vs ", c.seconds.size(),
        " seconds (need equal, non-empty)"));
  }
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    if (!(c.sizes[i] > 0) || !(c.seconds[i] > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": point ", i, " (size ", c.sizes[i], ", seconds ",
                       c.seconds[i], ") is not positive"));
    }
    if (i > 0 && !(c.sizes[i] > c.sizes[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": sizes not strictly increasing at point ", i, " (",
          c.sizes[i - 1], " then ", c.sizes[i], ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateCalibrationTables(const CalibrationTables& t) {
  for (const GemmTable& g : t.dense_gemm) {
    if (absl::Status s = CheckCurve(
            g.flops_curve,
            absl::StrCat("dense_gemm ", internal::Sv(PrecisionName(g.precision))),
            false);
        !s.ok())
      return s;
  }
  for (const GroupedGemmTable& g : t.grouped_gemm) {
    const std::string what =
        absl::StrCat(g.grouped ? "grouped_gemm " : "loop_gemm ", internal::Sv(PrecisionName(g.precision)));
    if (g.points.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": no points"));
    for (size_t i = 0; i < g.points.size(); ++i) {
      const GroupedGemmPoint& pt = g.points[i];
      if (!(pt.tokens_per_expert > 0) || pt.n <= 0 || pt.k <= 0 || pt.num_experts <= 0 || !(pt.seconds > 0) ||
          !std::isfinite(pt.seconds)) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": point ", i, " (tokens_per_expert ",
                                                       pt.tokens_per_expert, ", n ", pt.n, ", k ", pt.k,
                                                       ", experts ", pt.num_experts, ", seconds ", pt.seconds,
                                                       ") is not positive"));
      }
    }
  }
  for (const CollectiveTable& c : t.collectives) {
    if (c.group_size < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "collective ", internal::Sv(CollectiveKindName(c.kind)),
          ": group_size=", c.group_size, " (need >= 2)"));
    }
    const std::string what =
        absl::StrCat("collective ", internal::Sv(CollectiveKindName(c.kind)), " n=", c.group_size);
    if (absl::Status s = CheckCurve(c.bytes_curve, what, false); !s.ok()) return s;
    for (const AlphaBetaSegment& seg : c.fit) {
      if (!(seg.alpha_seconds >= 0) || !(seg.seconds_per_byte > 0) || !(seg.max_bytes > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": alpha-beta segment (alpha ", seg.alpha_seconds,
                                                       " s, ", seg.seconds_per_byte, " s/B, up to ",
                                                       seg.max_bytes, " B) is not positive"));
      }
    }
  }
  for (const DispatchTable& d : t.dispatch) {
    if (absl::Status s = CheckCurve(
            d.bytes_curve, absl::StrCat("dispatch ep=", d.ep), false);
        !s.ok())
      return s;
  }
  if (absl::Status s = CheckCurve(t.host_offload, "host_offload", true);
      !s.ok())
    return s;
  for (const OverlapPoint& o : t.overlap) {
    if (o.num_comm_streams < 1 || !(o.slowdown >= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("overlap point streams=", o.num_comm_streams,
                       " slowdown=", o.slowdown, " (need >= 1, >= 1.0)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CalibratedCostModel>> CalibratedCostModel::Create(
    CalibrationTables tables, std::shared_ptr<const CostModel> prior) {
  if (prior == nullptr) {
    return absl::InvalidArgumentError("CalibratedCostModel needs a prior");
  }
  if (absl::Status s = ValidateCalibrationTables(tables); !s.ok()) return s;
  return std::unique_ptr<CalibratedCostModel>(
      new CalibratedCostModel(std::move(tables), std::move(prior)));
}

CalibratedCostModel::CalibratedCostModel(CalibrationTables tables,
                                         std::shared_ptr<const CostModel> prior)
    : tables_(std::move(tables)), prior_(std::move(prior)) {}

Cost CalibratedCostModel::DenseGemm(double m, double n, double k,
                                    Precision precision) const {
  for (const GemmTable& g : tables_.dense_gemm) {
    if (g.precision == precision) {
      return {InterpolateSeconds(g.flops_curve, 2 * m * n * k),
              CostSource::kCalibrated};
    }
  }
  return prior_->DenseGemm(m, n, k, precision);
}

namespace {

// Achieved rate (useful FLOP/s) of a set of points of one (n, k) at
// `tokens`: piecewise linear in log(tokens per expert), edge rates held.
// Points of equal tokens are merged by their median rate.
double RateAtTokens(std::vector<std::pair<double, double>> tokens_rate, double tokens) {
  std::sort(tokens_rate.begin(), tokens_rate.end());
  std::vector<std::pair<double, double>> merged;
  for (size_t i = 0; i < tokens_rate.size();) {
    size_t j = i;
    std::vector<double> rates;
    while (j < tokens_rate.size() && tokens_rate[j].first == tokens_rate[i].first) rates.push_back(tokens_rate[j++].second);
    std::sort(rates.begin(), rates.end());
    const size_t n = rates.size();
    merged.push_back({tokens_rate[i].first, n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2])});
    i = j;
  }
  if (tokens <= merged.front().first) return merged.front().second;
  if (tokens >= merged.back().first) return merged.back().second;
  size_t hi = 1;
  while (merged[hi].first < tokens) ++hi;
  const auto& a = merged[hi - 1];
  const auto& b = merged[hi];
  const double t = (std::log(tokens) - std::log(a.first)) / (std::log(b.first) - std::log(a.first));
  return a.second + t * (b.second - a.second);
}

}  // namespace

double GroupedGemmTableSeconds(const GroupedGemmTable& table, double tokens_per_expert, int num_experts,
                               int64_t n, int64_t k) {
  // Group the points by (n, k); rates at the queried tokens per expert.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> by_nk;
  for (const GroupedGemmPoint& p : table.points) {
    const double flops = 2.0 * p.num_experts * p.tokens_per_expert * double(p.n) * double(p.k);
    by_nk[{p.n, p.k}].push_back({p.tokens_per_expert, flops / p.seconds});
  }
  double rate = 0, weight_sum = 0;
  for (const auto& [nk, pts] : by_nk) {
    const double r = RateAtTokens(pts, tokens_per_expert);
    const double dn = std::log(double(nk.first) / double(n)), dk = std::log(double(nk.second) / double(k));
    const double d2 = dn * dn + dk * dk;
    if (d2 == 0) {  // measured (n, k): used alone
      rate = r;
      weight_sum = 1;
      break;
    }
    rate += r / d2;
    weight_sum += 1 / d2;
  }
  const double flops = 2.0 * num_experts * tokens_per_expert * double(n) * double(k);
  return flops / (rate / weight_sum);
}

Cost CalibratedCostModel::GroupedGemm(const GroupedGemmShape& s) const {
  for (const GroupedGemmTable& g : tables_.grouped_gemm) {
    if (g.precision == s.precision && g.grouped == s.grouped && !g.points.empty() && s.n > 0 && s.k > 0 &&
        s.tokens_per_expert > 0) {
      // The busiest GPU's experts hold imbalance x the mean tokens each.
      return {GroupedGemmTableSeconds(g, s.tokens_per_expert * s.imbalance, s.num_experts, s.n, s.k),
              CostSource::kCalibrated};
    }
  }
  return prior_->GroupedGemm(s);
}

Cost CalibratedCostModel::AttentionForward(const AttentionShape& a) const {
  return prior_->AttentionForward(a);
}

Cost CalibratedCostModel::AttentionBackward(const AttentionShape& a) const {
  return prior_->AttentionBackward(a);
}

Cost CalibratedCostModel::MemoryBound(double bytes) const {
  return prior_->MemoryBound(bytes);
}

std::vector<AlphaBetaSegment> FitAlphaBeta(const MeasuredCurve& c, double* max_rel_error) {
  std::vector<AlphaBetaSegment> fit;
  *max_rel_error = 0;
  const size_t n = c.sizes.size();
  if (n == 0) return fit;
  // Split the points into the ranges; a range with < 2 points joins the
  // next one (the last joins the previous).
  std::vector<std::vector<size_t>> ranges(1);
  std::vector<double> bounds;
  size_t b = 0;
  for (size_t i = 0; i < n; ++i) {
    while (b < std::size(kAlphaBetaRangeBytes) && c.sizes[i] > kAlphaBetaRangeBytes[b]) {
      ranges.emplace_back();
      bounds.push_back(kAlphaBetaRangeBytes[b]);
      ++b;
    }
    ranges.back().push_back(i);
  }
  bounds.push_back(std::numeric_limits<double>::infinity());
  std::vector<std::vector<size_t>> groups;
  std::vector<double> group_max;
  for (size_t r = 0; r < ranges.size(); ++r) {
    if (groups.empty() || groups.back().size() >= 2) {
      groups.push_back(ranges[r]);
      group_max.push_back(bounds[r]);
    } else {
      groups.back().insert(groups.back().end(), ranges[r].begin(), ranges[r].end());
      group_max.back() = bounds[r];
    }
  }
  if (groups.size() > 1 && groups.back().size() < 2) {
    const std::vector<size_t> last = groups.back();
    groups.pop_back();
    group_max.pop_back();
    groups.back().insert(groups.back().end(), last.begin(), last.end());
    group_max.back() = std::numeric_limits<double>::infinity();
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) continue;
    AlphaBetaSegment seg;
    seg.max_bytes = group_max[g];
    // Weighted least squares, weights 1 / T^2.
    double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
    for (size_t i : groups[g]) {
      const double x = c.sizes[i], t = c.seconds[i], w = 1 / (t * t);
      sw += w, swx += w * x, swxx += w * x * x, swt += w * t, swxt += w * x * t;
    }
    const double det = sw * swxx - swx * swx;
    bool ok = false;
    if (groups[g].size() >= 2 && det > 0) {
      seg.alpha_seconds = (swxx * swt - swx * swxt) / det;
      seg.seconds_per_byte = (sw * swxt - swx * swt) / det;
      ok = seg.alpha_seconds >= 0 && seg.seconds_per_byte > 0;
    }
    if (!ok) {  // through the origin: beta = sum w x t / sum w x^2
      seg.alpha_seconds = 0;
      seg.seconds_per_byte = swxt / swxx;
    }
    fit.push_back(seg);
  }
  for (size_t i = 0; i < n; ++i) {
    const double t = AlphaBetaSeconds(fit, c.sizes[i]);
    *max_rel_error = std::max(*max_rel_error, std::fabs(t - c.seconds[i]) / c.seconds[i]);
  }
  return fit;
}

double AlphaBetaSeconds(const std::vector<AlphaBetaSegment>& fit, double bytes) {
  for (const AlphaBetaSegment& s : fit) {
    if (bytes <= s.max_bytes) return s.alpha_seconds + bytes * s.seconds_per_byte;
  }
  return fit.back().alpha_seconds + bytes * fit.back().seconds_per_byte;
}

namespace {

// A table's time for `bytes` on `group_size` ranks: its alpha-beta fit
// (the measured curve when it has none), the latency term scaled by the
// ring's latency steps and the bandwidth term by the bus factor when the
// table was measured on another group size.
double CollectiveTableSeconds(const CollectiveTable& c, CollectiveKind kind, double bytes, int group_size) {
  if (c.fit.empty()) {
    return InterpolateSeconds(c.bytes_curve, bytes) * BusFactor(kind, group_size) / BusFactor(kind, c.group_size);
  }
  const AlphaBetaSegment* seg = &c.fit.back();
  for (const AlphaBetaSegment& s : c.fit) {
    if (bytes <= s.max_bytes) {
      seg = &s;
      break;
    }
  }
  const double steps = kind == CollectiveKind::kSendRecv ? 1.0 : LatencySteps(group_size);
  const double steps_m = kind == CollectiveKind::kSendRecv ? 1.0 : LatencySteps(c.group_size);
  return seg->alpha_seconds * steps / steps_m +
         bytes * seg->seconds_per_byte * BusFactor(kind, group_size) / BusFactor(kind, c.group_size);
}

}  // namespace

Cost CalibratedCostModel::Collective(CollectiveKind kind, double bytes,
                                     int group_size, LinkSpan span) const {
  if (group_size <= 1) return prior_->Collective(kind, bytes, group_size, span);
  // The measured group sizes of this kind and link nearest below and above
  // (in log group size); an exact one is used alone, two bracketing ones are
  // interpolated in log(group size), one alone is scaled (latency steps,
  // bus factor).
  const CollectiveTable* below = nullptr;
  const CollectiveTable* above = nullptr;
  for (const CollectiveTable& c : tables_.collectives) {
    if (c.kind != kind || c.span != span) continue;
    if (c.group_size <= group_size && (below == nullptr || c.group_size > below->group_size)) below = &c;
    if (c.group_size >= group_size && (above == nullptr || c.group_size < above->group_size)) above = &c;
  }
  if (below == nullptr && above == nullptr) return prior_->Collective(kind, bytes, group_size, span);
  if (below == nullptr || above == nullptr || below == above || below->group_size == above->group_size) {
    const CollectiveTable* t = below != nullptr ? below : above;
    return {CollectiveTableSeconds(*t, kind, bytes, group_size), CostSource::kCalibrated};
  }
  const double lo = CollectiveTableSeconds(*below, kind, bytes, group_size);
  const double hi = CollectiveTableSeconds(*above, kind, bytes, group_size);
  const double w = (std::log(double(group_size)) - std::log(double(below->group_size))) /
                   (std::log(double(above->group_size)) - std::log(double(below->group_size)));
  return {lo + w * (hi - lo), CostSource::kCalibrated};
}

Cost CalibratedCostModel::Dispatch(const DispatchShape& s) const {
  for (const DispatchTable& d : tables_.dispatch) {
    if (d.dedup == s.dedup && d.ep == s.ep &&
        d.ep_gpus_per_domain == s.ep_gpus_per_domain) {
      double seconds = InterpolateSeconds(d.bytes_curve, s.tokens * s.top_k * s.bytes_per_token);
      if (s.dedup && s.router_groups > 1) {
        // The probe routes every token to uniform experts; a group-limited
        // router sends it to fewer destinations. Scaled by the prior's
        // ratio of the two.
        DispatchShape uniform = s;
        uniform.router_groups = uniform.router_group_topk = 0;
        const double u = prior_->Dispatch(uniform).seconds;
        if (u > 0) seconds *= prior_->Dispatch(s).seconds / u;
      }
      return {seconds, CostSource::kCalibrated};
    }
  }
  return prior_->Dispatch(s);
}

double CalibratedCostModel::DispatchNvlinkShare(const DispatchShape& s) const {
  return prior_->DispatchNvlinkShare(s);
}

Cost CalibratedCostModel::HostOffload(double bytes) const {
  if (tables_.host_offload.sizes.empty()) return prior_->HostOffload(bytes);
  return {InterpolateSeconds(tables_.host_offload, bytes),
          CostSource::kCalibrated};
}

double CalibratedCostModel::OverlapSlowdown(int num_comm_streams) const {
  for (const OverlapPoint& o : tables_.overlap) {
    if (o.num_comm_streams == num_comm_streams) return o.slowdown;
  }
  return prior_->OverlapSlowdown(num_comm_streams);
}

double CalibratedCostModel::KernelLaunchSeconds(bool cuda_graphs) const {
  return prior_->KernelLaunchSeconds(cuda_graphs);
}

EtpExchange ExpertTensorParallelExchange(double rows, double row_elems, double operand_bytes,
                                         int etp) {
  EtpExchange x;
  if (etp <= 1) return x;
  const double gathered_elems = rows * etp * row_elems;
  x.gather_bytes = gathered_elems * operand_bytes;
  x.scatter_bytes = gathered_elems * 2.0;  // BF16 partial sums
  return x;
}

}  // namespace moetune::planner
