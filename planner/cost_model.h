// Per-term cost primitives behind one interface: a roofline prior from the
// datasheet (DatasheetCostModel) and tables fitted from probe measurements
// (CalibratedCostModel) that fall back to the prior per term and say so.
// All costs are seconds on one GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/hardware.h"
#include "planner/precision.h"

namespace moetune::planner {

enum class CostSource { kDatasheetPrior, kCalibrated };
std::string_view CostSourceName(CostSource source);

struct Cost {
  double seconds = 0;
  CostSource source = CostSource::kDatasheetPrior;
};

enum class CollectiveKind {
  kAllReduce,
  kAllGather,      // bytes = the gathered (output) buffer per rank
  kReduceScatter,  // bytes = the input buffer per rank
  kAllToAll,       // bytes = the send buffer per rank
  kSendRecv,       // bytes = the message
};
std::string_view CollectiveKindName(CollectiveKind kind);

// Where a group's ranks sit: all inside one NVLink domain, or spread over
// several (then the scale-out NICs carry the traffic).
enum class LinkSpan { kNvlinkDomain, kScaleOut };
std::string_view LinkSpanName(LinkSpan span);

// Routed experts on one GPU as one grouped GEMM (or a loop of GEMMs):
// num_experts local experts, tokens_per_expert on average, the most loaded
// expert holding imbalance x that; each expert multiplies [tokens x k] by
// [k x n].
struct GroupedGemmShape {
  int num_experts = 1;
  double tokens_per_expert = 0;
  double imbalance = 1.0;  // max / mean tokens per expert (>= 1)
  int64_t n = 0;
  int64_t k = 0;
  Precision precision = Precision::kBf16;
  bool grouped = true;  // false: one GEMM launch per expert
};

// EP dispatch (or combine, same volume) for one micro-batch on one GPU.
struct DispatchShape {
  double tokens = 0;         // tokens entering the MoE layer on this GPU
  double bytes_per_token = 0;  // hidden x element bytes
  int top_k = 1;
  int ep = 1;                // EP group size
  int ep_gpus_per_domain = 1;  // EP ranks inside one NVLink domain
  bool dedup = false;        // fused de-duplicated dispatch (DeepEP/HybridEP)
  // Group-limited routing (Megatron --moe-router-num-groups / -group-topk,
  // DeepSeek-V3's node-limited routing: 8 groups, 4 per token): experts in
  // router_groups equal contiguous groups, each token's top-k drawn from
  // router_group_topk of them. 0: every expert eligible. Read by the
  // de-duplicated dispatch only (DistinctDestinations).
  int router_groups = 0;
  int router_group_topk = 0;
  // Ceiling on the achieved NVLink rate of this dispatcher implementation
  // (bytes/s per GPU), below the prior's; 0 = none. The step model sets it
  // from the software stack (StackConstants::features); measured tables
  // already include it.
  double nvlink_rate_cap_bytes_per_sec = 0;
};

// Expected number of distinct destinations (EP ranks, or NVLink domains of
// EP ranks) of one token's top_k experts when the E experts lie
// contiguously over `units` equal destinations. Without group-limited
// routing (groups <= 1, or group_topk >= groups) each pick is uniform:
// units (1 - (1 - 1/units)^top_k). With it the token's experts lie in
// group_topk of the `groups` contiguous groups, and each chosen group
// receives top_k / group_topk of them (Megatron-Core group_limited_topk
// picks groups by the sum of their top top_k/group_topk scores, so every
// chosen group holds its share of the top-k):
//  - a destination holding q = groups / units whole groups is hit when one
//    of them is chosen: units (1 - C(groups - q, group_topk) /
//    C(groups, group_topk));
//  - a group spread over s = units / groups destinations: group_topk
//    DistinctHits(s, top_k / group_topk).
// Example, DeepSeek-V3 (256 experts, 8 groups, 4 per token, top 8) over 8
// domains: 8 (1 - C(7,4)/C(8,4)) = 4 domains, against 5.25 uniform.
double DistinctDestinations(double units, int top_k, int groups, int group_topk);

// Expert tensor parallelism (ETP > 1): each expert's FFN is split over etp
// GPUs, so after the EP dispatch every ETP rank needs every routed row of its
// group (Megatron-Core's token dispatcher all-gathers them over the ETP
// group) and the partial expert outputs are reduce-scattered back before the
// combine. For `rows` token-expert rows arriving on one GPU, `row_elems`
// hidden elements each: gather_bytes = rows x etp x row_elems x
// operand_bytes (the all-gather's output buffer), scatter_bytes = rows x etp
// x row_elems x 2 (BF16 partial outputs, the reduce-scatter's input buffer).
// Example: 1,000 rows of 7,168 elements in BF16 over etp 4: 57.3 MB each.
struct EtpExchange {
  double gather_bytes = 0;
  double scatter_bytes = 0;
};
EtpExchange ExpertTensorParallelExchange(double rows, double row_elems, double operand_bytes,
                                         int etp);

// Core attention of one micro-batch on one GPU.
struct AttentionShape {
  double queries = 0;  // query tokens on this GPU
  double context = 0;  // average keys per query under the causal/window mask
  double keys = 0;     // keys per query an unfused kernel materialises (seq)
  int heads = 0;       // heads on this GPU
  int qk_head_dim = 0;
  int v_head_dim = 0;
  // true: flash attention (masked blocks skipped, nothing materialised);
  // false: two batched GEMMs over all keys with the score matrix in HBM.
  bool fused = true;
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  virtual const ClusterSpec& cluster() const = 0;

  // [m x k] x [k x n] on one GPU.
  virtual Cost DenseGemm(double m, double n, double k,
                         Precision precision) const = 0;
  virtual Cost GroupedGemm(const GroupedGemmShape& shape) const = 0;
  // Core attention forward in BF16.
  virtual Cost AttentionForward(const AttentionShape& shape) const = 0;
  // Its backward (dQ, dK, dV; flash attention recomputes the softmax).
  virtual Cost AttentionBackward(const AttentionShape& shape) const = 0;
  // Memory-bound kernels moving `bytes` through HBM.
  virtual Cost MemoryBound(double bytes) const = 0;
  virtual Cost Collective(CollectiveKind kind, double bytes, int group_size,
                          LinkSpan span) const = 0;
  virtual Cost Dispatch(const DispatchShape& shape) const = 0;
  // Share (0..1) of an EP exchange's time that is bound by its SM-issued
  // NVLink copying: (max(nvlink_s, nic_s) - nic_s) / max(nvlink_s, nic_s),
  // with the two link times of Dispatch()'s pricing (the NVLink and NIC
  // transfers run concurrently, the slower bounds). 1 for an exchange inside
  // one NVLink domain (no NIC part), 0 for a NIC-bound one (its NVLink
  // forwarding is paced by the NIC's arrivals), 1 - nic/nvlink between. What
  // the combined-1F1B EP overlap can hide depends on it
  // (StackConstants::ep_overlap_nvlink_fraction). A property of the links
  // and the routing, not of measured times: a calibrated model answers its
  // prior's. Default 0 (every exchange NIC-bound: the overlap as scheduled).
  // Example: EP 8 of one GB200 NVL72 domain: 1; EP 16 over two H100 nodes
  // (HybridEP: 0.5 NIC copies per token at ~35-40 GB/s vs ~2.3 NVLink copies
  // at ~360 GB/s): 0.
  virtual double DispatchNvlinkShare(const DispatchShape&) const { return 0.0; }
  // Moving `bytes` between GPU and pinned host memory (one direction).
  virtual Cost HostOffload(double bytes) const = 0;
  // Factor (>= 1) by which compute slows while communication kernels run
  // beside it on `num_comm_streams` streams (they take SMs and HBM).
  virtual double OverlapSlowdown(int num_comm_streams) const = 0;
  // Fixed cost of one kernel launch as seen by the GPU timeline.
  virtual double KernelLaunchSeconds(bool cuda_graphs) const = 0;
};

// Named, sourced efficiency constants of the roofline prior; one set per GPU
// generation. See cost_model.cc for the values and their justification.
struct PriorConstants {
  // Fraction of the dense peak a large GEMM reaches, per precision
  // (indexed by Precision).
  double gemm_efficiency[kNumPrecisions] = {0, 0, 0, 0};
  // Fixed time of one GEMM kernel (prologue, tail wave, epilogue).
  double gemm_fixed_s = 0;
  // Extra fixed time per expert when experts run as a loop of GEMMs
  // instead of one grouped GEMM (launch + per-GEMM tail).
  double gemm_loop_per_expert_s = 0;
  double attention_efficiency = 0;     // flash attention fwd vs BF16 peak
  double attention_bwd_over_fwd = 0;   // bwd time / fwd time
  // Tensor-core BF16 FLOPs per softmax exponential, per SM and clock: the
  // dense BF16 MMA rate over the SFU's MUFU.EX2 rate (an architecture
  // fact). Fused attention computes one exponential per unmasked score.
  double bf16_flops_per_exp2 = 0;
  double hbm_efficiency = 0;           // memory-bound kernels vs HBM peak
  double nvlink_efficiency = 0;        // achieved bus bandwidth / peak
  double scaleout_efficiency = 0;
  double host_link_efficiency = 0;
  double dispatch_nvlink_efficiency = 0;   // EP dispatch/combine kernels
  double dispatch_scaleout_efficiency = 0;
  // Ceiling on the achieved inter-node EP dispatch/combine rate per GPU
  // (bytes/s), whatever the NIC's line rate; 0 = none.
  double dispatch_scaleout_max_bytes_per_sec = 0;
  double comm_sm_fraction = 0;  // SMs a communication stream takes
  double kernel_launch_s = 0;
  double kernel_launch_graphs_s = 0;
};
PriorConstants PriorConstantsFor(const GpuSpec& gpu);

// The prior constants set from published runs rather than from a datasheet
// or paper (the others in PriorConstantsFor keep their public values). Each
// keeps its physical meaning; tests/validate.cc sets them by the rule in
// tests/internal/cross_validation.h (a grid over the plausible range,
// least MAPE on the training rows) and refits them in every
// cross-validation fold. The defaults are that rule's choice on all
// megatron-core-2026 rows of shared/validation/runs.json.
struct DataSetPriors {
  // Sustained-clock advantage of Blackwell Ultra (B300, GB300) over
  // Blackwell on BF16/FP8/MXFP8 GEMMs at equal nominal peaks (see
  // PriorConstantsFor). Range 1.0-1.25: the 1,100/1,400 W vs 1,000/1,200 W
  // power limits allow up to ~1.2x more clock under sustained load.
  // The rule's choice: 1.18 while GB200 was priced at its nominal 2.45 PF;
  // 1.10 once GB200 is priced at the rate it sustains (B200's, gb200-nvl72
  // sustained_tensor_fraction), which also matches B300/B200 = 1.11 on
  // the DeepSeek-V3 rows; 1.14 on the merged model (with the memory
  // model's no-recompute fits and the EP-overlap windows); 1.24 once each
  // Megatron step's own host time is priced (StackConstants::step_host_s);
  // 1.20 with NVFP4's TP collectives unhidden as well; 1.18 once GPT-OSS's
  // sink attention holds no unfused probabilities in memory (the headroom
  // rule then infers no recompute for its rows); 1.16 once each MoE row is
  // priced with the dispatcher its recipe ran (NCCL's all-to-all for the
  // presets without a flex backend: tests/internal/bridge_recipes.cc kRecipeMoeComm).
  double blackwell_ultra_clock_gain = 1.16;
  // Ceiling on the inter-node EP dispatch/combine rate per GPU on Blackwell
  // (bytes/s), whatever the NIC. Range 15-60 GB/s (a 400G port: 50 GB/s).
  // The rule's choice: 35 GB/s, 32.5 once GPT-OSS's sink attention holds no
  // unfused probabilities in memory, 40 once the GPT-OSS-120B EP 64 HGX
  // rows that set it are priced with the NCCL all-to-all their recipes ran
  // (they had been priced with DeepEP / HybridEP).
  double blackwell_dispatch_scaleout_max_bytes_per_sec = 40e9;
  // Multiplies every GEMM efficiency of every generation: the public ranges
  // quoted in PriorConstantsFor are about +-10% wide. The rule's choice:
  // 0.96 before GB200's sustained fraction, 1.02 with it, 1.00 on the
  // merged model (memory model's no-recompute fits, EP-overlap windows),
  // 1.02 once NVFP4 GEMMs no longer hide their TP collectives, 1.04 with
  // each step's host time priced as well (StackConstants::step_host_s),
  // 1.06 with each MoE row at its recipe's dispatcher.
  double gemm_efficiency_scale = 1.06;
  // Fraction of its nominal NVFP4 peak (GB300 14.7 PF, B300 13.5 PF dense:
  // 1.5x Blackwell's, raised by more FP4 tensor throughput at the same
  // clocks) that Blackwell Ultra sustains under dense GEMM load at its power
  // limit. Range 0.70-1.00 (1.00: the datasheet; GB200 sustains 0.918 of
  // its nominal BF16/FP8 peak, gb200-nvl72 sustained_tensor_fraction). The
  // rule's choice: 0.90 on the GB300 NVFP4 rows (Llama3-70B, Llama3.1-405B),
  // which at 1.00 came out -4.5..+15.0% (mean +6%) while GB200's NVFP4 rows
  // sat at -5.0..+4.5% (mean -1%); 0.85 once the TP all-gathers move the
  // quantized GEMM inputs (NVFP4 data and scales, not BF16: KindCosts::
  // tp_in_ag), which shortened the GB300 NVFP4 TP4 rows' exposed TP time.
  // Applied by the "nvfp4_sustained_fraction": "fitted" entry of
  // planner/data/priors/blackwell_ultra.json.
  double blackwell_ultra_nvfp4_sustained = 0.85;
};
PriorConstants PriorConstantsFor(const GpuSpec& gpu, const DataSetPriors& fitted);
// One generation's table (planner/data/priors/*.json) with the data-set
// priors applied. InvalidArgument naming the field when the text is not a
// complete table.
absl::StatusOr<PriorConstants> ParsePriorTable(std::string_view json, const DataSetPriors& fitted);

class DatasheetCostModel : public CostModel {
 public:
  explicit DatasheetCostModel(ClusterSpec cluster);
  // With explicit constants (sensitivity studies, other software stacks).
  DatasheetCostModel(ClusterSpec cluster, const PriorConstants& constants);
  const ClusterSpec& cluster() const override { return cluster_; }
  const PriorConstants& constants() const { return k_; }

  Cost DenseGemm(double m, double n, double k,
                 Precision precision) const override;
  Cost GroupedGemm(const GroupedGemmShape& shape) const override;
  Cost AttentionForward(const AttentionShape& shape) const override;
  Cost AttentionBackward(const AttentionShape& shape) const override;
  Cost MemoryBound(double bytes) const override;
  Cost Collective(CollectiveKind kind, double bytes, int group_size,
                  LinkSpan span) const override;
  Cost Dispatch(const DispatchShape& shape) const override;
  double DispatchNvlinkShare(const DispatchShape& shape) const override;
  Cost HostOffload(double bytes) const override;
  double OverlapSlowdown(int num_comm_streams) const override;
  double KernelLaunchSeconds(bool cuda_graphs) const override;

 private:
  ClusterSpec cluster_;
  PriorConstants k_;
  double peak_flops_[kNumPrecisions];  // 0 where unsupported (never used)
};

// A measured curve: (size, seconds) points sorted by size. Interpolated
// piecewise-linearly in log(size) on the achieved rate (size / seconds);
// outside the measured range the edge rate is held.
struct MeasuredCurve {
  std::vector<double> sizes;    // bytes or FLOPs, strictly increasing
  std::vector<double> seconds;  // same length
};
// Seconds for `size` on the curve; requires a non-empty curve.
double InterpolateSeconds(const MeasuredCurve& curve, double size);

// Where a fitted table came from and how well it reproduces what was
// measured: the agents whose results went into it, how many samples, and
// the largest |table value - sample| / sample over them (for curves, the
// spread of merged repeats; for alpha-beta fits, the fit's residual).
struct TableProvenance {
  std::vector<std::string> agents;
  int samples = 0;
  double fit_max_rel_error = 0;
};

struct GemmTable {
  Precision precision = Precision::kBf16;
  MeasuredCurve flops_curve;  // size = 2 m n k
  TableProvenance provenance = {};
};

// One measured grouped GEMM (kernels/measurement_roles.h): num_experts
// GEMMs [tokens_per_expert x k] x [k x n], tokens_per_expert the mean over
// the experts; raggedness = the probe's largest expert / mean (recorded;
// points of one (tokens, n, k) with different raggedness are merged).
struct GroupedGemmPoint {
  double tokens_per_expert = 0;
  int64_t n = 0;
  int64_t k = 0;
  int num_experts = 1;
  double raggedness = 1.0;
  double seconds = 0;
};
// Keyed by what the probe measures: (tokens per expert, n, k) per
// precision and implementation. GroupedGemm() interpolates the achieved
// rate (useful FLOP/s) piecewise-linearly in log(tokens per expert) within
// each measured (n, k), holding the edge rates, then across (n, k) by
// inverse-distance weighting in (log n, log k); an exact (n, k) match is
// used alone.
struct GroupedGemmTable {
  Precision precision = Precision::kBf16;
  bool grouped = true;
  std::vector<GroupedGemmPoint> points;
  TableProvenance provenance;
};

// The table's seconds for num_experts GEMMs of [tokens_per_expert x k] x
// [k x n] (see above); requires a non-empty table.
double GroupedGemmTableSeconds(const GroupedGemmTable& table, double tokens_per_expert, int num_experts,
                               int64_t n, int64_t k);

// seconds = alpha_seconds + bytes * seconds_per_byte for sizes up to
// max_bytes (the last segment has no upper end): NCCL's tuner keeps
// latency and bandwidth per protocol, and the protocols take over at
// different sizes, so one (alpha, beta) per size range.
struct AlphaBetaSegment {
  double max_bytes = 0;  // +inf for the last
  double alpha_seconds = 0;
  double seconds_per_byte = 0;
};
// Size ranges of the fit: up to 64 KiB (latency-bound, NCCL's LL), up to
// 4 MiB (LL128), above (Simple). A range with fewer than two measured sizes
// is merged into its neighbour.
inline constexpr double kAlphaBetaRangeBytes[] = {64.0 * 1024, 4.0 * 1024 * 1024};

struct CollectiveTable {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  LinkSpan span = LinkSpan::kNvlinkDomain;
  int group_size = 0;
  MeasuredCurve bytes_curve;             // the measured points (median per size)
  std::vector<AlphaBetaSegment> fit = {};  // fitted from bytes_curve
  TableProvenance provenance = {};
};
// Weighted least squares of seconds = alpha + bytes * beta per range
// (weights 1 / seconds^2: relative error), alpha >= 0, beta > 0; a curve of
// one size gives one segment through it with alpha 0. *max_rel_error gets
// the largest relative residual over the points.
std::vector<AlphaBetaSegment> FitAlphaBeta(const MeasuredCurve& curve, double* max_rel_error);
double AlphaBetaSeconds(const std::vector<AlphaBetaSegment>& fit, double bytes);

struct DispatchTable {
  bool dedup = false;
  int ep = 0;
  int ep_gpus_per_domain = 0;
  MeasuredCurve bytes_curve;  // size = tokens x top_k x bytes_per_token
  TableProvenance provenance;
};
struct OverlapPoint {
  int num_comm_streams = 1;
  double slowdown = 1.0;
};

// What the server fits from probe measurements for one cluster and GPU
// model. Any table may be empty; the prior answers for what is missing.
struct CalibrationTables {
  std::string cluster_name;
  std::string gpu_name;
  std::vector<GemmTable> dense_gemm;
  std::vector<GroupedGemmTable> grouped_gemm;
  std::vector<CollectiveTable> collectives;
  std::vector<DispatchTable> dispatch;
  MeasuredCurve host_offload;  // bytes -> seconds
  TableProvenance host_offload_provenance;
  std::vector<OverlapPoint> overlap;
};

// Checks the tables (increasing sizes, positive seconds, equal lengths).
absl::Status ValidateCalibrationTables(const CalibrationTables& tables);

class CalibratedCostModel : public CostModel {
 public:
  // InvalidArgument when a table is malformed.
  static absl::StatusOr<std::unique_ptr<CalibratedCostModel>> Create(
      CalibrationTables tables, std::shared_ptr<const CostModel> prior);

  const ClusterSpec& cluster() const override { return prior_->cluster(); }
  Cost DenseGemm(double m, double n, double k,
                 Precision precision) const override;
  Cost GroupedGemm(const GroupedGemmShape& shape) const override;
  Cost AttentionForward(const AttentionShape& shape) const override;
  Cost AttentionBackward(const AttentionShape& shape) const override;
  Cost MemoryBound(double bytes) const override;
  Cost Collective(CollectiveKind kind, double bytes, int group_size,
                  LinkSpan span) const override;
  Cost Dispatch(const DispatchShape& shape) const override;
  double DispatchNvlinkShare(const DispatchShape& shape) const override;
  Cost HostOffload(double bytes) const override;
  double OverlapSlowdown(int num_comm_streams) const override;
  double KernelLaunchSeconds(bool cuda_graphs) const override;

 private:
  CalibratedCostModel(CalibrationTables tables,
                      std::shared_ptr<const CostModel> prior);
  CalibrationTables tables_;
  std::shared_ptr<const CostModel> prior_;
};

}  // namespace moetune::planner
