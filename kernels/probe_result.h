// ProbeResult: the one result schema of every probe on every backend.
//
// A probe run yields several measurements (e.g. grouped GEMM: loop / grouped /
// dense reference for each pass; collectives: one per size), each with all its
// samples, their min/median/max, the statistic the planner uses, and derived
// rates. Bandwidths follow nccl-tests (doc/PERFORMANCE.md):
//   alg_bw = bytes / time
//   bus_bw = alg_bw * factor, factor: all_reduce 2(n-1)/n; all_gather,
//            reduce_scatter, all_to_all (n-1)/n; point-to-point 1.
// GB = 1e9 bytes (kBytesPerGB), TFLOPS = 1e12 flop/s.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/probe_types.h"

namespace moetune::kernels {

inline constexpr int kProbeResultSchemaVersion = 1;
inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kFlopsPerTFlop = 1e12;

enum class Statistic { kMin, kMedian, kMax };
const char* StatisticName(Statistic s);  // "min", "median", "max"

struct SampleSummary {
  double min_seconds = 0;
  double median_seconds = 0;  // mean of the two middle samples for even counts
  double max_seconds = 0;
};
// Summary of samples; all zero when `samples` is empty.
SampleSummary Summarize(const std::vector<double>& samples_seconds);

// nccl-tests' bus bandwidth factor for `op` over `n` ranks.
double BusBandwidthFactor(CollectiveOp op, int64_t n);

struct Measurement {
  // What was measured, e.g. "fwd/grouped", "dispatch", "h2d/pinned".
  std::string name;
  // Extra labels (implementation, pass, size_bytes, ...), printed in order.
  // A measurement with no samples and an "unimplemented" label (its value:
  // why) records an implementation the backend cannot run for these
  // parameters, e.g. cublasGemmGroupedBatchedEx for mxfp8.
  std::map<std::string, std::string> labels;
  std::vector<double> samples_seconds;  // every timed iteration, in order
  SampleSummary summary;
  Statistic planner_statistic = Statistic::kMedian;

  // Work per sample; 0 when not applicable.
  double flops = 0;        // TFLOPS = flops / t
  double bytes = 0;        // alg_bw = bytes / t
  double bus_factor = 0;   // bus_bw = alg_bw * bus_factor (0 = no bus bw)

  // Derived from the planner statistic (filled by Finalize()).
  std::optional<double> tflops;
  std::optional<double> alg_bw_gbps;
  std::optional<double> bus_bw_gbps;
  // Reference time / this time for the same work (e.g. dense GEMM / grouped).
  std::optional<double> efficiency_vs_reference;
  // Extra named numbers (hidden_fraction, gemm_slowdown, ...).
  std::map<std::string, double> values;

  // Correctness check done before timing.
  bool verified = false;
  // The check's relative error: GEMMs ||got - exact||_2 / ||exact||_2 over the
  // checked elements (kernels/reference.h); other probes the largest
  // element-wise relative error.
  double max_rel_error = 0;

  double PlannerSeconds() const;
  // Computes summary and the derived rates from samples/flops/bytes.
  void Finalize();
};

struct Provenance {
  int schema_version = kProbeResultSchemaVersion;
  std::string start_time_utc;  // RFC 3339, "2026-11-29T18:00:00Z"
  std::string end_time_utc;
  std::string host;
  std::string backend;         // "cuda" or "cpu"
  std::string device_name;     // "NVIDIA H200" / CPU model name
  std::string device_uuid;     // "GPU-..." or "" on CPU
  std::string compute_capability;  // "9.0" or ""
  std::string driver_version;  // CUDA driver API version "13.0", or kernel release
  std::string cuda_runtime_version;
  std::string cublas_version;
  std::string nccl_version;
  std::string blas_version;    // OpenBLAS config string on CPU
  std::string compute_dtype;   // what the arithmetic really used ("fp32" on CPU)
  std::map<std::string, std::string> env;  // NCCL_*, CUDA_*, OPENBLAS_*, OMP_*
  int rank = 0;
  int world_size = 1;
  int ranks_per_node = 0;
  int local_rank = 0;
};

struct ProbeResult {
  ProbeKind kind = ProbeKind::kGroupedGemm;
  std::string params_json;  // ParamsToJson() of the request
  std::vector<Measurement> measurements;
  Provenance provenance;

  const Measurement* Find(const std::string& name) const;
};

// One JSON object (stable key order), e.g. for an agent to forward or a file.
std::string ToJson(const ProbeResult& r);
// Fixed-width table rows: probe, measurement, labels, median, rate, efficiency.
std::string ToTable(const ProbeResult& r);

// Provenance helpers for the backends.
std::string NowUtcRfc3339();
std::string HostName();
// Environment variables starting with one of the prefixes.
std::map<std::string, std::string> EnvWithPrefixes(const std::vector<std::string>& prefixes);

}  // namespace moetune::kernels
