// The contract between the probes and the server's fitting: what each
// measurement's name and labels mean (std-only, header-only; used by
// kernels/cpu, kernels/cuda and server/fitting.cc). A rename here changes
// both sides at once, and a test (server/calibration_loop_test) runs every
// CPU probe through the fitting, so a measurement the fitting no longer
// recognizes fails a test instead of silently dropping calibration back to
// the datasheet priors.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/probe_types.h"

namespace moetune::kernels::roles {

// ---- grouped GEMM: "<pass>/<impl>" ----------------------------------------
enum class GemmPass { kFwd, kBwdData, kBwdWeight };
enum class GemmImpl { kDenseRef, kLoop, kGrouped };

inline const char* Name(GemmPass p) {
  return p == GemmPass::kFwd ? "fwd" : p == GemmPass::kBwdData ? "bwd_data" : "bwd_weight";
}
inline const char* Name(GemmImpl i) {
  return i == GemmImpl::kDenseRef ? "dense_ref" : i == GemmImpl::kLoop ? "loop" : "grouped";
}
inline std::string GroupedGemmName(GemmPass p, GemmImpl i) { return std::string(Name(p)) + "/" + Name(i); }

inline bool ParseGroupedGemmName(std::string_view name, GemmPass* pass, GemmImpl* impl) {
  for (GemmPass p : {GemmPass::kFwd, GemmPass::kBwdData, GemmPass::kBwdWeight}) {
    for (GemmImpl i : {GemmImpl::kDenseRef, GemmImpl::kLoop, GemmImpl::kGrouped}) {
      if (name == GroupedGemmName(p, i)) {
        *pass = p;
        *impl = i;
        return true;
      }
    }
  }
  return false;
}

// The labels of every grouped GEMM measurement: each expert's GEMM as
// [m x k] x [k x n] (fwd: m = tokens, n = ffn_hidden, k = hidden; bwd_data:
// m = tokens, n = hidden, k = ffn_hidden; bwd_weight: m = hidden, n =
// ffn_hidden, k = tokens); the token axis is the mean over all experts
// (total tokens / experts), imbalance = the largest expert's tokens / mean.
// dense_ref: one GEMM, m = all tokens (k = all tokens for bwd_weight).
inline constexpr char kLabelPass[] = "pass";
inline constexpr char kLabelImpl[] = "impl";
inline constexpr char kLabelDType[] = "dtype";
inline constexpr char kLabelExperts[] = "experts";
inline constexpr char kLabelGemmM[] = "gemm_m";
inline constexpr char kLabelGemmN[] = "gemm_n";
inline constexpr char kLabelGemmK[] = "gemm_k";
inline constexpr char kLabelImbalance[] = "imbalance";

struct GemmShapeLabels {
  double m = 0, n = 0, k = 0;
  double imbalance = 1;
  int64_t experts = 1;
};

// The per-expert shape of `pass` for these token counts (see above).
inline GemmShapeLabels GroupedGemmShape(GemmPass pass, GemmImpl impl, int64_t experts, int64_t total_tokens,
                                        int64_t max_expert_tokens, int64_t hidden, int64_t ffn_hidden) {
  GemmShapeLabels s;
  s.experts = impl == GemmImpl::kDenseRef ? 1 : experts;
  const double tokens = impl == GemmImpl::kDenseRef ? double(total_tokens) : double(total_tokens) / experts;
  s.imbalance = impl == GemmImpl::kDenseRef || tokens <= 0 ? 1.0 : max_expert_tokens / tokens;
  switch (pass) {
    case GemmPass::kFwd: s.m = tokens, s.n = double(ffn_hidden), s.k = double(hidden); break;
    case GemmPass::kBwdData: s.m = tokens, s.n = double(hidden), s.k = double(ffn_hidden); break;
    case GemmPass::kBwdWeight: s.m = double(hidden), s.n = double(ffn_hidden), s.k = tokens; break;
  }
  return s;
}

inline std::string LabelNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

inline void SetGemmShapeLabels(const GemmShapeLabels& s, std::map<std::string, std::string>* labels) {
  (*labels)[kLabelGemmM] = LabelNumber(s.m);
  (*labels)[kLabelGemmN] = LabelNumber(s.n);
  (*labels)[kLabelGemmK] = LabelNumber(s.k);
  (*labels)[kLabelImbalance] = LabelNumber(s.imbalance);
  (*labels)[kLabelExperts] = std::to_string(s.experts);
}

// Parses the labels written by SetGemmShapeLabels (nullopt when one is
// missing or not a positive number).
template <typename LabelMap>
std::optional<GemmShapeLabels> GetGemmShapeLabels(const LabelMap& labels) {
  auto num = [&](const char* key, double* out) {
    auto it = labels.find(key);
    if (it == labels.end()) return false;
    const std::string text(it->second);
    char* end = nullptr;
    *out = std::strtod(text.c_str(), &end);
    return end != text.c_str() && *end == '\0' && *out > 0;
  };
  GemmShapeLabels s;
  double experts = 0;
  if (!num(kLabelGemmM, &s.m) || !num(kLabelGemmN, &s.n) || !num(kLabelGemmK, &s.k) ||
      !num(kLabelImbalance, &s.imbalance) || !num(kLabelExperts, &experts)) {
    return std::nullopt;
  }
  s.experts = static_cast<int64_t>(experts);
  return s;
}

// ---- collectives: "<op>/<bytes>" -----------------------------------------
inline constexpr char kLabelOp[] = "op";
inline constexpr char kLabelGroupSize[] = "group_size";
inline constexpr char kLabelSpan[] = "span";
inline constexpr char kLabelSizeBytes[] = "size_bytes";
inline std::string CollectiveName(CollectiveOp op, int64_t bytes) {
  return std::string(CollectiveOpName(op)) + "/" + std::to_string(bytes);
}
inline std::optional<CollectiveOp> ParseCollectiveOp(std::string_view name) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllToAll}) {
    if (name == CollectiveOpName(op)) return op;
  }
  return std::nullopt;
}

// ---- dispatch/combine ------------------------------------------------------
inline constexpr char kDispatch[] = "dispatch";
inline constexpr char kCombine[] = "combine";

// ---- offload: "<h2d|d2h>/<pinned|pageable>/<bytes>[/under_gemm]" ----------
struct OffloadRole {
  bool h2d = true;
  bool pinned = true;
  int64_t bytes = 0;
  bool under_gemm = false;
};
inline std::string OffloadName(const OffloadRole& r) {
  return std::string(r.h2d ? "h2d" : "d2h") + "/" + (r.pinned ? "pinned" : "pageable") + "/" +
         std::to_string(r.bytes) + (r.under_gemm ? "/under_gemm" : "");
}
inline std::optional<OffloadRole> ParseOffloadName(std::string_view name) {
  for (bool h2d : {true, false}) {
    for (bool pinned : {true, false}) {
      for (bool under : {false, true}) {
        OffloadRole r{h2d, pinned, 0, under};
        const std::string head = std::string(h2d ? "h2d" : "d2h") + "/" + (pinned ? "pinned" : "pageable") + "/";
        const std::string tail = under ? "/under_gemm" : "";
        if (name.size() <= head.size() + tail.size() || name.substr(0, head.size()) != head) continue;
        if (name.substr(name.size() - tail.size()) != tail) continue;
        const std::string digits(name.substr(head.size(), name.size() - head.size() - tail.size()));
        char* end = nullptr;
        r.bytes = std::strtoll(digits.c_str(), &end, 10);
        if (end == digits.c_str() || *end != '\0' || r.bytes <= 0) continue;
        return r;
      }
    }
  }
  return std::nullopt;
}

// ---- overlap ---------------------------------------------------------------
inline constexpr char kGemmAlone[] = "gemm_alone";
inline constexpr char kCollectiveAlone[] = "collective_alone";
inline constexpr char kGemmOverlapped[] = "gemm_overlapped";
inline constexpr char kCollectiveOverlapped[] = "collective_overlapped";
inline constexpr char kBoth[] = "both";
inline constexpr char kValueHiddenFraction[] = "hidden_fraction";
inline constexpr char kValueGemmSlowdown[] = "gemm_slowdown";
inline constexpr char kValueCollectiveSlowdown[] = "collective_slowdown";

}  // namespace moetune::kernels::roles
