// Problem descriptions of every probe: plain, printable, std-only structs
// shared by the CUDA probes, their CPU twins and the facade (kernels/probes.h).
//
// Units are in the field names. Sizes are int64_t so that a negative value
// from a caller is seen and refused (InvalidArgument naming the value) instead
// of wrapping around.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kernels/probe_status.h"

namespace moetune::kernels {

class RendezvousStore;  // kernels/rendezvous.h

enum class ProbeKind { kGroupedGemm, kDispatchCombine, kCollective, kOffload, kOverlap };
const char* ProbeKindName(ProbeKind kind);  // "grouped_gemm", "dispatch_combine", ...

// Element types. The CPU twins compute in fp32 whatever the requested dtype
// (OpenBLAS has no bf16/fp8 GEMM); their results say so (compute_dtype).
enum class DType { kFp32, kBf16, kFp16, kFp8E4M3, kMxfp8 };
const char* DTypeName(DType dtype);          // "fp32", "bf16", "fp16", "fp8_e4m3", "mxfp8"
int64_t DTypeBytes(DType dtype);             // storage bytes per element (mxfp8: 1, scales extra)
// Unit roundoff of a value stored in this dtype, 2^-p for p significand bits
// (fp32 2^-24, fp16 2^-11, bf16 2^-8, fp8_e4m3 and mxfp8 elements 2^-4): the
// output-rounding term of the GEMM checks (kernels/reference.h GemmTolerance).
double DTypeUnitRoundoff(DType dtype);

// How tokens spread over experts.
struct TokenDistribution {
  enum class Kind { kBalanced, kZipf, kHistogram };
  Kind kind = Kind::kBalanced;
  // kZipf: expert i (0-based, i = popularity rank) gets a share proportional
  // to 1 / (i + 1)^zipf_s. zipf_s = 0 is balanced; 1.0-1.2 is typical skew.
  double zipf_s = 1.0;
  // kHistogram: tokens per expert, one entry per expert (grouped GEMM), or
  // relative expert popularity weights (dispatch routing).
  std::vector<int64_t> histogram;

  static TokenDistribution Balanced() { return {}; }
  static TokenDistribution Zipf(double s) { return {Kind::kZipf, s, {}}; }
  static TokenDistribution Histogram(std::vector<int64_t> h) {
    return {Kind::kHistogram, 0.0, std::move(h)};
  }
};
std::string ToString(const TokenDistribution& d);  // "balanced", "zipf(1.2)", "histogram[3,0,5]"

// Protocol shared by all probes: warm-up iterations (not recorded), then
// timed_iters samples, all kept.
struct TimingOptions {
  int warmup_iters = 2;
  int timed_iters = 10;
  // Check results against a reference before timing; a wrong result fails the
  // probe with kDataLoss.
  bool verify = true;
  // Seed for inputs and routing (the same seed gives the same problem on
  // every backend).
  uint64_t seed = 1;
  // Memory the probe may allocate, bytes; 0 = the backend's default (CPU: half
  // of physical RAM; CUDA: 90% of free device memory). Problems that need more
  // are refused with InvalidArgument.
  int64_t memory_budget_bytes = 0;
  // CUDA backend: iterations enqueued back to back between one pair of
  // events per sample; the sample is their elapsed time / iterations
  // (nccl-tests' protocol), so host launch gaps between iterations are not
  // timed. The host's enqueue time and a lone call's time are reported
  // beside it (kernels/cuda/timing.h). The CPU twins time each synchronous
  // call on a monotonic clock and ignore this.
  int iters_per_sample = 10;
};

// 1. Grouped GEMM over E local experts with ragged token counts.
//    Forward:  Y[t_e, N]  = X[t_e, K]  * W_e[K, N]
//    Bwd data: dX[t_e, K] = dY[t_e, N] * W_e^T[N, K]
//    Bwd wgt:  dW_e[K, N] = X^T[K, t_e] * dY[t_e, N]
struct GroupedGemmParams {
  int64_t num_experts = 8;
  int64_t total_tokens = 4096;     // sum over experts (ignored for kHistogram)
  int64_t hidden = 1024;           // K
  int64_t ffn_hidden = 1024;       // N (expert FFN width of this GEMM)
  TokenDistribution distribution;
  DType dtype = DType::kBf16;
  bool forward = true;
  bool backward_data = true;
  bool backward_weight = true;
  TimingOptions timing;
};

// Tokens per expert for a grouped GEMM: balanced splits evenly (remainder to
// the first experts); Zipf uses the expected shares rounded by largest
// remainder (deterministic, sums to total_tokens); histogram is returned as is.
std::vector<int64_t> ExpertTokenCounts(const GroupedGemmParams& p);

// 2. Expert-parallel dispatch/combine. ep_size ranks, num_experts experts
//    spread contiguously (num_experts / ep_size per rank), ranks_per_node
//    consecutive ranks per node.
enum class DispatchMode {
  // One copy per (token, expert): what a plain all-to-all moves.
  kPerExpert,
  // One copy per (token, destination rank) however many of its experts the
  // rank holds; the rank pre-reduces its experts' outputs before combine.
  kDedupRank,
  // Across nodes one copy per (token, destination node), sent to the rank of
  // that node with the sender's local index, which fans out inside the node;
  // combine reduces inside the node first.
  kDedupNode,
};
const char* DispatchModeName(DispatchMode m);  // "per_expert", "dedup_rank", "dedup_node"

struct DispatchCombineParams {
  int64_t tokens_per_rank = 1024;
  int64_t hidden = 1024;
  int64_t top_k = 2;
  int64_t num_experts = 8;
  int64_t ep_size = 4;             // ranks in the EP group
  int64_t ranks_per_node = 0;      // 0 = all ranks on one node
  // Expert popularity used for routing (kHistogram = relative weights).
  TokenDistribution routing;
  // Node-limited routing: the experts of a token lie on at most this many
  // nodes (0 = unlimited). Needs top_k <= max_nodes_per_token * experts per node.
  int64_t max_nodes_per_token = 0;
  DispatchMode mode = DispatchMode::kDedupRank;
  DType dtype = DType::kBf16;      // payload element type (CPU twin moves fp32)
  TimingOptions timing;
};

// 3. Collectives over a size sweep.
enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
const char* CollectiveOpName(CollectiveOp op);  // "all_reduce", ...
// Which links the group spans; a label the scheduler sets from the topology
// (the group layout itself is in GroupSpec).
enum class Span { kIntraNode, kInterNode };
const char* SpanName(Span s);

struct CollectiveParams {
  CollectiveOp op = CollectiveOp::kAllReduce;
  // Per-rank buffer sizes in bytes, nccl-tests' convention: all_reduce: the
  // buffer; all_gather: the OUTPUT (group_size x input); reduce_scatter: the
  // INPUT (group_size x output); all_to_all: the whole send buffer.
  std::vector<int64_t> sizes_bytes = {1 << 20};
  int64_t group_size = 2;
  Span span = Span::kIntraNode;
  DType dtype = DType::kFp32;
  TimingOptions timing;
};

// 4. Host offload: device<->host copies, alone and under a concurrent GEMM.
struct OffloadParams {
  std::vector<int64_t> sizes_bytes = {64 << 20};
  bool host_to_device = true;
  bool device_to_host = true;
  bool pinned = true;        // page-locked host memory (CPU twin: mlock'ed)
  bool pageable = false;     // also measure plain malloc'ed host memory
  // Also measure each copy while a GEMM of this shape runs (0 = skip).
  int64_t gemm_m = 4096, gemm_n = 4096, gemm_k = 4096;
  bool under_gemm = true;
  DType gemm_dtype = DType::kBf16;
  TimingOptions timing;
};

// 5. A GEMM and a collective on separate streams (CPU: threads).
struct OverlapParams {
  int64_t gemm_m = 4096, gemm_n = 4096, gemm_k = 4096;
  DType gemm_dtype = DType::kBf16;
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t collective_bytes = 64 << 20;
  int64_t group_size = 2;
  TimingOptions timing;
};

using ProbeParams = std::variant<GroupedGemmParams, DispatchCombineParams,
                                 CollectiveParams, OffloadParams, OverlapParams>;
ProbeKind KindOf(const ProbeParams& p);
const TimingOptions& TimingOf(const ProbeParams& p);

// Where this process sits in a multi-rank probe. world_size must equal the
// probe's ep_size / group_size.
struct GroupSpec {
  int rank = 0;
  int world_size = 1;
  int ranks_per_node = 0;  // 0 = all on one node
  // Rendezvous for multi-process groups (Gloo addresses, NCCL unique id).
  // CUDA backend: when null, one process drives world_size local GPUs.
  std::shared_ptr<RendezvousStore> store;
  // Prefix of every key this probe writes; unique per probe run.
  std::string key_prefix = "probe";
  std::chrono::milliseconds timeout{60000};
  // CUDA: the device this rank uses in multi-process mode (-1 = rank % count).
  int device_ordinal = -1;
  // CPU (Gloo over TCP): the address this rank listens on; peers on other
  // hosts must be able to reach it. Loopback suits single-host groups.
  std::string bind_address = "127.0.0.1";
  // Testing only: this rank fails with Internal at the start of the named
  // phase (kernels/group_agreement.h), so tests can exercise the failure
  // agreement and abort path of real multi-process probes. Empty: never.
  std::string inject_failure_at_phase;
};

// Validation. Each returns InvalidArgument naming the offending field and
// value ("top_k (9) must be <= num_experts (8)"), including sizes whose byte
// count overflows int64 or exceeds memory_budget_bytes (budget 0 = no check).
ProbeStatus Validate(const GroupedGemmParams& p, int64_t memory_budget_bytes);
ProbeStatus Validate(const DispatchCombineParams& p, int64_t memory_budget_bytes);
ProbeStatus Validate(const CollectiveParams& p, int64_t memory_budget_bytes);
ProbeStatus Validate(const OffloadParams& p, int64_t memory_budget_bytes);
ProbeStatus Validate(const OverlapParams& p, int64_t memory_budget_bytes);
ProbeStatus Validate(const ProbeParams& p, int64_t memory_budget_bytes);
ProbeStatus ValidateGroup(const GroupSpec& g, int64_t expected_world_size);

// Bytes a probe allocates (per rank, host or device), for the budget check.
// Returns -1 when the count overflows int64.
int64_t RequiredBytes(const ProbeParams& p);

// Canonical one-line JSON object of the parameters (stable key order), stored
// with each result.
std::string ParamsToJson(const ProbeParams& p);

// FLOPs of a GEMM, 2*m*n*k, as double.
inline double GemmFlops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace moetune::kernels
