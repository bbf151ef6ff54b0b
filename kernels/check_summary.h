// The headline figures of one check run -- tools/gpu_check and
// kernels/cpu/cpu_check print them after the per-measurement table, and
// gpu_check --markdown=FILE writes them for docs/measurements/ (std-only,
// unit-tested without a GPU). One row per figure:
//   grouped GEMM   the grouped call's and the loop's rate as a fraction of
//                  the dense GEMM's at equal FLOPs (fwd pass), per case;
//   dispatch       dispatch and combine algorithm / bus bandwidth, and the
//                  dispatch bus bandwidth over the run's all-to-all bus
//                  bandwidth at the nearest size (the link as NCCL drives it);
//   de-dup saving  rows sent and dispatch time of dedup_rank vs per_expert;
//   offload        pinned host<->device bandwidth (largest size) and the
//                  copy's speed under a GEMM relative to alone;
//   overlap        GEMM slowdown beside the all-reduce, hidden fraction.
#pragma once

#include <string>
#include <vector>

#include "kernels/probe_result.h"

namespace moetune::kernels {

struct CheckedCase {
  std::string title;   // "grouped_gemm bf16 zipf(1.2)"
  ProbeResult result;  // a successful result
};

// A markdown table (| figure | case | value |), readable on a terminal.
std::string CheckSummary(const std::vector<CheckedCase>& cases);

}  // namespace moetune::kernels
