// Fitting: stored probe results -> the planner's CalibrationTables, one per
// (cluster, GPU model), and straggler flags per agent.
//
// Measurements are recognized by the contract in kernels/measurement_roles.h
// (names and labels written by the probes), using each measurement's
// planner statistic (its median unless the probe says otherwise):
//   grouped GEMM  "<pass>/grouped" and "<pass>/loop" of the fwd and bwd_data
//                 passes (each expert [tokens x k] x [k x n], as the planner
//                 asks) -> points (tokens per expert, n, k, experts) of the
//                 grouped / loop table; "<pass>/dense_ref" -> the dense GEMM
//                 table by FLOPs; precision = the requested dtype (the CPU
//                 twins compute in fp32 and say so in compute_dtype);
//   collectives   per (op, span, group size) from the labels; the curve of
//                 bytes -> median seconds plus alpha-beta fitted per size
//                 range (planner FitAlphaBeta); span intra_node -> NVLink
//                 domain, inter_node -> scale-out; nccl-tests logs imported
//                 with `moetune measurements import` arrive the same way;
//   dispatch      "dispatch" measurements per (mode de-duplicated or not, EP
//                 size, EP ranks per domain); size = tokens x top_k x hidden x
//                 dtype bytes, the DispatchShape convention;
//   offload       "h2d|d2h/pinned/<bytes>" alone (not under a GEMM) ->
//                 host_offload; size = bytes;
//   overlap       the "gemm_slowdown" value -> one point at 1 comm stream.
// Every table records the agents its samples came from, how many samples,
// and its largest relative deviation from them (TableProvenance). Failed
// results are skipped.
//
// Stragglers: for every single-rank measurement that at least
// `min_nodes` nodes produced (same probe parameters and name), each node's
// fastest sample (min_seconds: what the node can do, not inflated by
// transient contention) is compared with the median of the other nodes';
// a node slower than straggler_ratio x that is flagged with both numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "planner/cost_model.h"
#include "proto/common.pb.h"

namespace moetune::server {

struct FitOptions {
  double straggler_ratio = 1.5;
  int min_nodes = 3;
};

struct ClusterFit {
  std::string cluster;
  std::vector<moetune::planner::CalibrationTables> tables;  // one per GPU model
  // agent_id -> flags.
  std::map<std::string, std::vector<moetune::v1::StragglerFlag>> stragglers;
  int results_used = 0;
  int results_failed = 0;
  // When the newest successful result of the fit reached the server (RFC
  // 3339, the server's clock; empty: none). The fit is a function of the
  // stored results only, so its tables are what they became then, whenever
  // (and however often) the server recomputes them. Set by the caller of
  // FitCluster (PlannerAdapter); the plan report states the age from it.
  std::string fitted_at;
  std::map<std::string, std::string> compute_dtypes;  // gpu -> what ran
};

ClusterFit FitCluster(const std::string& cluster,
                      const std::vector<moetune::v1::ProbeResult>& results,
                      const FitOptions& options);

// Summary for GetCalibration: per GPU model, the number of points per table.
nlohmann::json ToJson(const ClusterFit& fit);

// Whether a measured device (its CUDA name, e.g. "NVIDIA H100 80GB HBM3") is
// the GPU model of a hardware description (e.g. "NVIDIA H100 SXM5 (80GB)"):
// both names carry the same model token (H100, H200, H800, B200, GB200, B300,
// GB300: letters then three digits); names without one must be equal.
// Known limit: variants of one model (H100 PCIe vs SXM) are not told apart.
bool SameGpuModel(const std::string& measured, const std::string& described);

// The measurement's planner statistic in seconds.
double PlannerSeconds(const moetune::v1::Measurement& m);

}  // namespace moetune::server
