#include "planner/training_config.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace moetune::planner {
namespace {

struct NamedBit {
  const char* name;
  uint32_t bit;
};
constexpr NamedBit kRecomputeModules[] = {
    {"core_attn", kRecomputeCoreAttn}, {"mla_up_proj", kRecomputeMlaUpProj},
    {"layernorm", kRecomputeLayerNorm}, {"moe_act", kRecomputeMoeAct},
    {"mlp", kRecomputeMlp},             {"moe", kRecomputeMoe},
    {"shared_experts", kRecomputeSharedExperts},
};
constexpr NamedBit kOffloadModules[] = {
    {"attn_norm", kOffloadAttnNorm},   {"core_attn", kOffloadCoreAttn},
    {"attn_proj", kOffloadAttnProj},   {"mlp_norm", kOffloadMlpNorm},
    {"expert_fc1", kOffloadExpertFc1}, {"moe_act", kOffloadMoeAct},
};

template <size_t N>
std::string BitsName(uint32_t bits, const NamedBit (&table)[N]) {
  std::vector<std::string> names;
  for (const NamedBit& b : table) {
    if (bits & b.bit) names.push_back(b.name);
  }
  return absl::StrJoin(names, ",");
}

template <size_t N>
absl::StatusOr<uint32_t> ParseBits(std::string_view text,
                                   const NamedBit (&table)[N],
                                   const char* what) {
  uint32_t bits = 0;
  int named = 0;
  for (absl::string_view part : absl::StrSplit(internal::Sv(text), ',', absl::SkipEmpty())) {
    const std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;  // "a, ,b" and stray separators
    ++named;
    bool found = false;
    for (const NamedBit& b : table) {
      if (name == b.name) {
        bits |= b.bit;
        found = true;
      }
    }
    if (!found) {
      std::vector<std::string> known;
      for (const NamedBit& b : table) known.push_back(b.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", what, " module '", part,
                       "' (expected any of ", absl::StrJoin(known, ","), ")"));
    }
  }
  // An empty list would mean "no module", which callers spell "none": a
  // string of separators is a typo, not a request (found by fix_spec_fuzzer).
  if (named == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ", what, " module named in '", internal::Sv(text), "'"));
  }
  return bits;
}

bool IsPositive(const ParallelConfig& p) {
  return p.tp > 0 && p.pp > 0 && p.vp > 0 && p.ep > 0 && p.etp > 0 &&
         p.cp > 0 && p.dp >= 0 && p.mbs > 0;
}

}  // namespace

std::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kPretrain:
      return "pretrain";
    case Objective::kFinetune:
      return "finetune";
    case Objective::kLora:
      return "lora";
  }
  return "unknown";
}

absl::StatusOr<Objective> ParseObjective(std::string_view name) {
  const std::string lower = internal::Lower(name);
  for (Objective o :
       {Objective::kPretrain, Objective::kFinetune, Objective::kLora}) {
    if (lower == ObjectiveName(o)) return o;
  }
  if (lower == "sft") return Objective::kFinetune;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown objective '", internal::Sv(name), "' (expected pretrain, finetune, lora)"));
}

std::string_view RecomputeModeName(RecomputeMode mode) {
  switch (mode) {
    case RecomputeMode::kNone:
      return "none";
    case RecomputeMode::kSelective:
      return "selective";
    case RecomputeMode::kFull:
      return "full";
  }
  return "unknown";
}

absl::StatusOr<RecomputeMode> ParseRecomputeMode(std::string_view name) {
  const std::string lower = internal::Lower(name);
  for (RecomputeMode m :
       {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
    if (lower == RecomputeModeName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown recompute mode '", internal::Sv(name), "' (expected none, selective, full)"));
}

std::string RecomputeModulesName(uint32_t modules) {
  return BitsName(modules, kRecomputeModules);
}
absl::StatusOr<uint32_t> ParseRecomputeModules(std::string_view names) {
  return ParseBits(names, kRecomputeModules, "recompute");
}
std::string OffloadModulesName(uint32_t modules) {
  return BitsName(modules, kOffloadModules);
}
absl::StatusOr<uint32_t> ParseOffloadModules(std::string_view names) {
  return ParseBits(names, kOffloadModules, "offload");
}

std::string_view DispatcherName(Dispatcher dispatcher) {
  switch (dispatcher) {
    case Dispatcher::kAllToAll:
      return "alltoall";
    case Dispatcher::kFusedDedup:
      return "fused_dedup";
  }
  return "unknown";
}

absl::StatusOr<Dispatcher> ParseDispatcher(std::string_view name) {
  const std::string lower = internal::Lower(name);
  if (lower == "alltoall" || lower == "all_to_all" || lower == "a2a") {
    return Dispatcher::kAllToAll;
  }
  if (lower == "fused_dedup" || lower == "deepep" || lower == "hybridep" ||
      lower == "flex") {
    return Dispatcher::kFusedDedup;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dispatcher '", internal::Sv(name), "' (expected alltoall or fused_dedup)"));
}

std::string_view OptimizerStatesName(OptimizerStates states) {
  return states == OptimizerStates::kBf16Moments ? "bf16" : "fp32";
}

absl::StatusOr<OptimizerStates> ParseOptimizerStates(std::string_view name) {
  const std::string lower = internal::Lower(name);
  if (lower == "fp32") return OptimizerStates::kFp32;
  if (lower == "bf16" || lower == "bf16_moments" || lower == "precision_aware") {
    return OptimizerStates::kBf16Moments;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer states '", internal::Sv(name), "' (expected fp32 or bf16)"));
}

std::string_view InfeasibilityName(Infeasibility reason) {
  switch (reason) {
    case Infeasibility::kNone:
      return "feasible";
    case Infeasibility::kNonPositiveValue:
      return "non-positive parallel size";
    case Infeasibility::kGpusNotDivisible:
      return "gpus not divisible by tp*pp*cp*dp";
    case Infeasibility::kTpDoesNotDivideHeads:
      return "tp does not divide attention heads";
    case Infeasibility::kEpDoesNotDivideExperts:
      return "ep does not divide routed experts";
    case Infeasibility::kExpertLayoutMismatch:
      return "ep*etp does not divide tp*cp*dp";
    case Infeasibility::kEpWithoutExperts:
      return "ep/etp > 1 on a dense model";
    case Infeasibility::kBatchNotDivisible:
      return "global batch not divisible by mbs*dp";
    case Infeasibility::kTooFewLayers:
      return "fewer layers than pipeline stages";
    case Infeasibility::kSeqNotDivisible:
      return "seq_len not divisible by 2*cp (and tp)";
    case Infeasibility::kVpWithoutPp:
      return "vp > 1 needs pp > 1";
    case Infeasibility::kBadUnevenStages:
      return "first/last stage layers do not fit";
    case Infeasibility::kFfnNotDivisible:
      return "ffn width not divisible by tp (etp)";
    case Infeasibility::kPrecisionUnsupported:
      return "precision unsupported by the GPU";
    case Infeasibility::kHostMemoryExceeded:
      return "offloaded activations and optimizer state exceed the host memory per GPU";
  }
  return "unknown";
}

int ResolvedDp(const TrainingShape& shape, const ParallelConfig& p) {
  if (p.dp > 0) return p.dp;
  const int denom = p.tp * p.pp * p.cp;
  return denom > 0 ? shape.gpus / denom : 0;
}

int NumMicroBatches(const TrainingShape& shape, const ParallelConfig& p) {
  const int dp = ResolvedDp(shape, p);
  return dp > 0 && p.mbs > 0 ? shape.global_batch / (p.mbs * dp) : 0;
}

std::vector<int> FixedStageLayers(const ModelSpec& m, const ParallelConfig& p) {
  const int stages = p.pp * p.vp;
  const int layers = m.num_layers;
  if (stages <= 0) return {};
  const bool fixed_first = p.first_stage_layers.has_value();
  const bool fixed_last = p.last_stage_layers.has_value();
  if (!fixed_first && !fixed_last) {
    if (layers % stages != 0) return {};
    return std::vector<int>(size_t(stages), layers / stages);
  }
  const int mid_stages = stages - (fixed_first ? 1 : 0) - (fixed_last ? 1 : 0);
  const int rest = layers - p.first_stage_layers.value_or(0) - p.last_stage_layers.value_or(0);
  if (rest < 0 || (mid_stages <= 0 && rest != 0)) return {};
  std::vector<int> out;
  int mid_index = 0;
  for (int v = 0; v < stages; ++v) {
    if (v == 0 && fixed_first) {
      out.push_back(*p.first_stage_layers);
    } else if (v == stages - 1 && fixed_last) {
      out.push_back(*p.last_stage_layers);
    } else {
      out.push_back(rest / mid_stages + (mid_index < rest % mid_stages ? 1 : 0));
      ++mid_index;
    }
  }
  return out;
}

Infeasibility CheckLayout(const ModelSpec& m, const TrainingShape& s,
                          const ParallelConfig& p) {
  if (!IsPositive(p) || s.gpus <= 0 || s.seq_len <= 0 ||
      s.global_batch <= 0) {
    return Infeasibility::kNonPositiveValue;
  }
  const int dp = ResolvedDp(s, p);
  if (dp <= 0 || int64_t(p.tp) * p.pp * p.cp * dp != s.gpus) {
    return Infeasibility::kGpusNotDivisible;
  }
  if (m.num_attention_heads % p.tp != 0 ||
      (m.attention == AttentionType::kGqa && m.num_kv_heads % p.tp != 0 &&
       p.tp % m.num_kv_heads != 0)) {
    return Infeasibility::kTpDoesNotDivideHeads;
  }
  if (!m.IsMoe() && (p.ep > 1 || p.etp > 1)) {
    return Infeasibility::kEpWithoutExperts;
  }
  if (m.IsMoe() && m.num_routed_experts % p.ep != 0) {
    return Infeasibility::kEpDoesNotDivideExperts;
  }
  if ((int64_t(p.tp) * p.cp * dp) % (int64_t(p.ep) * p.etp) != 0) {
    return Infeasibility::kExpertLayoutMismatch;
  }
  if (s.global_batch % (p.mbs * dp) != 0) {
    return Infeasibility::kBatchNotDivisible;
  }
  if (p.vp > 1 && p.pp == 1) return Infeasibility::kVpWithoutPp;
  if (m.num_layers + 2 < p.pp * p.vp) return Infeasibility::kTooFewLayers;
  if (s.seq_len % (p.cp > 1 ? 2 * p.cp : 1) != 0 ||
      (s.seq_len / p.cp) % p.tp != 0) {
    return Infeasibility::kSeqNotDivisible;
  }
  // (The O(layers) count only when the cheap test fails.)
  if (m.ffn_hidden_size % p.tp != 0 && m.NumMoeLayers() < m.num_layers) {
    return Infeasibility::kFfnNotDivisible;
  }
  if (m.IsMoe() && m.moe_ffn_hidden_size % p.etp != 0) {
    return Infeasibility::kFfnNotDivisible;
  }
  if (p.first_stage_layers || p.last_stage_layers) {
    const int first = p.first_stage_layers.value_or(0);
    const int last = p.last_stage_layers.value_or(0);
    const int stages = p.pp * p.vp;
    const int fixed = (p.first_stage_layers ? 1 : 0) +
                      (p.last_stage_layers ? 1 : 0);
    const int rest = m.num_layers - first - last;
    if (first < 0 || last < 0 || rest < 0 || stages <= fixed ||
        rest < stages - fixed) {
      // Every middle stage needs at least one layer.
      if (!(stages == fixed && rest == 0)) {
        return Infeasibility::kBadUnevenStages;
      }
    }
  }
  return Infeasibility::kNone;
}

absl::Status Validate(const ModelSpec& m, const TrainingShape& s,
                      const ParallelConfig& p) {
  const Infeasibility reason = CheckLayout(m, s, p);
  const int dp = ResolvedDp(s, p);
  switch (reason) {
    case Infeasibility::kNone:
      return absl::OkStatus();
    case Infeasibility::kNonPositiveValue:
      return absl::InvalidArgumentError(absl::StrCat(
          "every size must be positive: gpus=", s.gpus, " seq_len=", s.seq_len,
          " global_batch=", s.global_batch, " ", ToString(p)));
    case Infeasibility::kGpusNotDivisible:
      return absl::InvalidArgumentError(absl::StrCat(
          "gpus=", s.gpus, " is not tp*pp*cp*dp = ", p.tp, "*", p.pp, "*",
          p.cp, "*", dp));
    case Infeasibility::kTpDoesNotDivideHeads:
      return absl::InvalidArgumentError(absl::StrCat(
          "tp=", p.tp, " does not divide num_attention_heads=",
          m.num_attention_heads, " / num_kv_heads=", m.num_kv_heads));
    case Infeasibility::kEpDoesNotDivideExperts:
      return absl::InvalidArgumentError(
          absl::StrCat("ep=", p.ep, " does not divide num_routed_experts=",
                       m.num_routed_experts));
    case Infeasibility::kExpertLayoutMismatch:
      return absl::InvalidArgumentError(absl::StrCat(
          "ep*etp=", p.ep * p.etp, " does not divide tp*cp*dp=",
          p.tp * p.cp * dp));
    case Infeasibility::kEpWithoutExperts:
      return absl::InvalidArgumentError(
          absl::StrCat("ep=", p.ep, " etp=", p.etp, " on dense model ",
                       m.name.empty() ? m.model_type : m.name));
    case Infeasibility::kBatchNotDivisible:
      return absl::InvalidArgumentError(
          absl::StrCat("global_batch=", s.global_batch,
                       " is not divisible by mbs*dp=", p.mbs, "*", dp));
    case Infeasibility::kTooFewLayers:
      return absl::InvalidArgumentError(
          absl::StrCat("num_layers=", m.num_layers, " (+2 for embedding and loss "
                       "stages) is fewer than pp*vp=", p.pp, "*", p.vp,
                       " virtual stages"));
    case Infeasibility::kSeqNotDivisible:
      return absl::InvalidArgumentError(
          absl::StrCat("seq_len=", s.seq_len, " is not divisible by 2*cp=",
                       2 * p.cp, " (and by tp=", p.tp, " after cp)"));
    case Infeasibility::kVpWithoutPp:
      return absl::InvalidArgumentError(
          absl::StrCat("vp=", p.vp, " needs pp > 1"));
    case Infeasibility::kBadUnevenStages:
      return absl::InvalidArgumentError(absl::StrCat(
          "first_stage_layers=", p.first_stage_layers.value_or(0),
          " last_stage_layers=", p.last_stage_layers.value_or(0),
          " leave too few of num_layers=", m.num_layers, " for pp*vp=",
          p.pp * p.vp, " stages"));
    case Infeasibility::kFfnNotDivisible:
      return absl::InvalidArgumentError(absl::StrCat(
          "ffn_hidden_size=", m.ffn_hidden_size, " / moe_ffn_hidden_size=",
          m.moe_ffn_hidden_size, " not divisible by tp=", p.tp,
          " / etp=", p.etp));
    case Infeasibility::kPrecisionUnsupported:
      return absl::InvalidArgumentError("precision unsupported");
    case Infeasibility::kHostMemoryExceeded:  // the step model's, not CheckLayout's
      return absl::InvalidArgumentError(
          "offloaded activations and optimizer state exceed the host memory per GPU");
  }
  return absl::InternalError("unhandled infeasibility");
}

std::string_view RankOrderName(const ParallelConfig& p) {
  return p.dp_outermost ? "tp-cp-ep-pp-dp" : "tp-cp-ep-dp-pp";
}

std::string ToString(const ParallelConfig& p) {
  std::string s = absl::StrCat("tp=", p.tp, " pp=", p.pp, " vp=", p.vp,
                               " ep=", p.ep, " etp=", p.etp, " cp=", p.cp,
                               " dp=", p.dp, " mbs=", p.mbs);
  if (p.shard_params) absl::StrAppend(&s, " shard_params=true");
  if (p.first_stage_layers) {
    absl::StrAppend(&s, " first_stage_layers=", *p.first_stage_layers);
  }
  if (p.last_stage_layers) {
    absl::StrAppend(&s, " last_stage_layers=", *p.last_stage_layers);
  }
  if (p.dp_outermost) absl::StrAppend(&s, " rank_order=", std::string(RankOrderName(p)));
  return s;
}

std::string ToString(const Knobs& k) {
  return absl::StrCat(
      "precision=", internal::Sv(PrecisionName(k.precision)),
      " recompute=", internal::Sv(RecomputeModeName(k.recompute.mode)),
      k.recompute.mode == RecomputeMode::kSelective
          ? absl::StrCat("(", RecomputeModulesName(k.recompute.modules), ")")
          : "",
      " offload=",
      k.offload_activations ? OffloadModulesName(k.offload_modules) : "none",
      k.offload_layers > 0 ? absl::StrCat(" offload_layers=", k.offload_layers) : "",
      " dispatcher=", internal::Sv(DispatcherName(k.dispatcher)),
      " grouped_gemm=", k.grouped_gemm ? "true" : "false",
      " overlap(tp,ep,dp,pp)=", k.overlap.tp_comm ? 1 : 0,
      k.overlap.ep_comm ? 1 : 0, k.overlap.dp_comm ? 1 : 0,
      k.overlap.pp_comm ? 1 : 0, " streams=", k.overlap.num_comm_streams,
      " cuda_graphs=", k.cuda_graphs ? "true" : "false",
      // Only when not the benchmark default, so balanced plans print as before.
      k.routing == Routing::kNatural ? " routing=natural" : "",
      k.moe_load_imbalance != 1.0 ? absl::StrCat(" moe_imbalance=", k.moe_load_imbalance)
                                  : "",
      // Only when not the default, so fp32-state plans print as before.
      k.optimizer_states == OptimizerStates::kBf16Moments ? " optimizer_states=bf16" : "",
      k.optimizer_offload_fraction > 0
          ? absl::StrCat(" optimizer_offload=", k.optimizer_offload_fraction,
                         k.optimizer_offload_overlap ? "(overlap)" : "")
          : "");
}

}  // namespace moetune::planner
