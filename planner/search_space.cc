#include "planner/search_space.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "planner/internal/strings.h"

namespace moetune::planner {
namespace {

constexpr const char* kIntKeys[] = {"tp",  "pp", "vp",  "ep",
                                    "etp", "cp", "dp",  "mbs",
                                    "first_stage_layers", "last_stage_layers"};
constexpr const char* kOtherKeys[] = {"shard_params", "dp_outermost", "recompute", "offload",
                                      "offload_layers", "dispatcher",  "grouped_gemm",
                                      "overlap",     "comm_streams",
                                      "cuda_graphs", "precision"};

std::string KnownKeys() {
  std::vector<std::string> keys;
  for (const char* k : kIntKeys) keys.push_back(k);
  for (const char* k : kOtherKeys) keys.push_back(k);
  return absl::StrJoin(keys, ", ");
}

using internal::Sv;

absl::Status FixError(absl::string_view key, absl::string_view value,
                      absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--fix ", key, "=", value, ": ", why));
}

absl::StatusOr<bool> ParseBool(absl::string_view key, absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "true" || v == "on" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "off" || v == "0" || v == "no") return false;
  return FixError(key, value, "expected true/false (or on/off, 1/0)");
}

absl::StatusOr<Recompute> ParseRecomputeValue(absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  Recompute r;
  if (v == "none") return r;
  if (v == "full") {
    r.mode = RecomputeMode::kFull;
    return r;
  }
  r.mode = RecomputeMode::kSelective;
  if (v == "selective") {
    r.modules = kRecomputeCoreAttn;  // Megatron's default module
    return r;
  }
  absl::StatusOr<uint32_t> modules =
      ParseRecomputeModules(absl::StrReplaceAll(v, {{"+", ","}}));
  if (!modules.ok()) {
    return FixError("recompute", value,
                    absl::StrCat("expected none, full, selective or modules "
                                 "joined by '+': ",
                                 modules.status().message()));
  }
  r.modules = *modules;
  return r;
}

absl::StatusOr<uint32_t> ParseOffloadValue(absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "none") return 0u;
  if (v == "all") {
    return uint32_t{kOffloadAttnNorm | kOffloadCoreAttn | kOffloadAttnProj |
                    kOffloadMlpNorm | kOffloadExpertFc1 | kOffloadMoeAct};
  }
  absl::StatusOr<uint32_t> modules =
      ParseOffloadModules(std::string(absl::StrReplaceAll(v, {{"+", ","}})));
  if (!modules.ok()) {
    return FixError("offload", value,
                    absl::StrCat("expected none, all or modules joined by "
                                 "'+': ",
                                 modules.status().message()));
  }
  return *modules;
}

std::optional<int>* IntField(FixedKnobs& f, absl::string_view key) {
  if (key == "tp") return &f.tp;
  if (key == "pp") return &f.pp;
  if (key == "vp") return &f.vp;
  if (key == "ep") return &f.ep;
  if (key == "etp") return &f.etp;
  if (key == "cp") return &f.cp;
  if (key == "dp") return &f.dp;
  if (key == "mbs") return &f.mbs;
  if (key == "first_stage_layers") return &f.first_stage_layers;
  if (key == "last_stage_layers") return &f.last_stage_layers;
  return nullptr;
}

std::string BoolName(bool b) { return b ? "true" : "false"; }

std::string RecomputeValueName(const Recompute& r) {
  switch (r.mode) {
    case RecomputeMode::kNone:
      return "none";
    case RecomputeMode::kFull:
      return "full";
    case RecomputeMode::kSelective:
      return absl::StrReplaceAll(RecomputeModulesName(r.modules), {{",", "+"}});
  }
  return "none";
}

// "tp+ep+dp" (or "none"): exactly those overlaps on.
absl::StatusOr<Overlap> ParseOverlapComponents(absl::string_view value) {
  Overlap o;
  o.tp_comm = o.ep_comm = o.dp_comm = o.pp_comm = false;
  o.num_comm_streams = 1;
  if (absl::AsciiStrToLower(value) == "none") return o;
  for (absl::string_view part : absl::StrSplit(value, '+')) {
    const std::string c = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    bool* bit = c == "tp"   ? &o.tp_comm
                : c == "ep" ? &o.ep_comm
                : c == "dp" ? &o.dp_comm
                : c == "pp" ? &o.pp_comm
                            : nullptr;
    if (bit == nullptr) {
      return FixError("overlap", value,
                      "expected true/false or communications joined by '+' "
                      "(tp, ep, dp, pp) or none");
    }
    *bit = true;
  }
  return o;
}

// Tokens each CP rank keeps at least: below this the per-rank attention
// GEMMs are tiny and the ring's 2 * cp steps dominate (Megatron-Core applies
// CP from 8k-token sequences on).
constexpr int kMinTokensPerCpRank = 512;

}  // namespace

absl::StatusOr<FixedKnobs> ParseFixSpec(std::string_view spec) {
  FixedKnobs f;
  std::vector<std::string> seen;
  for (absl::string_view raw : absl::StrSplit(Sv(spec), ',')) {
    const absl::string_view entry = absl::StripAsciiWhitespace(raw);
    if (entry.empty()) {
      if (absl::StripAsciiWhitespace(Sv(spec)).empty()) break;
      return absl::InvalidArgumentError(absl::StrCat(
          "--fix '", Sv(spec), "': empty entry (expected key=value,...)"));
    }
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fix '", entry, "': expected key=value"));
    }
    const std::string key =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(entry.substr(0, eq)));
    const absl::string_view value =
        absl::StripAsciiWhitespace(entry.substr(eq + 1));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return FixError(key, value, "key given twice");
    }
    seen.push_back(key);
    if (value.empty()) return FixError(key, value, "empty value");

    if (std::optional<int>* field = IntField(f, key)) {
      int n = 0;
      const bool layers = key == "first_stage_layers" || key == "last_stage_layers";
      if (!absl::SimpleAtoi(value, &n) || n < (layers ? 0 : 1)) {
        return FixError(key, value,
                        layers ? "expected a non-negative integer"
                               : "expected a positive integer");
      }
      *field = n;
    } else if (key == "recompute") {
      absl::StatusOr<Recompute> r = ParseRecomputeValue(value);
      if (!r.ok()) return r.status();
      f.recompute = *r;
    } else if (key == "offload") {
      absl::StatusOr<uint32_t> o = ParseOffloadValue(value);
      if (!o.ok()) return o.status();
      f.offload_modules = *o;
    } else if (key == "offload_layers") {
      int n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 0) {
        return FixError(key, value, "expected a non-negative integer (0: no layer-wise offload)");
      }
      f.offload_layers = n;
    } else if (key == "dispatcher") {
      absl::StatusOr<Dispatcher> d =
          ParseDispatcher(std::string_view(value.data(), value.size()));
      if (!d.ok()) return FixError(key, value, d.status().message());
      f.dispatcher = *d;
    } else if (key == "overlap" && !ParseBool(key, value).ok()) {
      absl::StatusOr<Overlap> o = ParseOverlapComponents(value);
      if (!o.ok()) return o.status();
      f.overlap_exact = *o;
      f.overlap = o->tp_comm || o->ep_comm || o->dp_comm || o->pp_comm;
    } else if (key == "grouped_gemm" || key == "overlap" ||
               key == "cuda_graphs" || key == "shard_params" || key == "dp_outermost") {
      absl::StatusOr<bool> b = ParseBool(key, value);
      if (!b.ok()) return b.status();
      (key == "grouped_gemm"   ? f.grouped_gemm
       : key == "overlap"      ? f.overlap
       : key == "shard_params" ? f.shard_params
       : key == "dp_outermost" ? f.dp_outermost
                               : f.cuda_graphs) = *b;
    } else if (key == "comm_streams") {
      int n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 1 || n > 8) {
        return FixError(key, value, "expected an integer from 1 to 8");
      }
      f.comm_streams = n;
    } else if (key == "precision") {
      absl::StatusOr<Precision> p =
          ParsePrecision(std::string_view(value.data(), value.size()));
      if (!p.ok()) return FixError(key, value, p.status().message());
      f.precision = *p;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fix: unknown key '", key, "' (known: ", KnownKeys(), ")"));
    }
  }
  return f;
}

void PinKnobs(const Knobs& k, FixedKnobs* f) {
  f->recompute = k.recompute;
  f->offload_modules = k.offload_activations ? k.offload_modules : 0u;
  f->offload_layers = k.offload_layers;
  f->dispatcher = k.dispatcher;
  f->grouped_gemm = k.grouped_gemm;
  f->overlap_exact = k.overlap;
  f->overlap = k.overlap.tp_comm || k.overlap.ep_comm || k.overlap.dp_comm || k.overlap.pp_comm;
  f->comm_streams = k.overlap.num_comm_streams;
  f->cuda_graphs = k.cuda_graphs;
  f->precision = k.precision;
}

void ApplyUnsearchedKnobs(const SpaceConstraints& c, Knobs* knobs) {
  knobs->moe_load_imbalance = c.moe_load_imbalance;
  knobs->routing = c.routing;
  knobs->optimizer_states = c.optimizer_states;
  knobs->optimizer_offload_fraction = c.optimizer_offload_fraction;
  knobs->optimizer_offload_overlap = c.optimizer_offload_overlap;
}

void ApplyLayoutPins(const FixedKnobs& f, ParallelConfig* p) {
  p->shard_params = f.shard_params.value_or(false);
  p->dp_outermost = f.dp_outermost.value_or(false);  // Megatron's default order
  p->first_stage_layers = f.first_stage_layers;
  p->last_stage_layers = f.last_stage_layers;
}

void ApplyKnobPins(const FixedKnobs& f, Knobs* k) {
  if (f.recompute) k->recompute = *f.recompute;
  if (f.offload_modules) {
    k->offload_modules = *f.offload_modules;
    k->offload_activations = *f.offload_modules != 0;
  }
  if (f.offload_layers) k->offload_layers = *f.offload_layers;
  if (f.dispatcher) k->dispatcher = *f.dispatcher;
  if (f.grouped_gemm) k->grouped_gemm = *f.grouped_gemm;
  if (f.overlap_exact) {
    k->overlap = *f.overlap_exact;
  } else if (f.overlap) {
    k->overlap.tp_comm = k->overlap.ep_comm = k->overlap.dp_comm = k->overlap.pp_comm = *f.overlap;
  }
  if (f.comm_streams) k->overlap.num_comm_streams = *f.comm_streams;
  if (f.cuda_graphs) k->cuda_graphs = *f.cuda_graphs;
  if (f.precision) k->precision = *f.precision;
}

std::string ToString(const FixedKnobs& f) {
  std::vector<std::string> parts;
  FixedKnobs copy = f;
  for (const char* key : kIntKeys) {
    const std::optional<int>* field = IntField(copy, key);
    if (field->has_value()) parts.push_back(absl::StrCat(key, "=", **field));
  }
  if (f.shard_params) {
    parts.push_back(absl::StrCat("shard_params=", BoolName(*f.shard_params)));
  }
  if (f.dp_outermost) {
    parts.push_back(absl::StrCat("dp_outermost=", BoolName(*f.dp_outermost)));
  }
  if (f.recompute) {
    parts.push_back(absl::StrCat("recompute=", RecomputeValueName(*f.recompute)));
  }
  if (f.offload_modules) {
    parts.push_back(absl::StrCat(
        "offload=", *f.offload_modules == 0
                        ? std::string("none")
                        : absl::StrReplaceAll(
                              OffloadModulesName(*f.offload_modules),
                              {{",", "+"}})));
  }
  if (f.offload_layers.value_or(0) > 0) {  // 0 is the unset value
    parts.push_back(absl::StrCat("offload_layers=", *f.offload_layers));
  }
  if (f.dispatcher) {
    parts.push_back(
        absl::StrCat("dispatcher=", Sv(DispatcherName(*f.dispatcher))));
  }
  if (f.grouped_gemm) {
    parts.push_back(absl::StrCat("grouped_gemm=", BoolName(*f.grouped_gemm)));
  }
  if (f.overlap_exact) {
    const Overlap& o = *f.overlap_exact;
    std::vector<std::string> on;
    if (o.tp_comm) on.push_back("tp");
    if (o.ep_comm) on.push_back("ep");
    if (o.dp_comm) on.push_back("dp");
    if (o.pp_comm) on.push_back("pp");
    parts.push_back(absl::StrCat("overlap=", on.empty() ? "none" : absl::StrJoin(on, "+")));
  } else if (f.overlap) {
    parts.push_back(absl::StrCat("overlap=", BoolName(*f.overlap)));
  }
  if (f.comm_streams) {
    parts.push_back(absl::StrCat("comm_streams=", *f.comm_streams));
  }
  if (f.cuda_graphs) {
    parts.push_back(absl::StrCat("cuda_graphs=", BoolName(*f.cuda_graphs)));
  }
  if (f.precision) {
    parts.push_back(
        absl::StrCat("precision=", Sv(PrecisionName(*f.precision))));
  }
  return absl::StrJoin(parts, ",");
}

std::vector<Precision> SupportedPrecisions(const GpuSpec& gpu) {
  std::vector<Precision> out;
  for (int i = 0; i < kNumPrecisions; ++i) {
    const Precision p = static_cast<Precision>(i);
    if (PeakDenseFlopsPerSec(gpu, p).has_value()) out.push_back(p);
  }
  return out;
}

std::vector<int> Divisors(int n) {
  // Pairs (d, n / d) up to sqrt(n): the small ones ascending, their
  // partners descending, joined into one ascending list.
  std::vector<int> small, large;
  for (int d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

absl::StatusOr<KnobAxes> BuildKnobAxes(const ModelSpec& model,
                                       const ClusterSpec& cluster,
                                       const SpaceConstraints& c) {
  const FixedKnobs& f = c.fixed;
  KnobAxes axes;

  // Precision.
  std::vector<Precision> allowed =
      c.precisions.empty() ? std::vector<Precision>{Precision::kBf16}
                           : c.precisions;
  if (f.precision) {
    if (!c.precisions.empty() &&
        std::find(allowed.begin(), allowed.end(), *f.precision) ==
            allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fix precision=", Sv(PrecisionName(*f.precision)),
          " is not among the allowed precisions"));
    }
    allowed = {*f.precision};
  }
  for (Precision p : allowed) {
    if (!PeakDenseFlopsPerSec(cluster.gpu, p).has_value()) {
      return absl::UnimplementedError(absl::StrCat(
          cluster.name, " (", cluster.gpu.name, ") has no ", Sv(PrecisionName(p)),
          " tensor-core mode"));
    }
    if (std::find(axes.precisions.begin(), axes.precisions.end(), p) ==
        axes.precisions.end()) {
      axes.precisions.push_back(p);
    }
  }

  // Layer-wise offload: pinned only. Megatron runs it with none of
  // recompute, fine-grained offload, per-layer CUDA graphs or pp > 1
  // (framework_rules.h): the axes the user left free take those values; a
  // pin that contradicts it is left for the framework rules to name.
  const int offload_layers = f.offload_layers.value_or(0);
  axes.offload_layers = offload_layers;

  // Recompute, least first. Module sets only name modules the model has.
  const bool moe = model.IsMoe();
  const bool mla = model.attention == AttentionType::kMla;
  const bool has_dense_layers = model.NumMoeLayers() < model.num_layers;
  if (f.recompute) {
    axes.recompute.push_back({"fixed", *f.recompute});
  } else if (offload_layers > 0) {
    axes.recompute.push_back({"none", Recompute{}});
  } else {
    uint32_t light = kRecomputeLayerNorm;
    if (moe) light |= kRecomputeMoeAct;
    if (mla) light |= kRecomputeMlaUpProj;
    const uint32_t attn = light | kRecomputeCoreAttn;
    uint32_t mlp = attn;
    if (has_dense_layers) mlp |= kRecomputeMlp;
    if (moe) mlp |= kRecomputeMoe;
    if (moe && model.num_shared_experts > 0) mlp |= kRecomputeSharedExperts;
    axes.recompute.push_back({"none", Recompute{}});
    axes.recompute.push_back(
        {"selective_light", Recompute{RecomputeMode::kSelective, light, 0}});
    axes.recompute.push_back(
        {"selective_attn", Recompute{RecomputeMode::kSelective, attn, 0}});
    axes.recompute.push_back(
        {"selective_mlp", Recompute{RecomputeMode::kSelective, mlp, 0}});
    axes.recompute.push_back({"full", Recompute{RecomputeMode::kFull, 0, 0}});
  }

  // Offload, least first.
  if (f.offload_modules) {
    axes.offload.push_back({"fixed", *f.offload_modules});
  } else if (offload_layers > 0) {
    axes.offload.push_back({"none", 0});
  } else {
    const uint32_t attn_all =
        kOffloadAttnNorm | kOffloadCoreAttn | kOffloadAttnProj | kOffloadMlpNorm;
    axes.offload.push_back({"none", 0});
    if (moe) {
      axes.offload.push_back({"moe", kOffloadExpertFc1 | kOffloadMoeAct});
      axes.offload.push_back(
          {"all", attn_all | kOffloadExpertFc1 | kOffloadMoeAct});
    } else {
      axes.offload.push_back({"attn", kOffloadCoreAttn | kOffloadAttnProj});
      axes.offload.push_back({"all", attn_all});
    }
  }

  // Dispatcher (MoE only; used at ep > 1).
  std::vector<Dispatcher> dispatchers =
      c.dispatchers.empty()
          ? std::vector<Dispatcher>{Dispatcher::kFusedDedup,
                                    Dispatcher::kAllToAll}
          : c.dispatchers;
  if (f.dispatcher) {
    if (!c.dispatchers.empty() &&
        std::find(dispatchers.begin(), dispatchers.end(), *f.dispatcher) ==
            dispatchers.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fix dispatcher=", Sv(DispatcherName(*f.dispatcher)),
          " is not among the allowed dispatchers"));
    }
    dispatchers = {*f.dispatcher};
  }
  for (Dispatcher d : dispatchers) {
    if (std::find(axes.dispatchers.begin(), axes.dispatchers.end(), d) ==
        axes.dispatchers.end()) {
      axes.dispatchers.push_back(d);
    }
  }
  // Fastest first: de-duplicated dispatch never moves more bytes.
  std::stable_sort(axes.dispatchers.begin(), axes.dispatchers.end(),
                   [](Dispatcher a, Dispatcher b) {
                     return a == Dispatcher::kFusedDedup &&
                            b != Dispatcher::kFusedDedup;
                   });

  axes.grouped_gemm = f.grouped_gemm ? std::vector<bool>{*f.grouped_gemm}
                                     : std::vector<bool>{true, false};

  // Overlap levels (the EP, DP and PP overlaps and the streams) and, apart,
  // the TP overlap: Transformer Engine's userbuffers split the GEMMs they
  // overlap (TpOverlapChunkingSeconds), which can cost more than the
  // collectives they hide, so the TP overlap is its own axis with no
  // fastest-first order (the search bounds it value by value on TP layouts).
  Overlap none;
  none.tp_comm = none.ep_comm = none.dp_comm = none.pp_comm = false;
  none.num_comm_streams = 1;
  auto all_on = [](int streams) {
    Overlap o;
    o.num_comm_streams = streams;
    return o;
  };
  if (f.overlap_exact) {
    Overlap o = *f.overlap_exact;
    o.num_comm_streams = f.comm_streams.value_or(1);
    axes.overlap.push_back({"fixed", o});
    axes.tp_overlap = {o.tp_comm};
  } else if (f.overlap.has_value() && !*f.overlap) {
    axes.overlap.push_back({"none", none});
    axes.tp_overlap = {false};
  } else {
    if (f.comm_streams) {
      axes.overlap.push_back({"all", all_on(*f.comm_streams)});
    } else {
      axes.overlap.push_back({"all_1_stream", all_on(1)});
      axes.overlap.push_back({"all_2_streams", all_on(2)});
    }
    if (!f.overlap.has_value()) {
      if (model.num_routed_experts > 0) {
        // The EP A2A overlap alone off: its schedule's host work
        // (StackConstants::ep_overlap_schedule_host_ops) can cost an eager
        // or scoped-graph step more than it hides, and the DP / PP overlaps
        // should not go with it. One level (the first "all" level's
        // streams) makes the space a third larger, not two thirds.
        Overlap o = all_on(f.comm_streams.value_or(1));
        o.ep_comm = false;
        axes.overlap.push_back({"all_but_ep", o});
      }
      axes.overlap.push_back({"none", none});
      axes.tp_overlap = {true, false};
    } else {
      axes.tp_overlap = {true};
    }
  }

  axes.cuda_graphs = f.cuda_graphs       ? std::vector<bool>{*f.cuda_graphs}
                     : offload_layers > 0 ? std::vector<bool>{false}
                                          : std::vector<bool>{true, false};
  return axes;
}

std::string_view KnobAxisName(KnobAxis axis) {
  switch (axis) {
    case KnobAxis::kPrecision:
      return "precision";
    case KnobAxis::kRecompute:
      return "recompute";
    case KnobAxis::kOffload:
      return "offload";
    case KnobAxis::kDispatcher:
      return "dispatcher";
    case KnobAxis::kGroupedGemm:
      return "grouped_gemm";
    case KnobAxis::kOverlap:
      return "overlap";
    case KnobAxis::kTpOverlap:
      return "tp_overlap";
    case KnobAxis::kCudaGraphs:
      return "cuda_graphs";
  }
  return "unknown";
}

int AxisSize(const KnobAxes& axes, const ModelSpec& model, bool expert_parallel,
             KnobAxis axis) {
  switch (axis) {
    case KnobAxis::kPrecision:
      return static_cast<int>(axes.precisions.size());
    case KnobAxis::kRecompute:
      return static_cast<int>(axes.recompute.size());
    case KnobAxis::kOffload:
      return static_cast<int>(axes.offload.size());
    case KnobAxis::kDispatcher:
      return model.IsMoe() && expert_parallel
                 ? static_cast<int>(axes.dispatchers.size())
                 : 1;
    case KnobAxis::kGroupedGemm:
      return model.IsMoe() ? static_cast<int>(axes.grouped_gemm.size()) : 1;
    case KnobAxis::kOverlap:
      return static_cast<int>(axes.overlap.size());
    case KnobAxis::kTpOverlap:
      return static_cast<int>(axes.tp_overlap.size());
    case KnobAxis::kCudaGraphs:
      return static_cast<int>(axes.cuda_graphs.size());
  }
  return 1;
}

Knobs WithAxisValue(const KnobAxes& axes, Knobs k, KnobAxis axis, int i) {
  const size_t u = static_cast<size_t>(i);
  switch (axis) {
    case KnobAxis::kPrecision:
      if (u < axes.precisions.size()) k.precision = axes.precisions[u];
      break;
    case KnobAxis::kRecompute:
      if (u < axes.recompute.size()) k.recompute = axes.recompute[u].recompute;
      break;
    case KnobAxis::kOffload:
      if (u < axes.offload.size()) {
        k.offload_modules = axes.offload[u].modules;
        k.offload_activations = k.offload_modules != 0;
      }
      break;
    case KnobAxis::kDispatcher:
      if (u < axes.dispatchers.size()) k.dispatcher = axes.dispatchers[u];
      break;
    case KnobAxis::kGroupedGemm:
      if (u < axes.grouped_gemm.size()) k.grouped_gemm = axes.grouped_gemm[u];
      break;
    case KnobAxis::kOverlap:
      // The level sets every overlap but TP's (its own axis).
      if (u < axes.overlap.size()) {
        const bool tp = k.overlap.tp_comm;
        k.overlap = axes.overlap[u].overlap;
        k.overlap.tp_comm = tp;
      }
      break;
    case KnobAxis::kTpOverlap:
      if (u < axes.tp_overlap.size()) k.overlap.tp_comm = axes.tp_overlap[u];
      break;
    case KnobAxis::kCudaGraphs:
      if (u < axes.cuda_graphs.size()) k.cuda_graphs = axes.cuda_graphs[u];
      break;
  }
  return k;
}

int OverlapChainPredecessor(const KnobAxes& axes, int value) {
  if (value < 0 || value >= static_cast<int>(axes.overlap.size())) return -1;
  auto index_of = [&](std::string_view name) {
    for (size_t i = 0; i < axes.overlap.size(); ++i) {
      if (axes.overlap[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  const std::string_view name = axes.overlap[static_cast<size_t>(value)].name;
  if (name == "all_2_streams") return index_of("all_1_stream");
  if (name == "none") {
    if (const int i = index_of("all_but_ep"); i >= 0) return i;
    if (const int i = index_of("all_1_stream"); i >= 0) return i;
    return index_of("all");
  }
  return -1;
}

KnobSet BuildKnobSet(const KnobAxes& axes, const ModelSpec& model,
                     bool expert_parallel, uint32_t group_axes,
                     uint32_t neutral_axes) {
  group_axes |= AxisBit(KnobAxis::kPrecision);
  constexpr KnobAxis kSubgroupAxes[] = {KnobAxis::kRecompute, KnobAxis::kOffload};
  constexpr KnobAxis kMemberAxes[] = {KnobAxis::kDispatcher, KnobAxis::kGroupedGemm,
                                      KnobAxis::kOverlap, KnobAxis::kTpOverlap,
                                      KnobAxis::kCudaGraphs};
  // Axes from outermost to innermost, and where each level starts.
  std::vector<KnobAxis> order;
  for (int a = 0; a < kNumKnobAxes; ++a) {
    if (group_axes & (1u << a)) order.push_back(static_cast<KnobAxis>(a));
  }
  const size_t group_level = order.size();
  for (KnobAxis a : kSubgroupAxes) {
    if (!(group_axes & AxisBit(a))) order.push_back(a);
  }
  const size_t subgroup_level = order.size();
  for (KnobAxis a : kMemberAxes) {
    if (!(group_axes & AxisBit(a)) && !(neutral_axes & AxisBit(a))) {
      order.push_back(a);
    }
  }
  const size_t block_level = order.size();
  for (KnobAxis a : kMemberAxes) {
    if (!(group_axes & AxisBit(a)) && (neutral_axes & AxisBit(a))) {
      order.push_back(a);
    }
  }
  std::vector<int> sizes;
  for (KnobAxis a : order) {
    sizes.push_back(AxisSize(axes, model, expert_parallel, a));
  }
  auto product_from = [&](size_t level) {
    int n = 1;
    for (size_t i = level; i < sizes.size(); ++i) n *= sizes[i];
    return n;
  };
  KnobSet set;
  set.group_axes.assign(order.begin(), order.begin() + static_cast<long>(group_level));
  set.group_axis_sizes.assign(sizes.begin(), sizes.begin() + static_cast<long>(group_level));
  set.group_size = product_from(group_level);
  set.subgroup_size = product_from(subgroup_level);
  set.block_size = product_from(block_level);
  const size_t total = static_cast<size_t>(product_from(0));
  // Every axis's value 0 first; unused axes (size 1 collapsed) keep value 0.
  Knobs base;
  base.offload_layers = axes.offload_layers;
  for (int a = 0; a < kNumKnobAxes; ++a) {
    base = WithAxisValue(axes, base, static_cast<KnobAxis>(a), 0);
  }
  set.combos.reserve(total);
  std::vector<int> digit(order.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    Knobs k = base;
    for (size_t i = 0; i < order.size(); ++i) {
      k = WithAxisValue(axes, k, order[i], digit[i]);
    }
    set.combos.push_back(k);
    for (size_t i = order.size(); i-- > 0;) {  // innermost axis fastest
      if (++digit[i] < sizes[i]) break;
      digit[i] = 0;
    }
  }
  return set;
}

namespace {
// Calls check(p) for every layout candidate EnumerateLayouts considers, in
// its order (valid or not).
template <typename Check>
void ForEachLayoutCandidate(const ModelSpec& model, const ClusterSpec& cluster,
                            const TrainingShape& shape, const FixedKnobs& f,
                            bool search_shard_params, Check&& check) {
  const int domain = std::max(1, cluster.nvlink_domain_gpus);
  const std::vector<int> experts =
      model.IsMoe() ? Divisors(model.num_routed_experts) : std::vector<int>{1};
  // An axis fixed by the user takes exactly that value, even outside the
  // space limits or the divisors of the GPU count (CheckLayout then says why
  // it cannot run); unfixed axes take divisors within the limits.
  auto values = [](const std::optional<int>& fixed, std::vector<int> free) {
    return fixed ? std::vector<int>{*fixed} : free;
  };
  std::vector<int> tps;
  for (int tp : Divisors(shape.gpus)) {
    if (tp <= domain) tps.push_back(tp);
  }
  for (int tp : values(f.tp, tps)) {
    if (tp <= 0 || shape.gpus % tp != 0) {
      ParallelConfig p;
      p.tp = tp;
      check(p);
      continue;
    }
    std::vector<int> cps;
    for (int cp : Divisors(shape.gpus / tp)) {
      if (cp == 1 || shape.seq_len / cp >= kMinTokensPerCpRank) cps.push_back(cp);
    }
    for (int cp : values(f.cp, cps)) {
      if (cp <= 0 || (shape.gpus / tp) % cp != 0) {
        ParallelConfig p;
        p.tp = tp;
        p.cp = cp;
        check(p);
        continue;
      }
      std::vector<int> pps;
      for (int pp : Divisors(shape.gpus / tp / cp)) {
        if (pp <= model.num_layers) pps.push_back(pp);
      }
      // Layer-wise offload runs without pipelining (BuildKnobAxes).
      if (f.offload_layers.value_or(0) > 0) pps = {1};
      for (int pp : values(f.pp, pps)) {
        if (pp <= 0 || (shape.gpus / tp / cp) % pp != 0) {
          ParallelConfig p;
          p.tp = tp;
          p.cp = cp;
          p.pp = pp;
          check(p);
          continue;
        }
        const int dp = shape.gpus / tp / cp / pp;
        if (f.dp && *f.dp != dp) continue;  // another (tp, cp, pp) gives it
        const int expert_group = tp * cp * dp;
        std::vector<int> eps;
        for (int ep : experts) {
          if (expert_group % ep == 0) eps.push_back(ep);
        }
        for (int ep : values(f.ep, eps)) {
          std::vector<int> etps;
          if (ep > 0 && expert_group % ep == 0) {
            for (int etp : Divisors(expert_group / ep)) {
              if (etp <= domain && (model.IsMoe() || etp == 1)) {
                etps.push_back(etp);
              }
            }
          } else {
            etps = {1};
          }
          for (int etp : values(f.etp, etps)) {
            const int max_vp =
                pp == 1 ? 1
                        : std::max(1, std::min(kMaxVirtualStages,
                                               model.num_layers / pp));
            std::vector<int> vps;
            for (int vp = 1; vp <= max_vp; ++vp) vps.push_back(vp);
            std::vector<int> mbss;
            if (shape.global_batch % dp != 0) {
              mbss = {1};  // rejected by CheckLayout as kBatchNotDivisible
            } else {
              for (int mbs : Divisors(shape.global_batch / dp)) {
                if (mbs <= kMaxMicroBatch) mbss.push_back(mbs);
              }
            }
            for (int vp : values(f.vp, vps)) {
              for (int mbs : values(f.mbs, mbss)) {
                ParallelConfig p;
                p.tp = tp;
                p.cp = cp;
                p.pp = pp;
                p.dp = dp;
                p.ep = ep;
                p.etp = etp;
                p.vp = vp;
                p.mbs = mbs;
                ApplyLayoutPins(f, &p);
                check(p);
                if (search_shard_params && !f.shard_params) {
                  p.shard_params = true;
                  check(p);
                }
              }
            }
          }
        }
      }
    }
  }
}
}  // namespace

std::vector<ParallelConfig> EnumerateLayouts(
    const ModelSpec& model, const ClusterSpec& cluster,
    const TrainingShape& shape, const FixedKnobs& f,
    const std::function<void(const LayoutRejection&)>& on_reject,
    bool search_shard_params) {
  std::vector<ParallelConfig> out;
  if (shape.gpus <= 0 || shape.global_batch <= 0 || shape.seq_len <= 0) {
    return out;
  }
  // Counted first so that the list is allocated once (it runs to ~10^5
  // layouts, and growing it copied each several times).
  size_t candidates = 0;
  ForEachLayoutCandidate(model, cluster, shape, f, search_shard_params,
                         [&](const ParallelConfig&) { ++candidates; });
  out.reserve(candidates);
  ForEachLayoutCandidate(model, cluster, shape, f, search_shard_params,
                         [&](const ParallelConfig& p) {
                           const Infeasibility reason = CheckLayout(model, shape, p);
                           if (reason == Infeasibility::kNone) {
                             out.push_back(p);
                           } else if (on_reject) {
                             on_reject(LayoutRejection{reason, p});
                           }
                         });
  return out;
}

WeightsFloorParams WeightsFloorParamsOf(const ModelSpec& model) {
  WeightsFloorParams w;
  double expert_incl_mtp = 0;
  if (model.IsMoe()) {
    const double per_layer = model.ExpertParams() * model.num_routed_experts;
    const int moe_layers = model.NumMoeLayers();
    w.expert = per_layer * moe_layers;
    expert_incl_mtp = per_layer * (moe_layers + model.mtp_layers);
  }
  // MTP experts are left out of both parts: a lower bound either way.
  w.non_expert = std::max(0.0, model.TotalParams() - expert_incl_mtp);
  return w;
}

double WeightsFloorBytes(const WeightsFloorParams& params, const ParallelConfig& layout,
                         bool lora) {
  double dense_div = layout.tp;
  double expert_div = double(layout.ep) * layout.etp;
  if (layout.shard_params) {
    const double dp = std::max(1, layout.dp);
    dense_div *= dp * layout.cp;                                    // dp x cp
    expert_div = double(layout.tp) * layout.cp * dp;  // ep x etp x expert dp
  }
  const double per_gpu =
      (params.non_expert / dense_div + params.expert / expert_div) / layout.pp;
  constexpr double kWeightBytes = 2.0;  // BF16
  constexpr double kGradBytes = 2.0;    // BF16 main gradients at the least
  return per_gpu * (kWeightBytes + (lora ? 0.0 : kGradBytes));
}

double WeightsFloorBytes(const ModelSpec& model, const ParallelConfig& layout,
                         bool lora) {
  return WeightsFloorBytes(WeightsFloorParamsOf(model), layout, lora);
}

}  // namespace moetune::planner
