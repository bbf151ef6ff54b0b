#include "kernels/probe_types.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace moetune::kernels {
namespace {

// a*b into *out; false on int64 overflow or negative operands.
bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}
bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
// Product of all factors, -1 on overflow.
int64_t Product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (!CheckedMul(p, f, &p)) return -1;
  }
  return p;
}
// Sum of non-negative terms, -1 if any is -1 or on overflow.
int64_t Sum(std::initializer_list<int64_t> terms) {
  int64_t s = 0;
  for (int64_t t : terms) {
    if (t < 0 || !CheckedAdd(s, t, &s)) return -1;
  }
  return s;
}

std::string Str(int64_t v) { return std::to_string(v); }

ProbeStatus Positive(const char* name, int64_t v) {
  if (v <= 0) return InvalidArgument(std::string(name) + " must be > 0, got " + Str(v));
  return ProbeStatus::Ok();
}
ProbeStatus NonNegative(const char* name, int64_t v) {
  if (v < 0) return InvalidArgument(std::string(name) + " must be >= 0, got " + Str(v));
  return ProbeStatus::Ok();
}

ProbeStatus ValidateTiming(const TimingOptions& t) {
  if (t.warmup_iters < 0) {
    return InvalidArgument("warmup_iters must be >= 0, got " + Str(t.warmup_iters));
  }
  if (t.timed_iters < 1) {
    return InvalidArgument("timed_iters must be >= 1, got " + Str(t.timed_iters));
  }
  if (t.memory_budget_bytes < 0) {
    return InvalidArgument("memory_budget_bytes must be >= 0, got " +
                           Str(t.memory_budget_bytes));
  }
  if (t.iters_per_sample < 1 || t.iters_per_sample > 10000) {
    return InvalidArgument("iters_per_sample must be in [1, 10000], got " + Str(t.iters_per_sample));
  }
  return ProbeStatus::Ok();
}

ProbeStatus ValidateDistribution(const TokenDistribution& d, int64_t num_experts,
                                 int64_t min_nonzero) {
  switch (d.kind) {
    case TokenDistribution::Kind::kBalanced:
      return ProbeStatus::Ok();
    case TokenDistribution::Kind::kZipf:
      if (!std::isfinite(d.zipf_s) || d.zipf_s < 0) {
        std::ostringstream os;
        os << "zipf_s must be finite and >= 0, got " << d.zipf_s;
        return InvalidArgument(os.str());
      }
      return ProbeStatus::Ok();
    case TokenDistribution::Kind::kHistogram: {
      if (static_cast<int64_t>(d.histogram.size()) != num_experts) {
        return InvalidArgument("histogram has " + Str(d.histogram.size()) +
                               " entries, expected num_experts = " + Str(num_experts));
      }
      int64_t nonzero = 0, total = 0;
      for (size_t i = 0; i < d.histogram.size(); ++i) {
        if (d.histogram[i] < 0) {
          return InvalidArgument("histogram[" + Str(i) + "] must be >= 0, got " +
                                 Str(d.histogram[i]));
        }
        if (d.histogram[i] > 0) ++nonzero;
        if (!CheckedAdd(total, d.histogram[i], &total)) {
          return InvalidArgument("histogram total overflows int64");
        }
      }
      if (total == 0) return InvalidArgument("histogram must not be all zero");
      if (nonzero < min_nonzero) {
        return InvalidArgument("histogram has " + Str(nonzero) +
                               " non-zero experts, top_k needs " + Str(min_nonzero));
      }
      return ProbeStatus::Ok();
    }
  }
  return InvalidArgument("unknown distribution kind");
}

ProbeStatus CheckBudget(int64_t required, int64_t budget, const char* what) {
  if (required < 0) {
    return InvalidArgument(std::string(what) + ": buffer size overflows int64 bytes");
  }
  if (budget > 0 && required > budget) {
    return InvalidArgument(std::string(what) + " needs " + Str(required) +
                           " bytes, more than the memory budget of " + Str(budget) +
                           " bytes");
  }
  return ProbeStatus::Ok();
}

int64_t MaxOf(const std::vector<int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

int64_t GroupedGemmBytes(const GroupedGemmParams& p) {
  int64_t tokens = p.total_tokens;
  if (p.distribution.kind == TokenDistribution::Kind::kHistogram) {
    tokens = 0;
    for (int64_t h : p.distribution.histogram) tokens = Sum({tokens, h});
  }
  // X, dX [T,K]; Y, dY [T,N]; W, dW [E,K,N] in the dtype plus fp32 copies on
  // the host for the reference: counted once at 4 bytes per element. mxfp8
  // also keeps X, W and dY dequantized in two orientations each (one per GEMM
  // reduction axis, kernels/reference.h): the same element count again.
  const int64_t elems = Sum({Product({2, tokens, p.hidden}), Product({2, tokens, p.ffn_hidden}),
                             Product({2, p.num_experts, p.hidden, p.ffn_hidden})});
  return Product({elems, std::max<int64_t>(4, DTypeBytes(p.dtype)), p.dtype == DType::kMxfp8 ? 2 : 1});
}

int64_t DispatchBytes(const DispatchCombineParams& p) {
  // Input + output [T,H], and per stage a send and a receive buffer of the
  // balanced size T*top_k rows (skew can need more; the backends allocate the
  // routed sizes and report ResourceExhausted when that fails).
  const int64_t row_bytes = Product({p.hidden, 4});
  const int64_t stages = p.mode == DispatchMode::kDedupNode ? 2 : 1;
  const int64_t rows = Sum({Product({2, p.tokens_per_rank}),
                            Product({2, stages, p.tokens_per_rank, p.top_k})});
  return Product({rows, row_bytes});
}

int64_t CollectiveBytes(const CollectiveParams& p) {
  // Send and receive buffers of the largest size (all_gather's input and
  // reduce_scatter's output are smaller; counted full for simplicity).
  return Product({MaxOf(p.sizes_bytes), 2});
}

int64_t GemmBytes(int64_t m, int64_t n, int64_t k, DType dtype) {
  return Product({Sum({Product({m, k}), Product({k, n}), Product({m, n})}),
                  std::max<int64_t>(4, DTypeBytes(dtype))});
}

int64_t OffloadBytes(const OffloadParams& p) {
  // A host and a device buffer of the largest size, plus the GEMM operands.
  const int64_t copy = Product({MaxOf(p.sizes_bytes), 2});
  if (!p.under_gemm) return copy;
  return Sum({copy, GemmBytes(p.gemm_m, p.gemm_n, p.gemm_k, p.gemm_dtype)});
}

int64_t OverlapBytes(const OverlapParams& p) {
  return Sum({Product({p.collective_bytes, 2}),
              GemmBytes(p.gemm_m, p.gemm_n, p.gemm_k, p.gemm_dtype)});
}

std::string JsonVec(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + Str(v[i]);
  return s + "]";
}
std::string JsonDouble(double d) {
  std::ostringstream os;
  os.precision(17);
  os << d;
  return os.str();
}
std::string JsonTiming(const TimingOptions& t) {
  return "{\"warmup_iters\":" + Str(t.warmup_iters) + ",\"timed_iters\":" + Str(t.timed_iters) +
         ",\"verify\":" + (t.verify ? "true" : "false") + ",\"seed\":" + std::to_string(t.seed) +
         ",\"memory_budget_bytes\":" + Str(t.memory_budget_bytes) +
         ",\"iters_per_sample\":" + Str(t.iters_per_sample) + "}";
}
std::string JsonDist(const TokenDistribution& d) {
  switch (d.kind) {
    case TokenDistribution::Kind::kBalanced: return "{\"kind\":\"balanced\"}";
    case TokenDistribution::Kind::kZipf:
      return "{\"kind\":\"zipf\",\"s\":" + JsonDouble(d.zipf_s) + "}";
    case TokenDistribution::Kind::kHistogram:
      return "{\"kind\":\"histogram\",\"histogram\":" + JsonVec(d.histogram) + "}";
  }
  return "{}";
}
std::string Q(const char* s) { return std::string("\"") + s + "\""; }
std::string B(bool b) { return b ? "true" : "false"; }

}  // namespace

const char* ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kGroupedGemm: return "grouped_gemm";
    case ProbeKind::kDispatchCombine: return "dispatch_combine";
    case ProbeKind::kCollective: return "collective";
    case ProbeKind::kOffload: return "offload";
    case ProbeKind::kOverlap: return "overlap";
  }
  return "unknown";
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return "fp32";
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp8E4M3: return "fp8_e4m3";
    case DType::kMxfp8: return "mxfp8";
  }
  return "unknown";
}

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return 4;
    case DType::kBf16:
    case DType::kFp16: return 2;
    case DType::kFp8E4M3:
    case DType::kMxfp8: return 1;
  }
  return 4;
}

double DTypeUnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return 0x1p-24;
    case DType::kBf16: return 0x1p-8;
    case DType::kFp16: return 0x1p-11;
    case DType::kFp8E4M3:
    case DType::kMxfp8: return 0x1p-4;  // E4M3: 3 mantissa bits
  }
  return 0x1p-4;
}

std::string ToString(const TokenDistribution& d) {
  switch (d.kind) {
    case TokenDistribution::Kind::kBalanced: return "balanced";
    case TokenDistribution::Kind::kZipf: {
      std::ostringstream os;
      os << "zipf(" << d.zipf_s << ")";
      return os.str();
    }
    case TokenDistribution::Kind::kHistogram: return "histogram" + JsonVec(d.histogram);
  }
  return "unknown";
}

const char* DispatchModeName(DispatchMode m) {
  switch (m) {
    case DispatchMode::kPerExpert: return "per_expert";
    case DispatchMode::kDedupRank: return "dedup_rank";
    case DispatchMode::kDedupNode: return "dedup_node";
  }
  return "unknown";
}

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "all_to_all";
  }
  return "unknown";
}

const char* SpanName(Span s) { return s == Span::kIntraNode ? "intra_node" : "inter_node"; }

std::vector<int64_t> ExpertTokenCounts(const GroupedGemmParams& p) {
  const int64_t e = std::max<int64_t>(p.num_experts, 0);
  std::vector<int64_t> counts(static_cast<size_t>(e), 0);
  if (e == 0) return counts;
  switch (p.distribution.kind) {
    case TokenDistribution::Kind::kHistogram:
      return p.distribution.histogram;
    case TokenDistribution::Kind::kBalanced:
      for (int64_t i = 0; i < e; ++i) counts[i] = p.total_tokens / e + (i < p.total_tokens % e);
      return counts;
    case TokenDistribution::Kind::kZipf: {
      std::vector<double> share(e);
      for (int64_t i = 0; i < e; ++i) share[i] = 1.0 / std::pow(i + 1.0, p.distribution.zipf_s);
      const double total_share = std::accumulate(share.begin(), share.end(), 0.0);
      std::vector<std::pair<double, int64_t>> remainders;
      int64_t assigned = 0;
      for (int64_t i = 0; i < e; ++i) {
        const double exact = p.total_tokens * share[i] / total_share;
        counts[i] = static_cast<int64_t>(std::floor(exact));
        assigned += counts[i];
        remainders.push_back({exact - counts[i], i});
      }
      // Largest remainder first; ties to the lower expert index.
      std::stable_sort(remainders.begin(), remainders.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (int64_t i = 0; assigned < p.total_tokens; ++i, ++assigned) {
        ++counts[remainders[i % e].second];
      }
      return counts;
    }
  }
  return counts;
}

ProbeKind KindOf(const ProbeParams& p) {
  switch (p.index()) {
    case 0: return ProbeKind::kGroupedGemm;
    case 1: return ProbeKind::kDispatchCombine;
    case 2: return ProbeKind::kCollective;
    case 3: return ProbeKind::kOffload;
    default: return ProbeKind::kOverlap;
  }
}

const TimingOptions& TimingOf(const ProbeParams& p) {
  return std::visit([](const auto& v) -> const TimingOptions& { return v.timing; }, p);
}

ProbeStatus Validate(const GroupedGemmParams& p, int64_t budget) {
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("num_experts", p.num_experts));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("hidden", p.hidden));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("ffn_hidden", p.ffn_hidden));
  if (p.distribution.kind != TokenDistribution::Kind::kHistogram) {
    MOETUNE_PROBE_RETURN_IF_ERROR(Positive("total_tokens", p.total_tokens));
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateDistribution(p.distribution, p.num_experts, 1));
  if (!p.forward && !p.backward_data && !p.backward_weight) {
    return InvalidArgument("no GEMM pass selected (forward, backward_data, backward_weight)");
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateTiming(p.timing));
  return CheckBudget(GroupedGemmBytes(p), budget, "grouped_gemm");
}

ProbeStatus Validate(const DispatchCombineParams& p, int64_t budget) {
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("tokens_per_rank", p.tokens_per_rank));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("hidden", p.hidden));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("num_experts", p.num_experts));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("top_k", p.top_k));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("ep_size", p.ep_size));
  MOETUNE_PROBE_RETURN_IF_ERROR(NonNegative("ranks_per_node", p.ranks_per_node));
  MOETUNE_PROBE_RETURN_IF_ERROR(NonNegative("max_nodes_per_token", p.max_nodes_per_token));
  if (p.top_k > p.num_experts) {
    return InvalidArgument("top_k (" + Str(p.top_k) + ") must be <= num_experts (" +
                           Str(p.num_experts) + ")");
  }
  if (p.num_experts % p.ep_size != 0) {
    return InvalidArgument("num_experts (" + Str(p.num_experts) +
                           ") must be a multiple of ep_size (" + Str(p.ep_size) + ")");
  }
  const int64_t rpn = p.ranks_per_node == 0 ? p.ep_size : p.ranks_per_node;
  if (p.ep_size % rpn != 0) {
    return InvalidArgument("ep_size (" + Str(p.ep_size) + ") must be a multiple of ranks_per_node (" +
                           Str(rpn) + ")");
  }
  if (p.max_nodes_per_token > 0) {
    const int64_t experts_per_node = p.num_experts / p.ep_size * rpn;
    if (p.top_k > p.max_nodes_per_token * experts_per_node) {
      return InvalidArgument("top_k (" + Str(p.top_k) + ") exceeds max_nodes_per_token (" +
                             Str(p.max_nodes_per_token) + ") x experts per node (" +
                             Str(experts_per_node) + ")");
    }
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateDistribution(p.routing, p.num_experts, p.top_k));
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateTiming(p.timing));
  return CheckBudget(DispatchBytes(p), budget, "dispatch_combine");
}

ProbeStatus Validate(const CollectiveParams& p, int64_t budget) {
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("group_size", p.group_size));
  if (p.sizes_bytes.empty()) return InvalidArgument("sizes_bytes must not be empty");
  const int64_t elem = DTypeBytes(p.dtype);
  if (p.dtype == DType::kMxfp8 || p.dtype == DType::kFp8E4M3) {
    return InvalidArgument(std::string("collective dtype ") + DTypeName(p.dtype) +
                           " is not supported (use fp32, bf16 or fp16)");
  }
  for (size_t i = 0; i < p.sizes_bytes.size(); ++i) {
    const int64_t s = p.sizes_bytes[i];
    if (s <= 0) {
      return InvalidArgument("sizes_bytes[" + Str(i) + "] must be > 0, got " + Str(s));
    }
    const int64_t unit = p.op == CollectiveOp::kAllReduce ? elem : elem * p.group_size;
    if (s % unit != 0) {
      return InvalidArgument("sizes_bytes[" + Str(i) + "] (" + Str(s) + ") must be a multiple of " +
                             Str(unit) + " bytes for " + CollectiveOpName(p.op));
    }
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateTiming(p.timing));
  return CheckBudget(CollectiveBytes(p), budget, "collective");
}

ProbeStatus Validate(const OffloadParams& p, int64_t budget) {
  if (p.sizes_bytes.empty()) return InvalidArgument("sizes_bytes must not be empty");
  for (size_t i = 0; i < p.sizes_bytes.size(); ++i) {
    if (p.sizes_bytes[i] <= 0) {
      return InvalidArgument("sizes_bytes[" + Str(i) + "] must be > 0, got " +
                             Str(p.sizes_bytes[i]));
    }
  }
  if (!p.host_to_device && !p.device_to_host) {
    return InvalidArgument("no copy direction selected (host_to_device, device_to_host)");
  }
  if (!p.pinned && !p.pageable) {
    return InvalidArgument("no host memory kind selected (pinned, pageable)");
  }
  if (p.under_gemm) {
    MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_m", p.gemm_m));
    MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_n", p.gemm_n));
    MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_k", p.gemm_k));
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateTiming(p.timing));
  return CheckBudget(OffloadBytes(p), budget, "offload");
}

ProbeStatus Validate(const OverlapParams& p, int64_t budget) {
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_m", p.gemm_m));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_n", p.gemm_n));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("gemm_k", p.gemm_k));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("collective_bytes", p.collective_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(Positive("group_size", p.group_size));
  const int64_t unit = 4 * p.group_size;
  if (p.collective_bytes % unit != 0) {
    return InvalidArgument("collective_bytes (" + Str(p.collective_bytes) +
                           ") must be a multiple of " + Str(unit) + " bytes");
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateTiming(p.timing));
  return CheckBudget(OverlapBytes(p), budget, "overlap");
}

ProbeStatus Validate(const ProbeParams& p, int64_t budget) {
  return std::visit([budget](const auto& v) { return Validate(v, budget); }, p);
}

ProbeStatus ValidateGroup(const GroupSpec& g, int64_t expected_world_size) {
  if (g.world_size != expected_world_size) {
    return InvalidArgument("group world_size (" + Str(g.world_size) +
                           ") must equal the probe's group size (" + Str(expected_world_size) + ")");
  }
  if (g.rank < 0 || g.rank >= g.world_size) {
    return InvalidArgument("rank (" + Str(g.rank) + ") must be in [0, " + Str(g.world_size) + ")");
  }
  if (g.ranks_per_node < 0 || (g.ranks_per_node > 0 && g.world_size % g.ranks_per_node != 0)) {
    return InvalidArgument("ranks_per_node (" + Str(g.ranks_per_node) +
                           ") must divide world_size (" + Str(g.world_size) + ")");
  }
  if (g.timeout.count() <= 0) {
    return InvalidArgument("timeout must be > 0 ms, got " + Str(g.timeout.count()));
  }
  return ProbeStatus::Ok();
}

int64_t RequiredBytes(const ProbeParams& p) {
  switch (p.index()) {
    case 0: return GroupedGemmBytes(std::get<0>(p));
    case 1: return DispatchBytes(std::get<1>(p));
    case 2: return CollectiveBytes(std::get<2>(p));
    case 3: return OffloadBytes(std::get<3>(p));
    default: return OverlapBytes(std::get<4>(p));
  }
}

std::string ParamsToJson(const ProbeParams& params) {
  std::string s = "{\"kind\":" + Q(ProbeKindName(KindOf(params)));
  if (const auto* p = std::get_if<GroupedGemmParams>(&params)) {
    s += ",\"num_experts\":" + Str(p->num_experts) + ",\"total_tokens\":" + Str(p->total_tokens) +
         ",\"hidden\":" + Str(p->hidden) + ",\"ffn_hidden\":" + Str(p->ffn_hidden) +
         ",\"distribution\":" + JsonDist(p->distribution) + ",\"dtype\":" + Q(DTypeName(p->dtype)) +
         ",\"forward\":" + B(p->forward) + ",\"backward_data\":" + B(p->backward_data) +
         ",\"backward_weight\":" + B(p->backward_weight) +
         ",\"expert_tokens\":" + JsonVec(ExpertTokenCounts(*p));
  } else if (const auto* p = std::get_if<DispatchCombineParams>(&params)) {
    s += ",\"tokens_per_rank\":" + Str(p->tokens_per_rank) + ",\"hidden\":" + Str(p->hidden) +
         ",\"top_k\":" + Str(p->top_k) + ",\"num_experts\":" + Str(p->num_experts) +
         ",\"ep_size\":" + Str(p->ep_size) + ",\"ranks_per_node\":" + Str(p->ranks_per_node) +
         ",\"routing\":" + JsonDist(p->routing) +
         ",\"max_nodes_per_token\":" + Str(p->max_nodes_per_token) +
         ",\"mode\":" + Q(DispatchModeName(p->mode)) + ",\"dtype\":" + Q(DTypeName(p->dtype));
  } else if (const auto* p = std::get_if<CollectiveParams>(&params)) {
    s += ",\"op\":" + Q(CollectiveOpName(p->op)) + ",\"sizes_bytes\":" + JsonVec(p->sizes_bytes) +
         ",\"group_size\":" + Str(p->group_size) + ",\"span\":" + Q(SpanName(p->span)) +
         ",\"dtype\":" + Q(DTypeName(p->dtype));
  } else if (const auto* p = std::get_if<OffloadParams>(&params)) {
    s += ",\"sizes_bytes\":" + JsonVec(p->sizes_bytes) +
         ",\"host_to_device\":" + B(p->host_to_device) +
         ",\"device_to_host\":" + B(p->device_to_host) + ",\"pinned\":" + B(p->pinned) +
         ",\"pageable\":" + B(p->pageable) + ",\"under_gemm\":" + B(p->under_gemm) +
         ",\"gemm_m\":" + Str(p->gemm_m) + ",\"gemm_n\":" + Str(p->gemm_n) +
         ",\"gemm_k\":" + Str(p->gemm_k) + ",\"gemm_dtype\":" + Q(DTypeName(p->gemm_dtype));
  } else if (const auto* p = std::get_if<OverlapParams>(&params)) {
    s += ",\"gemm_m\":" + Str(p->gemm_m) + ",\"gemm_n\":" + Str(p->gemm_n) +
         ",\"gemm_k\":" + Str(p->gemm_k) + ",\"gemm_dtype\":" + Q(DTypeName(p->gemm_dtype)) +
         ",\"op\":" + Q(CollectiveOpName(p->op)) +
         ",\"collective_bytes\":" + Str(p->collective_bytes) +
         ",\"group_size\":" + Str(p->group_size);
  }
  return s + ",\"timing\":" + JsonTiming(TimingOf(params)) + "}";
}

}  // namespace moetune::kernels
