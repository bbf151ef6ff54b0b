// Predicts every row of a published-runs file (shared/validation/runs.json)
// with its published configuration and prints predicted vs measured
// tokens/s/GPU, the error of each row and the MAPE; then the groups of rows
// with identical inputs whose measurements no single prediction can fit
// within 25% (and 10%), which bound what any model can reach; then the
// cross-validated errors (below).
//
//   bazel run -c opt //tests:validate -- --runs /work/shared/validation/runs.json
//       [--stack megatron-core-2026] [--verbose] [--row ID] [--set key=value,...]
//       [--cv=false] [--heldout_runs tests/data/bridge_tables_heldout.json] [--check]
//
// --check (//tests:accuracy_criteria_test runs it): exit 1 when a done
// criterion of issue 16 that the model meets on these rows breaks
// (CriteriaCheck below).
//
// --heldout_runs: rows in the same schema that no constant is set against
// (tests/data/bridge_tables_heldout.json: the Megatron-Bridge table rows
// runs.json does not hold, tools/extract_bridge_tables.py), priced the same
// way and through `moetune predict`; a file that repeats a runs.json row is
// refused. What they add is the part of the design's fit the
// cross-validation cannot measure (the last paragraph below).
//
// Each row is predicted with the software generation of its container
// (StackGenerationForContainer; rows without one get the oldest, 26.02),
// through planner/request.h: a PlanRequest with every knob pinned (the
// published layout and recompute, the stack's defaults for the rest,
// normalized by the Megatron-Core rules) and PredictPinned, the path of
// `moetune predict` -- the validator predicts what a user gets. The plan
// PredictPinned returns (explicit pipeline split, normalized knobs) is what
// the cross-validation then prices through the fast path; a difference
// between the two paths is printed as REQUEST PATH DIFFERS. (--set
// sensitivity runs and the knob ladders, whose software features no
// request carries, use the step model directly.)
// Row fields used: model_id, cluster_preset, num_gpus, seq_len,
// global_batch, micro_batch, tp, pp, vp (null = 1), ep (null = 1), etp
// (null = 1), cp, dp, precision_id, recompute, offload, id (a "-LoRA-" or
// "-SFT-" run is fine-tuning). Unknown recompute: what the stack does by
// default -- no recompute unless the layout does not fit with the headroom
// the published recipes keep (kRecipeMemoryHeadroom), then the lightest
// selective set that fits, then full recompute. That rule is the headline;
// --recompute_from=recipe uses what each row's recipe sets instead
// (kRecipeRecompute, tests/internal/bridge_recipes.h), which differs on 46 of the 88 rows.
//
// Which constants are set from data, and how. Every constant of the model
// is a named prior with a public source (cost_model.cc, step_model.cc),
// except the few listed in FitParameters(): those were chosen by looking at
// published runs. They are set by one rule (tests/internal/
// cross_validation.h: a grid over each constant's physically plausible
// range, coordinate descent to the least MAPE over the training rows,
// ties keep the prior), and the shipped defaults are that rule's choice on
// all megatron-core-2026 rows. The headline figures are cross-validated:
// leave one source (table section) / container / GPU out, refit the
// constants on the rest by the same rule, predict the held-out rows (and,
// printed beside them, leave one model out).
// What cross-validation cannot undo: the model's structure and its priors
// were written with these rows in view; the held-out figures measure how
// much the fitted constants overfit, not how much the design does.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "planner/cost_model.h"
#include "planner/framework_rules.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction_interval.h"
#include "planner/request.h"
#include "planner/run_defaults.h"
#include "planner/search_space.h"
#include "planner/software_stack.h"
#include "planner/step_model.h"
#include "planner/training_config.h"
#include "tests/internal/bridge_recipes.h"
#include "tests/internal/contradictions.h"
#include "tests/internal/cross_validation.h"
#include "tests/internal/deep_pipelines.h"
#include "tests/internal/intervals.h"
#include "tests/internal/knob_ladder.h"
#include "tests/internal/generation_pairs.h"
#include "tests/internal/layout_ranking.h"
#include "tests/internal/recipe_checks.h"
#include "tests/internal/recipe_splits.h"
#include "tests/internal/scale_anchors.h"

ABSL_FLAG(std::string, runs, "", "path to runs.json");
ABSL_FLAG(std::string, stack, "megatron-core-2026",
          "rows of this stack only ('all' for every row)");
ABSL_FLAG(bool, verbose, false, "print each row's breakdown");
ABSL_FLAG(std::string, set, "",
          "sensitivity study: override global constants, e.g. "
          "ep_overlap_fraction=0.5,host_op_us=20,gemm_efficiency_scale=0.9, or "
          "moe_host_form=1 (a rejected MoE host form, StackConstants::MoeHostForm) "
          "(keys: see ParseOverrides); a constant set here is pinned (not "
          "refitted by the cross-validation)");
ABSL_FLAG(std::string, row, "",
          "only rows whose id contains this; prints every recompute option's "
          "memory");
ABSL_FLAG(bool, cv, true, "run the cross-validation (a few seconds)");
ABSL_FLAG(std::string, recompute_from, "rule",
          "where a row's unpublished recompute comes from: 'rule' (the lightest set "
          "that fits within kRecipeMemoryHeadroom, the headline) or 'recipe' (what "
          "the row's Megatron-Bridge recipe sets, kRecipeRecompute; a second "
          "scheme, reported beside the headline)");
ABSL_FLAG(std::string, graphs_from, "stack",
          "which CUDA graphs a row ran: 'stack' (the headline: graphs on, the "
          "generation's scope, full iteration for 26.06+ MXFP8 MoE rows) or 'recipe' "
          "(what the row's Megatron-Bridge preset sets, RecipeGraphsFor; a second "
          "scheme, reported beside the headline)");
ABSL_FLAG(std::string, heldout_runs, "",
          "rows in runs.json's schema never used to set a constant (e.g. "
          "tests/data/bridge_tables_heldout.json: the Megatron-Bridge table rows "
          "runs.json does not hold); priced by the headline's scheme and through "
          "`moetune predict`, and printed after the recipe checks");
ABSL_FLAG(bool, check, false,
          "exit 1 when a done criterion of issue 16 that the model meets on the public "
          "rows is broken (CriteriaCheck below); needs --cv and no --set");

namespace mp = moetune::planner;
namespace mt = moetune::tests;
using nlohmann::json;

namespace {

// A numeric field, the fallback when absent or null; nullopt when present
// but not a number (such rows are skipped with the field named).
std::optional<int> IntOr(const json& row, const char* key, int fallback) {
  if (!row.contains(key) || row.at(key).is_null()) return fallback;
  if (!row.at(key).is_number()) return std::nullopt;
  return row.at(key).get<int>();
}

std::string StrOr(const json& row, const char* key, const std::string& fallback) {
  if (!row.contains(key) || !row.at(key).is_string()) return fallback;
  return row.at(key).get<std::string>();
}

std::optional<double> NumberOrNone(const json& row, const char* key) {
  if (!row.contains(key) || !row.at(key).is_number()) return std::nullopt;
  return row.at(key).get<double>();
}

// The stack's defaults for the knobs a row does not publish: what a run does
// with those flags unset (planner/run_defaults.h RunDefaultKnobs: grouped
// GEMM, DeepEP/HybridEP dispatch, TP/DP/PP overlap, CUDA graphs, EP A2A
// overlap off); the 2026 rows' dispatcher and EP A2A overlap as their
// recipes ran them: tests/internal/bridge_recipes.h RecipeMoeCommFor).
mp::Knobs StackKnobs(mp::Precision precision) { return mp::RunDefaultKnobs(precision); }

// The Megatron-Bridge recipes' knobs the rows ran (tests/internal/
// bridge_recipes.h, each fact with its source).
using mt::RecipeGraphs;
using mt::RecipeGraphsFor;
using mt::RecipeKnobs;
using mt::RecipeOffloadLayersFor;
using mt::RecipeOptimizerStatesFor;
using mt::RecipeRecomputeFact;
using mt::RecipeRecomputeFor;
using mp::RecomputeLadder;

// The recompute a held-out row's own release-tag preset sets
// (preset_audit.own_tag_preset_knobs.recompute_modules, written by
// tools/audit_bridge_presets.py): [] recomputes nothing, a list is that
// selective set (Megatron-Bridge's overrides.py applies it as
// recompute_granularity "selective"). nullopt where the row has no matched
// preset or the preset leaves recompute to its base recipe (null): then
// kRecipeRecompute decides. An unknown module name is an error naming it.
absl::StatusOr<std::optional<mp::Recompute>> AnnotatedPresetRecompute(const json& row) {
  if (!row.contains("preset_audit") || !row["preset_audit"].is_object()) return std::nullopt;
  const json& audit = row["preset_audit"];
  if (!audit.contains("own_tag_preset_knobs") || !audit["own_tag_preset_knobs"].is_object()) {
    return std::nullopt;
  }
  const json& knobs = audit["own_tag_preset_knobs"];
  if (!knobs.contains("recompute_modules") || knobs["recompute_modules"].is_null()) {
    return std::nullopt;
  }
  if (!knobs["recompute_modules"].is_array()) {
    return absl::InvalidArgumentError(
        "preset_audit.own_tag_preset_knobs.recompute_modules is not a list");
  }
  mp::Recompute r;
  if (knobs["recompute_modules"].empty()) return r;
  std::vector<std::string> names;
  for (const json& n : knobs["recompute_modules"]) {
    if (!n.is_string()) {
      return absl::InvalidArgumentError(
          "preset_audit.own_tag_preset_knobs.recompute_modules holds a non-string");
    }
    names.push_back(n.get<std::string>());
  }
  absl::StatusOr<uint32_t> bits = mp::ParseRecomputeModules(absl::StrJoin(names, ","));
  if (!bits.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "preset_audit.own_tag_preset_knobs.recompute_modules: ", bits.status().message()));
  }
  r.mode = mp::RecomputeMode::kSelective;
  r.modules = *bits;
  return r;
}

absl::StatusOr<mp::Recompute> PublishedRecompute(const json& row) {
  if (!row.contains("recompute") || row.at("recompute").is_null()) {
    return absl::NotFoundError("unpublished");
  }
  const std::string text = row.at("recompute").is_string()
                               ? row.at("recompute").get<std::string>()
                               : row.at("recompute").dump();
  mp::Recompute r;
  if (text == "none" || text == "false" || text == "None") return r;
  if (text == "full" || text == "true") {
    r.mode = mp::RecomputeMode::kFull;
    return r;
  }
  // "selective", a module list, or the tables' prose ("selective: mlp
  // (dense layers), MLA up_proj", "RMSNorm and MLA up-projection recomputed
  // in backward"): the module names the text mentions. Before this, every
  // such row fell back to core_attn alone (the list did not parse).
  r.mode = mp::RecomputeMode::kSelective;
  absl::StatusOr<uint32_t> modules = mp::ParseRecomputeModules(text);
  if (modules.ok()) {
    r.modules = *modules;
    return r;
  }
  const std::string lower = absl::AsciiStrToLower(text);
  uint32_t bits = 0;
  if (absl::StrContains(lower, "core_attn")) bits |= mp::kRecomputeCoreAttn;
  if (absl::StrContains(lower, "layernorm") || absl::StrContains(lower, "rmsnorm")) {
    bits |= mp::kRecomputeLayerNorm;
  }
  if (absl::StrContains(lower, "moe_act")) bits |= mp::kRecomputeMoeAct;
  if (absl::StrContains(lower, "mla")) bits |= mp::kRecomputeMlaUpProj;
  if (absl::StrContains(lower, "shared")) bits |= mp::kRecomputeSharedExperts;
  if (absl::StrContains(lower, "mlp")) bits |= mp::kRecomputeMlp;
  // "moe" as a module of its own, not the prefix of moe_act.
  for (size_t at = lower.find("moe"); at != std::string::npos; at = lower.find("moe", at + 3)) {
    const bool word_end = at + 3 >= lower.size() ||
                          (!std::isalnum(static_cast<unsigned char>(lower[at + 3])) &&
                           lower[at + 3] != '_');
    if (word_end) bits |= mp::kRecomputeMoe;
  }
  r.modules = bits != 0 ? bits : mp::kRecomputeCoreAttn;
  return r;
}

// The published activation offload ("fine-grained activation offloading:
// expert_fc1, moe_act"): the module list after the colon; nullopt when
// unpublished or unparseable.
std::optional<uint32_t> PublishedOffload(const json& row) {
  if (!row.contains("offload") || !row.at("offload").is_string()) return std::nullopt;
  std::string text = row.at("offload").get<std::string>();
  const size_t colon = text.find(':');
  if (colon != std::string::npos) text = text.substr(colon + 1);
  absl::StatusOr<uint32_t> modules = mp::ParseOffloadModules(text);
  if (!modules.ok() || *modules == 0) return std::nullopt;
  return *modules;
}

// Published recipes are tuned to leave room for allocator spikes and
// fragmentation the memory model does not see: a layout counts as fitting
// when the predicted peak is within 84% of the memory nvidia-smi reports
// (kRunDefaultMemoryHeadroom; what `moetune predict`
// assumes of a run too).
constexpr double kRecipeMemoryHeadroom = mp::kRunDefaultMemoryHeadroom;

// --set overrides for sensitivity studies (not used for the reported
// figures). Prior constants are scaled for every GPU generation alike; stack
// constants are set on every row's generation alike.
struct Overrides {
  std::vector<std::pair<std::string, double>> stack;  // SetStackConstant
  std::vector<std::pair<std::string, double>> fitted;  // SetFittedConstant
  double attention_efficiency_scale = 1.0;
  double dispatch_efficiency_scale = 1.0;
  double hbm_efficiency_scale = 1.0;
  double comm_sm_fraction_scale = 1.0;
  double dispatch_scaleout_efficiency = 0;  // 0: keep the prior's
};

// Sets one StackConstants field by name; false for an unknown key.
bool SetStackConstant(const std::string& key, double v, mp::StackConstants* k) {
  if (key == "ep_overlap_fraction") k->ep_overlap_fraction = v;
  else if (key == "ep_overlap_nvlink_fraction") k->ep_overlap_nvlink_fraction = v;
  else if (key == "ep_overlap_needs_interleaving") k->ep_overlap_needs_interleaving = v != 0;
  else if (key == "tp_overlap_fraction") k->tp_overlap_fraction = v;
  else if (key == "moe_host_ops_forward") k->moe_host_ops_forward = v;
  else if (key == "grouped_gemm_host_ops_per_expert") k->grouped_gemm_host_ops_per_expert = v;
  else if (key == "host_op_us") k->host_op_s = v * 1e-6;
  else if (key == "ep_overlap_schedule_host_ops") k->ep_overlap_schedule_host_ops = v;
  else if (key == "step_host_ms") k->step_host_s = v * 1e-3;
  else if (key == "moe_host_hidden_by_ep_overlap") k->moe_host_hidden_by_ep_overlap = v != 0;
  else if (key == "moe_host_form")  // 0 additive (shipped), 1-3 the rejected overlaps;
                                     // ParseOverrides refuses other values
    k->moe_host_form = static_cast<mp::StackConstants::MoeHostForm>(int(v));
  else if (key == "lora_adapter_hbm_passes") k->lora_adapter_hbm_passes = v;
  else if (key == "grad_buffer_bytes_per_param") k->grad_buffer_bytes_per_param = v;
  else if (key == "unfused_sink_layers")  // 0 none, 1 sliding window, 2 all
    k->unfused_sink_layers = static_cast<mp::StackConstants::UnfusedSinkLayers>(int(v));
  else return false;
  return true;
}

// ---------------------------------------------------------------------------
// --check: issue 16's done criteria on the public rows, each recorded where
// validate computes it. Enforced are the ones the model meets today; the
// per-step sign of the DeepSeek-V3 ladder (11 of 12: step 11, TE's host
// micro-optimisations, publishes no per-op saving to price) is printed, not
// enforced. A failed criterion is printed as "CHECK FAILED" with its figure.
struct CriteriaCheck {
  int checked = 0;
  std::vector<std::string> failed;
  void Require(bool ok, const std::string& what) {
    ++checked;
    if (ok) return;
    failed.push_back(what);
    std::printf("CHECK FAILED: %s\n", what.c_str());
  }
};
CriteriaCheck& Criteria() {
  static CriteriaCheck c;
  return c;
}
// Done-criterion thresholds (issue 16).
constexpr double kMaxCvMape = 0.10;
constexpr double kMinLayoutOrder = 0.85;
constexpr double kMinCoverage = 0.70;
constexpr double kMaxCoverage = 0.90;
constexpr double kMaxLadderCumulativeError = 0.10;
// Issue 16's targets for its hidden sets, checked on the public held-out
// rows of --heldout_runs (through `moetune predict`, as the hidden sets are).
constexpr double kMaxHeldOutMape = 0.12;
constexpr double kMinHeldOutLayoutOrder = 0.80;

// ---------------------------------------------------------------------------
// The constants set from data (see the file comment). Each is a global
// constant with a physical meaning; the grid spans its plausible range.
struct FittedConstants {
  mp::DataSetPriors priors;
  double ep_overlap_fraction = 0;
  double ep_overlap_nvlink_fraction = 0;
  double host_op_s = 0;
  int unfused_sink_layers = 0;
  double pp_stage_visit_s = 0;
  double step_host_s = 0;
};

enum FitIndex : int {
  kFitUltraClock,
  kFitDispatchCeiling,
  kFitGemmScale,
  kFitEpOverlap,
  kFitEpOverlapNvlink,
  kFitHostOp,
  kFitUnfusedSinks,
  kFitPpVisit,
  kFitStepHost,
  kFitUltraNvfp4,
  kNumFit
};

std::vector<double> Grid(double lo, double hi, double step) {
  std::vector<double> g;
  for (double v = lo; v <= hi + 1e-9; v += step) g.push_back(std::round(v * 1e6) / 1e6);
  return g;
}

// Names, priors (the shipped defaults) and grids, in FitIndex order.
std::vector<mt::FitParameter> FitParameters() {
  const mp::DataSetPriors d;
  const mp::StackConstants s;
  std::vector<mt::FitParameter> p(kNumFit);
  // GB300/B300 over GB200/B200 at equal nominal peaks: 1.0 (none) to 1.24.
  p[kFitUltraClock] = {"blackwell_ultra_clock_gain", d.blackwell_ultra_clock_gain,
                       Grid(1.0, 1.24, 0.02)};
  // Blackwell inter-node EP dispatch ceiling, GB/s per GPU: 15 to 60.
  p[kFitDispatchCeiling] = {"dispatch_scaleout_max_gbs",
                            d.blackwell_dispatch_scaleout_max_bytes_per_sec / 1e9,
                            Grid(15, 60, 2.5)};
  // Every GEMM efficiency x 0.90 .. 1.10 (the public ranges' width).
  p[kFitGemmScale] = {"gemm_efficiency_scale", d.gemm_efficiency_scale, Grid(0.9, 1.1, 0.02)};
  // Fraction of EP dispatch/combine the 1F1B A2A overlap hides: 0 .. 1.
  p[kFitEpOverlap] = {"ep_overlap_fraction", s.ep_overlap_fraction, Grid(0, 1, 0.1)};
  // The same for the SM-issued NVLink part of an exchange: 0 .. 1.
  p[kFitEpOverlapNvlink] = {"ep_overlap_nvlink_fraction", s.ep_overlap_nvlink_fraction,
                            Grid(0, 1, 0.1)};
  // Host time per PyTorch/TE op of the MoE layer, us: 10 .. 40.
  p[kFitHostOp] = {"host_op_us", s.host_op_s * 1e6, Grid(10, 40, 2.5)};
  // Which sink-attention layers run unfused: 0 none, 1 sliding, 2 all.
  p[kFitUnfusedSinks] = {"unfused_sink_layers", double(int(s.unfused_sink_layers)),
                         {0, 1, 2}};
  // Exposed P2P handshake per virtual-stage visit, us: 0 .. 400.
  p[kFitPpVisit] = {"pp_stage_visit_us", s.pp_stage_visit_s * 1e6, Grid(0, 400, 25)};
  // Host time per optimizer step the GPU timeline does not hide, ms: 0 .. 400.
  p[kFitStepHost] = {"step_host_ms", s.step_host_s * 1e3, Grid(0, 400, 25)};
  // Share of its nominal NVFP4 peak Blackwell Ultra sustains: 0.70 .. 1.00.
  p[kFitUltraNvfp4] = {"blackwell_ultra_nvfp4_sustained", d.blackwell_ultra_nvfp4_sustained,
                       Grid(0.7, 1.0, 0.025)};
  return p;
}

FittedConstants FromValues(const std::vector<double>& v) {
  FittedConstants f;
  f.priors.blackwell_ultra_clock_gain = v[kFitUltraClock];
  f.priors.blackwell_dispatch_scaleout_max_bytes_per_sec = v[kFitDispatchCeiling] * 1e9;
  f.priors.gemm_efficiency_scale = v[kFitGemmScale];
  f.ep_overlap_fraction = v[kFitEpOverlap];
  f.ep_overlap_nvlink_fraction = v[kFitEpOverlapNvlink];
  f.host_op_s = v[kFitHostOp] * 1e-6;
  f.unfused_sink_layers = int(v[kFitUnfusedSinks]);
  f.pp_stage_visit_s = v[kFitPpVisit] * 1e-6;
  f.step_host_s = v[kFitStepHost] * 1e-3;
  f.priors.blackwell_ultra_nvfp4_sustained = v[kFitUltraNvfp4];
  return f;
}

std::string FormatValues(const std::vector<double>& v) {
  std::vector<std::string> parts;
  for (double x : v) parts.push_back(absl::StrFormat("%g", x));
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<Overrides> ParseOverrides(const std::string& text) {
  Overrides o;
  std::stringstream ss(text);
  std::string item;
  const std::vector<mt::FitParameter> fit = FitParameters();
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return absl::InvalidArgumentError("--set needs key=value");
    const std::string key = item.substr(0, eq);
    const double v = std::atof(item.substr(eq + 1).c_str());
    if (key == "moe_host_form" && !(v == 0 || v == 1 || v == 2 || v == 3)) {
      return absl::InvalidArgumentError(
          "--set moe_host_form must be 0, 1, 2 or 3 (StackConstants::MoeHostForm), got " +
          item.substr(eq + 1));
    }
    mp::StackConstants probe;
    const bool is_fitted = std::any_of(fit.begin(), fit.end(),
                                       [&](const mt::FitParameter& p) { return p.name == key; });
    if (is_fitted) o.fitted.emplace_back(key, v);
    else if (SetStackConstant(key, v, &probe)) o.stack.emplace_back(key, v);
    else if (key == "attention_efficiency_scale") o.attention_efficiency_scale = v;
    else if (key == "dispatch_efficiency_scale") o.dispatch_efficiency_scale = v;
    else if (key == "hbm_efficiency_scale") o.hbm_efficiency_scale = v;
    else if (key == "comm_sm_fraction_scale") o.comm_sm_fraction_scale = v;
    else if (key == "dispatch_scaleout_efficiency") o.dispatch_scaleout_efficiency = v;
    else return absl::InvalidArgumentError("unknown --set key " + key);
  }
  return o;
}

// The fitted parameters with --set pins applied: a pinned constant keeps
// the --set value as its prior and gets no grid.
std::vector<mt::FitParameter> PinnedFitParameters(const Overrides& o) {
  std::vector<mt::FitParameter> params = FitParameters();
  for (const auto& [key, v] : o.fitted) {
    for (mt::FitParameter& p : params) {
      if (p.name == key) {
        p.prior = v;
        p.grid.clear();
      }
    }
  }
  return params;
}

// The software generation of a row: its container's; rows without a
// parseable container (other frameworks) get the oldest generation the
// model describes.
mp::StackGeneration RowGeneration(const std::string& container) {
  absl::StatusOr<mp::StackGeneration> g = mp::StackGenerationForContainer(container);
  return g.ok() ? *g : mp::StackGeneration::k2602;
}

// ---------------------------------------------------------------------------
// One published row, parsed once.
struct RowSpec {
  std::string id;
  std::string stack;
  std::string source;
  std::string container;  // "" when the row has none
  std::string cluster_name;
  std::string model_preset;
  // The row's notes say the EP A2A overlap ran ("A2A overlap", not "no A2A
  // overlap": the Megatron-MoE-ModelZoo rows).
  bool notes_a2a_overlap = false;
  mp::ModelSpec model;
  mp::ClusterSpec cluster;
  mp::TrainingShape shape;
  mp::ParallelConfig parallel;
  mp::Precision precision = mp::Precision::kBf16;
  // The precision of the Adam state the row's recipe sets
  // (RecipeOptimizerStatesFor).
  mp::OptimizerStates optimizer_states = mp::OptimizerStates::kFp32;
  mp::StackGeneration generation = mp::StackGeneration::k2602;
  std::optional<mp::Recompute> published_recompute;
  std::optional<uint32_t> published_offload;  // OffloadModule bits
  int recipe_offload_layers = 0;  // --recompute_from=recipe only
  // --graphs_from=recipe only: the CUDA graphs the row's recipe ran.
  std::optional<RecipeGraphs> recipe_graphs;
  std::optional<double> measured_tokens;  // tokens/s/GPU
  std::optional<double> measured_tflops;  // model TFLOPS/GPU
  // Everything the prediction depends on (model, cluster, shape, layout,
  // precision, published recompute, software generation): rows with equal
  // inputs get equal predictions.
  std::string inputs;
  std::string label;
};

// Expert parallelism of rows whose runs.json entry leaves "ep" null but
// whose run's own published config sets it (a MoE run priced at EP 1 would
// all-gather every expert through FSDP: a layout it never ran).
struct RowExpertParallelFact {
  const char* id;
  int ep;
  const char* source;
};
constexpr RowExpertParallelFact kRowExpertParallel[] = {
    // The performance table (docs/performance-summary, added 2025-10-06 in
    // 89e3a9fdd: GBS 512, local batch 2, "TE + DeepEP", EP column "-")
    // matches the benchmark config of 2c236e081 (2025-10-08, "Add fsdp
    // optimizations for custom MoE models": global_batch_size 512,
    // local_batch_size 2, ep_size 64); the config before it (79d0ccfdb) ran
    // GBS 256 at EP 16.
    {"automodel-H100-GPT-OSS_120B-64g", 64,
     "NVIDIA-NeMo/Automodel examples/benchmark/configs/gptoss_120b_te_deepep.yaml at 2c236e081"},
};

// Parses a row; an error names why it cannot be predicted.
absl::StatusOr<RowSpec> ParseRow(const json& row) {
  RowSpec r;
  r.id = StrOr(row, "id", "?");
  r.stack = StrOr(row, "stack", "");
  r.source = StrOr(row, "source", "");
  r.container = StrOr(row, "container", "");
  r.model_preset = StrOr(row, "model_id", "");
  absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(r.model_preset);
  if (!model.ok()) return model.status();
  r.model = *model;
  r.cluster_name = StrOr(row, "cluster_preset", "");
  absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(r.cluster_name);
  if (!cluster.ok()) return cluster.status();
  r.cluster = *cluster;
  bool numeric = true;
  std::string bad_field;
  auto num = [&](const char* key, int fallback) {
    std::optional<int> v = IntOr(row, key, fallback);
    if (!v) {
      numeric = false;
      bad_field = key;
      return fallback;
    }
    return *v;
  };
  r.shape.gpus = num("num_gpus", 0);
  r.shape.seq_len = num("seq_len", 0);
  r.shape.global_batch = num("global_batch", 0);
  if (r.id.find("-LoRA-") != std::string::npos) r.shape.objective = mp::Objective::kLora;
  if (r.id.find("-SFT-") != std::string::npos) r.shape.objective = mp::Objective::kFinetune;
  mp::ParallelConfig& p = r.parallel;
  p.tp = num("tp", 1);
  p.pp = num("pp", 1);
  p.vp = num("vp", 1);
  p.ep = num("ep", 1);
  if (!row.contains("ep") || row.at("ep").is_null()) {
    for (const RowExpertParallelFact& f : kRowExpertParallel) {
      if (r.id == f.id) p.ep = f.ep;
    }
  }
  p.etp = num("etp", 1);
  p.cp = num("cp", 1);
  p.dp = num("dp", 0);
  p.mbs = num("micro_batch", 1);
  if (!numeric) {
    return absl::InvalidArgumentError("field '" + bad_field + "' is not a number");
  }
  r.measured_tokens = NumberOrNone(row, "tokens_per_sec_per_gpu");
  r.measured_tflops = NumberOrNone(row, "model_tflops_per_gpu");
  if (!r.measured_tokens && !r.measured_tflops) {
    return absl::InvalidArgumentError("no numeric tokens_per_sec_per_gpu");
  }
  // Rows whose published layout is Megatron-FSDP say so in their notes
  // ("FSDP column = 64").
  p.shard_params = StrOr(row, "notes", "").find("FSDP") != std::string::npos;
  {
    const std::string notes = StrOr(row, "notes", "");
    r.notes_a2a_overlap = notes.find("A2A overlap") != std::string::npos &&
                          notes.find("no A2A overlap") == std::string::npos;
  }
  absl::StatusOr<mp::Precision> precision =
      mp::ParsePrecision(StrOr(row, "precision_id", "bf16"));
  if (!precision.ok()) return precision.status();
  r.precision = *precision;
  // The first / last virtual stage sizes the row's recipe ran
  // (tests/internal/recipe_splits.h).
  if (r.stack == "megatron-core-2026") {
    if (std::optional<std::pair<int, int>> split =
            mt::RecipeStageSplit(r.model, r.model_preset, p)) {
      p.first_stage_layers = split->first;
      p.last_stage_layers = split->second;
    }
  }
  r.optimizer_states = RecipeOptimizerStatesFor(r.id, r.source, r.model_preset, p.shard_params);
  r.generation = RowGeneration(r.container);
  absl::StatusOr<mp::Recompute> published = PublishedRecompute(row);
  if (!published.ok() && r.stack == "megatron-core-2026" &&
      absl::GetFlag(FLAGS_recompute_from) == "recipe") {
    // A held-out row's own preset, where the audit matched one, before the
    // hand-read table (which covers the runs.json rows' presets only).
    absl::StatusOr<std::optional<mp::Recompute>> annotated = AnnotatedPresetRecompute(row);
    if (!annotated.ok()) return annotated.status();
    std::optional<mp::Recompute> recipe =
        annotated->has_value()
            ? *annotated
            : RecipeRecomputeFor(r.model_preset, r.cluster_name, r.container, r.precision, p.pp);
    if (recipe) {
      published = *recipe;
      r.recipe_offload_layers = RecipeOffloadLayersFor(r.model_preset, r.cluster_name,
                                                       r.precision, p);
    }
  }
  if (published.ok()) r.published_recompute = *published;
  r.published_offload = PublishedOffload(row);
  if (r.stack == "megatron-core-2026" && absl::GetFlag(FLAGS_graphs_from) == "recipe") {
    r.recipe_graphs =
        RecipeGraphsFor(r.model_preset, r.cluster_name, r.container, r.shape.objective);
  }
  r.label = absl::StrFormat(
      "%s %s %dg s%d gbs%d mbs%d tp%d pp%d vp%d ep%d cp%d %s sw%s", r.model.name,
      r.cluster_name, r.shape.gpus, r.shape.seq_len, r.shape.global_batch, p.mbs, p.tp,
      p.pp, p.vp, p.ep, p.cp, std::string(mp::PrecisionName(r.precision)),
      std::string(mp::StackGenerationName(r.generation)));
  r.inputs = absl::StrFormat(
      "%s %s gpus=%d seq=%d gbs=%d %s %s recompute=%s %s sw=%s", r.model.name,
      r.cluster_name, r.shape.gpus, r.shape.seq_len, r.shape.global_batch,
      std::string(mp::ObjectiveName(r.shape.objective)), mp::ToString(p),
      (published.ok() ? std::string(mp::RecomputeModeName(published->mode)) +
                            mp::RecomputeModulesName(published->modules)
                      : "unpublished") +
          (r.published_offload ? " offload=" + mp::OffloadModulesName(*r.published_offload)
                               : "") +
          (r.recipe_offload_layers > 0
               ? " offload_layers=" + std::to_string(r.recipe_offload_layers)
               : ""),
      std::string(mp::PrecisionName(r.precision)) +
          (r.optimizer_states == mp::OptimizerStates::kFp32 ? "" : " optimizer_states=bf16"),
      std::string(mp::StackGenerationName(r.generation)));
  return r;
}

// The row's recipe captured the whole iteration in CUDA graphs: Megatron-
// Bridge moved its MXFP8 MoE performance recipes to cuda_graph_impl
// full_iteration with a static token budget before 26.06
// (MegatronFeatures::graph_full_iteration has the commits), and every
// 26.06+ MoE row of runs.json is MXFP8 -- but two of those recipes kept the
// scoped Transformer Engine graphs at 26.06 (DeepSeek-V3 and GPT-OSS-120B
// on B300: RecipeGraphsFor, the audit this reads). Earlier rows and the
// dense ones: the scoped graphs (the flag changes nothing there); a 26.06+
// MoE row the audit does not cover: full iteration.
bool RecipeRanFullIterationGraphs(const RowSpec& r) {
  if (r.stack != "megatron-core-2026" || r.generation != mp::StackGeneration::k2606 ||
      !r.model.IsMoe()) {
    return false;
  }
  const std::optional<RecipeGraphs> g =
      RecipeGraphsFor(r.model_preset, r.cluster_name, r.container, r.shape.objective);
  return !g.has_value() || g->full_iteration;
}

// Builds cost models and step models for rows under given constants.
class RowModel {
 public:
  explicit RowModel(const Overrides& o) : o_(o) {}

  std::shared_ptr<const mp::CostModel> Cost(const mp::ClusterSpec& cluster,
                                            const FittedConstants& f) const {
    mp::PriorConstants k = mp::PriorConstantsFor(cluster.gpu, f.priors);
    k.attention_efficiency *= o_.attention_efficiency_scale;
    k.dispatch_nvlink_efficiency *= o_.dispatch_efficiency_scale;
    k.dispatch_scaleout_efficiency *= o_.dispatch_efficiency_scale;
    k.hbm_efficiency *= o_.hbm_efficiency_scale;
    k.comm_sm_fraction *= o_.comm_sm_fraction_scale;
    if (o_.dispatch_scaleout_efficiency > 0) {
      k.dispatch_scaleout_efficiency = o_.dispatch_scaleout_efficiency;
    }
    return std::make_shared<mp::DatasheetCostModel>(cluster, k);
  }

  mp::StackConstants Stack(mp::StackGeneration generation, const FittedConstants& f) const {
    mp::StackConstants s = mp::StackConstantsFor(generation);
    s.ep_overlap_fraction = f.ep_overlap_fraction;
    s.ep_overlap_nvlink_fraction = f.ep_overlap_nvlink_fraction;
    s.host_op_s = f.host_op_s;
    s.unfused_sink_layers = static_cast<mp::StackConstants::UnfusedSinkLayers>(
        f.unfused_sink_layers);
    s.pp_stage_visit_s = f.pp_stage_visit_s;
    s.step_host_s = f.step_host_s;
    for (const auto& [key, v] : o_.stack) SetStackConstant(key, v, &s);
    return s;
  }

  // Whether these are the shipped constants with no --set override: then
  // the step model is the one PredictPinned builds (StackConstantsFor the
  // row's generation).
  bool ShippedConstants(const FittedConstants& f) const {
    const FittedConstants shipped = FromValues(mt::Priors(FitParameters()));
    return o_.stack.empty() && o_.fitted.empty() && o_.attention_efficiency_scale == 1.0 &&
           o_.dispatch_efficiency_scale == 1.0 && o_.hbm_efficiency_scale == 1.0 &&
           o_.comm_sm_fraction_scale == 1.0 && o_.dispatch_scaleout_efficiency == 0 &&
           f.ep_overlap_fraction == shipped.ep_overlap_fraction &&
           f.ep_overlap_nvlink_fraction == shipped.ep_overlap_nvlink_fraction &&
           f.host_op_s == shipped.host_op_s &&
           f.unfused_sink_layers == shipped.unfused_sink_layers &&
           f.pp_stage_visit_s == shipped.pp_stage_visit_s &&
           f.step_host_s == shipped.step_host_s;
  }

  absl::StatusOr<mp::StepModel> Model(const RowSpec& r, const FittedConstants& f) const {
    mp::StackConstants s = Stack(r.generation, f);
    s.features.graph_full_iteration = RecipeRanFullIterationGraphs(r);
    if (r.recipe_graphs.has_value()) {
      const RecipeGraphs& g = *r.recipe_graphs;  // its full_iteration set just above
      if (g.on && !g.full_iteration) {
        s.features.graph_attn = g.attn;
        s.features.graph_moe_router = g.moe_router;
        s.features.graph_moe_preprocess = g.moe_preprocess;
        s.features.graph_shared_experts = g.moe_router;
      }
    }
    return mp::StepModel::Create(r.model, r.cluster, r.shape, Cost(r.cluster, f), s);
  }
  // With the software features of a knob-ladder step instead of the
  // generation's.
  absl::StatusOr<mp::StepModel> Model(const RowSpec& r, const FittedConstants& f,
                                      const mp::MegatronFeatures& features) const {
    mp::StackConstants s = Stack(r.generation, f);
    s.features = features;
    return mp::StepModel::Create(r.model, r.cluster, r.shape, Cost(r.cluster, f), s);
  }

 private:
  Overrides o_;
};

// A row's knobs: the stack defaults, the published recompute or the
// lightest one that fits (kRecipeMemoryHeadroom). The memory model does not
// depend on any fitted constant (all are time constants), so the choice is
// made once, under the priors.
struct RowSetup {
  mp::Knobs knobs;
  bool recompute_inferred = false;
};

// The selective-recompute modules `modules` keeps for a model
// (planner/run_defaults.h).
uint32_t ModulesOfModel(const mp::ModelSpec& m, const mp::ParallelConfig&, uint32_t modules) {
  return mp::RecomputeModulesOfModel(m, modules);
}

// The listed recipe of a 2026-stack row (the first entry that covers it),
// nullptr when its recipe runs the stack's defaults.
const RecipeKnobs* MoeCommRecipeFor(const RowSpec& row) {
  return mt::RecipeMoeCommFor(row.model_preset, row.cluster_name, row.container, row.generation,
                              row.precision, row.parallel);
}

absl::StatusOr<RowSetup> ChooseKnobs(const RowSpec& r, const mp::StepModel& sm, bool print) {
  RowSetup s;
  s.knobs = StackKnobs(r.precision);
  s.knobs.optimizer_states = r.optimizer_states;
  if (r.recipe_graphs.has_value()) s.knobs.cuda_graphs = r.recipe_graphs->on;
  // The EP A2A overlap only where the row's recipe or notes say it ran
  // (older stacks predate it or leave it off, like the Bridge default); the
  // dispatcher the recipe ran.
  const RecipeKnobs* recipe = r.stack == "megatron-core-2026" ? MoeCommRecipeFor(r) : nullptr;
  s.knobs.overlap.ep_comm = (recipe != nullptr && recipe->ep_a2a_overlap) || r.notes_a2a_overlap;
  if (recipe != nullptr) {
    s.knobs.dispatcher = recipe->dispatcher;
    s.knobs.overlap.tp_comm = recipe->tp_comm_overlap;
  }
  const std::vector<mp::Recompute> ladder = r.published_recompute
                                                ? std::vector<mp::Recompute>{*r.published_recompute}
                                                : RecomputeLadder();
  s.recompute_inferred = !r.published_recompute.has_value();
  absl::StatusOr<mp::Prediction> pred = absl::UnknownError("no prediction");
  if (r.published_offload) {
    s.knobs.offload_activations = true;
    s.knobs.offload_modules = *r.published_offload;
  }
  s.knobs.offload_layers = r.recipe_offload_layers;  // normalization: graphs off
  const mp::Knobs stack_knobs = s.knobs;
  for (const mp::Recompute& rc : ladder) {
    mp::Knobs k = stack_knobs;
    k.recompute = rc;
    // The modules this model has (the step model ignores the others;
    // Megatron-Core refuses them), then what Megatron-Core runs for the
    // combination (framework_rules.h: e.g. no EP A2A overlap without
    // interleaving or with recompute of the whole MoE layer) -- what
    // `moetune predict` would price for these pins.
    k.recompute.modules = ModulesOfModel(r.model, r.parallel, k.recompute.modules);
    const mp::NormalizedKnobs n =
        mp::NormalizeForMegatron(r.model, r.parallel, {}, k, RecipeRanFullIterationGraphs(r));
    s.knobs = n.knobs;
    pred = sm.Predict(r.parallel, s.knobs);
    if (print && pred.ok()) {
      const mp::MemoryBreakdown& mem = pred->memory;
      const double gib = 1024.0 * 1024 * 1024;
      std::printf(
          "  recompute %-9s %-60s tok/s %8.0f peak %6.1f GiB (w %.1f g %.1f "
          "o %.1f a %.1f c %.1f r %.1f)\n",
          std::string(mp::RecomputeModeName(rc.mode)).c_str(),
          mp::RecomputeModulesName(rc.modules).c_str(), pred->tokens_per_sec_per_gpu,
          pred->peak_memory_bytes / gib, mem.weights_bytes / gib, mem.grads_bytes / gib,
          mem.optimizer_bytes / gib, mem.activations_bytes / gib,
          mem.comm_buffers_bytes / gib, mem.reserve_bytes / gib);
    }
    if (!pred.ok() || pred->peak_memory_bytes <= kRecipeMemoryHeadroom * pred->hbm_bytes) {
      break;
    }
  }
  if (!pred.ok()) return pred.status();
  return s;
}

std::string RecomputeText(const mp::Recompute& r) {
  std::string t(mp::RecomputeModeName(r.mode));
  if (r.mode == mp::RecomputeMode::kSelective) {
    t += "(" + mp::RecomputeModulesName(r.modules) + ")";
  }
  return t;
}

// The request `moetune predict` (and the Predict RPC) builds for a row:
// every knob pinned to what the validator chose (the published layout,
// recompute, the stack's defaults for the rest), the row's software
// generation as --stack.
// A row's problem with its published layout pinned (tp, pp, vp, ep, etp, cp,
// mbs, FSDP, rank order), one prediction, single-threaded, its software generation.
mp::PlanRequest RowLayoutRequest(const RowSpec& r) {
  mp::PlanRequest q;
  q.model = r.model;
  q.cluster = r.cluster;
  q.shape = r.shape;
  const mp::ParallelConfig& p = r.parallel;
  mp::FixedKnobs& f = q.constraints.fixed;
  f.tp = p.tp, f.pp = p.pp, f.vp = p.vp, f.ep = p.ep, f.etp = p.etp, f.cp = p.cp;
  f.mbs = p.mbs;
  f.shard_params = p.shard_params;
  if (p.dp_outermost) f.dp_outermost = true;  // the published rank order
  q.top_k = 1;
  q.threads = 1;
  q.stack.framework = mp::Framework::kMegatron;
  q.stack.generation = r.generation;
  return q;
}

mp::PlanRequest RowRequest(const RowSpec& r, const mp::Knobs& k) {
  mp::PlanRequest q = RowLayoutRequest(r);
  const mp::ParallelConfig& p = r.parallel;
  mp::FixedKnobs& f = q.constraints.fixed;
  if (p.dp > 0) f.dp = p.dp;
  f.first_stage_layers = p.first_stage_layers;
  f.last_stage_layers = p.last_stage_layers;
  mp::PinKnobs(k, &f);
  q.constraints.precisions = {k.precision};
  q.constraints.dispatchers = {k.dispatcher};
  q.constraints.moe_load_imbalance = k.moe_load_imbalance;
  // The published rows ran forced-balanced routing (Megatron-Bridge tables
  // from 25.11 on, the GB200 guide, mock-data benchmarks: see their notes in
  // runs.json), so they are priced as they ran, not as real training.
  q.constraints.routing = mp::Routing::kBalanced;
  q.constraints.optimizer_states = k.optimizer_states;
  q.stack.container = r.container.empty() ? std::string("(none)") : r.container;
  q.stack.cuda_graph_scope = RecipeRanFullIterationGraphs(r) ? mp::CudaGraphScope::kFullIteration
                                                          : mp::CudaGraphScope::kModules;
  return q;
}

// A row predicted with the shipped constants.
struct Evaluated {
  RowSpec spec;
  RowSetup setup;
  mp::Prediction pred;
};

// Memory check against the published runs (every parsed row, by stack
// class): rows with a published recompute whose predicted peak fits HBM
// (and fits within kRecipeMemoryHeadroom); rows without one whose lightest
// fitting choice is no recompute (what the Bridge recipes mostly run).
void PrintMemoryFits(const std::vector<Evaluated>& all) {
  std::printf("\n== Memory: published runs that fit (peak <= HBM; <= %.0f%% of HBM) ==\n",
              100 * kRecipeMemoryHeadroom);
  for (const bool modern : {true, false}) {
    int pub = 0, pub_fit = 0, pub_head = 0, unpub = 0, unpub_none = 0;
    std::vector<std::string> misses;
    for (const Evaluated& e : all) {
      if ((e.spec.stack == "megatron-core-2026") != modern) continue;
      if (e.spec.published_recompute) {
        ++pub;
        const bool fit = e.pred.peak_memory_bytes <= e.pred.hbm_bytes;
        pub_fit += fit;
        pub_head += e.pred.peak_memory_bytes <= kRecipeMemoryHeadroom * e.pred.hbm_bytes;
        if (!fit) misses.push_back(e.spec.id);
      } else {
        ++unpub;
        unpub_none += e.setup.knobs.recompute.mode == mp::RecomputeMode::kNone;
      }
    }
    std::printf("  %-22s published recompute: %d / %d fit (%d within the headroom); "
                "recompute unpublished: %d / %d fit with none\n",
                modern ? "megatron-core-2026" : "other stacks", pub_fit, pub, pub_head,
                unpub_none, unpub);
    for (const std::string& id : misses) std::printf("    does not fit: %s\n", id.c_str());
  }
}

absl::StatusOr<Evaluated> EvaluateRow(RowSpec spec, const RowModel& row_model,
                                      const FittedConstants& constants, bool print) {
  absl::StatusOr<mp::StepModel> sm = row_model.Model(spec, constants);
  if (!sm.ok()) return sm.status();
  absl::StatusOr<RowSetup> setup = ChooseKnobs(spec, *sm, print);
  if (!setup.ok()) return setup.status();
  absl::StatusOr<mp::Prediction> pred = sm->Predict(spec.parallel, setup->knobs);
  if (!pred.ok()) return pred.status();
  if (row_model.ShippedConstants(constants)) {
    // What a user gets: the same question through planner/request.h, the
    // path of `moetune predict`. Must equal the step model's answer above
    // (the CV's fast path reproduces that one); a difference is reported.
    absl::StatusOr<mp::Prediction> user =
        mp::PredictPinned(RowRequest(spec, setup->knobs), row_model.Cost(spec.cluster, constants));
    if (!user.ok()) {
      return absl::Status(user.status().code(),
                          absl::StrCat("through PredictPinned: ", user.status().message()));
    }
    // The user's plan states the pipeline split (Megatron needs it as
    // --decoder-first/last-pipeline-num-layers; search.cc ExplicitStages)
    // and what the framework runs for the pins: that plan is the row's from
    // here on (the cross-validation prices it), and the step model on it
    // must give PredictPinned's answer.
    spec.parallel = user->parallel;
    setup->knobs = user->knobs;
    absl::StatusOr<mp::Prediction> direct = sm->Predict(spec.parallel, setup->knobs);
    if (!direct.ok() ||
        std::abs(direct->tokens_per_sec_per_gpu / user->tokens_per_sec_per_gpu - 1) > 1e-12) {
      std::printf("REQUEST PATH DIFFERS %s: step model %.9g, PredictPinned %.9g tokens/s/GPU\n",
                  spec.id.c_str(), direct.ok() ? direct->tokens_per_sec_per_gpu : 0.0,
                  user->tokens_per_sec_per_gpu);
    }
    pred = *std::move(user);
  }
  return Evaluated{std::move(spec), *setup, *std::move(pred)};
}

// The job of a row for the layout ranking: everything but the layout.
std::string JobKey(const RowSpec& r) {
  return absl::StrFormat("%s %s %dg s%d gbs%d %s %s", r.model.name, r.cluster_name,
                         r.shape.gpus, r.shape.seq_len, r.shape.global_batch,
                         std::string(mp::PrecisionName(r.precision)),
                         std::string(mp::ObjectiveName(r.shape.objective)));
}

std::string LayoutKey(const RowSpec& r) {
  const mp::ParallelConfig& p = r.parallel;
  return absl::StrFormat("tp%d pp%d vp%d ep%d etp%d cp%d mbs%d%s", p.tp, p.pp, p.vp, p.ep,
                         p.etp, p.cp, p.mbs, p.shard_params ? " fsdp" : "");
}

// Prints the Blackwell Ultra / Blackwell pairs of `rows` (predicted: per
// row): same job, container and system family (NVLink domain size).
void PrintGenerationPairs(const char* title, const std::vector<const RowSpec*>& rows,
                          const std::vector<double>& predicted) {
  std::vector<mt::GenerationRow> g;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowSpec& r = *rows[i];
    const std::string job = absl::StrFormat("%s %dg s%d gbs%d %s %s", r.model.name, r.shape.gpus,
                                            r.shape.seq_len, r.shape.global_batch,
                                            std::string(mp::PrecisionName(r.precision)),
                                            std::string(mp::ObjectiveName(r.shape.objective)));
    g.push_back({r.id, job, r.container, absl::StrCat("nvlink", r.cluster.nvlink_domain_gpus),
                 std::string(mp::GpuGenerationName(r.cluster.gpu.generation)), LayoutKey(r),
                 r.measured_tokens.value_or(0), predicted[i]});
  }
  const mt::GenerationPairSummary s = mt::PairGenerations(g, "blackwell", "blackwell_ultra");
  std::printf("\n== Blackwell Ultra / Blackwell pairs (same job, container, NVLink domain), %s: "
              "%zu pairs; same layout %d: mean |ratio error| %.1f%%, signed %+.1f%%; "
              "each recipe's own layout %zu: mean |ratio error| %.1f%%, signed %+.1f%% ==\n",
              title, s.pairs.size(), s.same_layout, 100 * s.mean_abs_error_same,
              100 * s.mean_signed_error_same, s.pairs.size() - s.same_layout,
              100 * s.mean_abs_error_own, 100 * s.mean_signed_error_own);
  for (const mt::GenerationPair& p : s.pairs) {
    const mt::GenerationRow& o = g[p.older];
    const mt::GenerationRow& n = g[p.newer];
    std::printf("  %-40s %-9s %-11s meas x%.3f pred x%.3f err %+6.1f%%  %s\n", o.job.c_str(),
                o.container.c_str(), rows[p.newer]->cluster_name.c_str(), p.measured_ratio,
                p.predicted_ratio, 100 * p.ratio_error,
                p.same_layout ? o.layout.c_str()
                              : absl::StrCat(o.layout, " -> ", n.layout).c_str());
  }
}

// Prints the ranking of `rows` (predicted: per row) and returns it.
mt::RankingSummary PrintRanking(const char* title, const std::vector<const RowSpec*>& rows,
                                const std::vector<double>& predicted, bool print_pairs) {
  std::vector<mt::RankedRow> ranked;
  for (size_t i = 0; i < rows.size(); ++i) {
    ranked.push_back({rows[i]->id, JobKey(*rows[i]), LayoutKey(*rows[i]),
                      *rows[i]->measured_tokens, predicted[i]});
  }
  constexpr double kDecisiveMargin = 0.05;
  const mt::RankingSummary s = mt::RankLayouts(ranked, kDecisiveMargin);
  std::printf("\n== Layout ranking, %s: %zu groups, pairs in the right order %d / %d "
              "(%.0f%%); measured > 5%% apart: %d / %d ==\n",
              title, s.groups.size(), s.right, s.pairs,
              s.pairs > 0 ? 100.0 * s.right / s.pairs : 0.0, s.decisive_right, s.decisive);
  for (const mt::RankingGroup& g : s.groups) {
    std::printf("  %-52s rows %d  pairs %2zu  right %2d  (decisive %d / %d)\n", g.job.c_str(),
                int(g.rows.size()), g.pairs.size(), g.right, g.decisive_right, g.decisive);
    if (!print_pairs) continue;
    for (size_t i : g.rows) {
      std::printf("      %-64s %-6s %-34s meas %8.0f pred %8.0f\n", rows[i]->id.substr(0, 64).c_str(),
                  rows[i]->container.empty() ? "-" : rows[i]->container.c_str(),
                  ranked[i].layout.c_str(), ranked[i].measured, ranked[i].predicted);
    }
  }
  return s;
}

// A prediction's terms, one line each, under a check's line (--verbose).
void PrintBreakdown(const mp::Prediction& p) {
  for (const mp::Term& t : p.breakdown) {
    std::printf("      %-32s %-22s %9.3f s\n", t.name.c_str(),
                std::string(mp::TermKindName(t.kind)).c_str(), t.seconds);
  }
}

void PrintSummaryLine(const char* what, const mt::ErrorSummary& s) {
  std::printf("  %-44s rows %3d  MAPE %5.1f%%  mean signed %+6.1f%%  > 10%%: %2d  > 25%%: %2d"
              "  worst %+6.1f%%%s\n",
              what, s.rows, 100 * s.mape, 100 * s.mean_signed, s.over_10, s.over_25,
              100 * s.worst, s.failed > 0 ? absl::StrFormat("  (%d failed)", s.failed).c_str()
                                          : "");
}

std::string GpuKey(const RowSpec& r) { return r.cluster_name; }

// "...section '26.02 NeMo Container / Pre-Training'" -> "26.02 / Pre-Training".
std::string SourceKey(const RowSpec& r) {
  const size_t at = r.source.find("section '");
  if (at == std::string::npos) return r.source.substr(0, 40);
  std::string s = r.source.substr(at + 9);
  if (!s.empty() && s.back() == '\'') s.pop_back();
  const size_t nc = s.find(" NeMo Container");
  if (nc != std::string::npos) s = s.substr(0, nc) + s.substr(nc + 15);
  return s;
}

std::string ContainerKey(const RowSpec& r) {
  return r.container.empty() ? "(none)" : r.container;
}

// How many of `errors` are beyond +-`limit`.
int CountBeyond(const std::vector<double>& errors, double limit) {
  return int(std::count_if(errors.begin(), errors.end(),
                           [limit](double x) { return std::abs(x) > limit; }));
}

// Whether a measured throughput lies inside a prediction's 80% interval.
bool InsideInterval(const mp::PredictionInterval& iv, double tokens_per_sec_per_gpu) {
  return iv.tokens_per_sec_per_gpu_low <= tokens_per_sec_per_gpu &&
         tokens_per_sec_per_gpu <= iv.tokens_per_sec_per_gpu_high;
}

}  // namespace

// `moetune predict` of a published row given only what it publishes (its
// layout, container, objective, precision, optimizer states and, where
// published, recompute and offload); every other knob from `mode`.
absl::StatusOr<mp::Prediction> PredictPublishedLayout(const RowSpec& r, mp::UnpinnedKnobs mode,
                                                      mp::Routing routing) {
  mp::PlanRequest q = RowLayoutRequest(r);
  mp::FixedKnobs& f = q.constraints.fixed;
  if (r.published_recompute) f.recompute = *r.published_recompute;
  if (r.published_offload) f.offload_modules = *r.published_offload;
  if (r.recipe_offload_layers > 0) f.offload_layers = r.recipe_offload_layers;
  f.precision = r.precision;
  q.constraints.precisions = {r.precision};
  q.constraints.routing = routing;
  // Natural is predict's default: asked as a user who does not pass
  // --routing (the interval then also spans forced balancing); balanced is
  // asked with --routing balanced.
  q.routing_given = routing != mp::Routing::kNatural;
  q.constraints.optimizer_states = r.optimizer_states;  // the user states it
  q.stack.container = r.container.empty() ? std::string("latest") : r.container;
  q.unpinned_knobs = mode;
  q.cuda_graph_scope_given = false;
  return mp::PredictPinned(q, std::make_shared<mp::DatasheetCostModel>(r.cluster));
}

// The question out-of-sample checks ask of a published run: `moetune
// predict` given only what the row publishes -- its layout (unpublished
// vp / etp / cp as 1), container, objective, FSDP and, where published, its
// recompute and offload -- with every other knob left to the tool: the run
// defaults (planner/run_defaults.h, predict's default) or the autotuner's
// choice (--search-knobs), under forced-balanced routing (what the rows ran)
// and natural routing (predict's default).
void PrintPublishedLayoutOnly(const std::vector<RowSpec>& specs) {
  std::printf("\n== Through `moetune predict` with only the published layout, container, objective "
              "(and recompute / offload where published) ==\n");
  for (const mp::UnpinnedKnobs mode : {mp::UnpinnedKnobs::kRunDefaults, mp::UnpinnedKnobs::kSearch}) {
    for (const mp::Routing routing : {mp::Routing::kBalanced, mp::Routing::kNatural}) {
      std::vector<double> errors;
      int failed = 0;
      std::string worst;
      double worst_err = 0;
      int covered = 0;  // measured inside the prediction's 80% interval
      for (const RowSpec& r : specs) {
        absl::StatusOr<mp::Prediction> pred = PredictPublishedLayout(r, mode, routing);
        if (!pred.ok()) {
          ++failed;
          continue;
        }
        const double meas = *r.measured_tokens;
        const double err = pred->tokens_per_sec_per_gpu / meas - 1;
        errors.push_back(err);
        covered += InsideInterval(pred->interval, meas);
        if (std::abs(err) > std::abs(worst_err)) worst_err = err, worst = r.id;
      }
      const mt::ErrorSummary e = mt::Summarize(errors);
      std::printf("  %-22s %-9s rows %2zu  MAPE %5.1f%%  mean signed %+6.1f%%  > 25%%: %2d  "
                  "no answer %d  in interval %2d  worst %+.1f%% %s\n",
                  mode == mp::UnpinnedKnobs::kRunDefaults ? "run defaults (default)"
                                                          : "--search-knobs",
                  routing == mp::Routing::kBalanced ? "balanced" : "natural", errors.size(),
                  100 * e.mape, 100 * e.mean_signed, e.over_25, failed, covered,
                  100 * worst_err, worst.c_str());
    }
  }
}

// The held-out recipe checks (tests/internal/recipe_checks.h) asked as the
// out-of-sample grader asks them: `moetune predict` with only the published
// layout, precision and container, every other knob the run defaults
// (forced-balanced and natural routing). Beside the recipe-knob figures
// printed above, this shows how much of each set's error comes from knobs
// the published layout does not carry.
void PrintRecipeChecksThroughPredict() {
  using Set = mt::RecipeCheck::Set;
  std::printf("\n== Recipe checks through `moetune predict` with only the published layout, "
              "precision and container (run defaults); the third pass also gives the recipe's "
              "recompute and offload, as issue 16's hidden sets are asked ==\n");
  std::printf("  %-38s %9s %9s %8s %9s %8s %9s %8s  %s\n", "run", "meas", "balanced", "err",
              "natural", "err", "+rc/offl", "err", "balanced 80% interval");
  // Three ways of asking: forced-balanced routing (as these runs ran),
  // predict's default natural routing, and forced-balanced with the
  // recipe's recompute and activation offload given (--recompute /
  // --offload), the "published layout, and where published its
  // recompute/offload" protocol of issue 16's hidden sets.
  constexpr int kPasses = 3;
  constexpr const char* kPassName[kPasses] = {"balanced", "natural", "balanced, recipe rc/offload"};
  std::map<Set, std::vector<double>> errors[kPasses];
  // Held-out runs inside the prediction's own 80% interval (the interval
  // predict prints: comparable rows' cross-validated errors, widened where
  // the run defaults use a setting no runs.json row measured, and spanning
  // what the knobs these requests leave unset could be).
  std::map<Set, int> covered[kPasses];
  for (const mt::RecipeCheck& c : mt::PublicRecipeChecks()) {
    absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(c.model_preset);
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(c.cluster_preset);
    if (!model.ok() || !cluster.ok()) continue;
    double tps[kPasses] = {0, 0, 0};
    double meas = c.measured_tokens_per_sec_per_gpu;
    std::string why, detail, interval;
    for (int pass = 0; pass < kPasses; ++pass) {
      const bool natural = pass == 1;
      mp::PlanRequest q;
      q.model = *model;
      q.cluster = *cluster;
      q.shape = c.shape;
      mp::FixedKnobs& f = q.constraints.fixed;
      const mp::ParallelConfig& p = c.parallel;
      f.tp = p.tp, f.pp = p.pp, f.vp = p.vp, f.ep = p.ep, f.etp = p.etp, f.cp = p.cp;
      f.mbs = p.mbs;
      f.precision = c.knobs.precision;
      if (pass == 2) {
        f.recompute = c.knobs.recompute;
        f.offload_modules = c.knobs.offload_activations ? c.knobs.offload_modules : 0u;
      }
      q.constraints.precisions = {c.knobs.precision};
      q.constraints.routing = natural ? mp::Routing::kNatural : mp::Routing::kBalanced;
      q.routing_given = !natural;  // natural: predict's default, --routing not passed
      q.top_k = 1;
      q.threads = 1;
      q.stack.framework = mp::Framework::kMegatron;
      q.stack.generation = c.generation;
      q.stack.container = std::string(mp::StackGenerationName(c.generation));
      q.unpinned_knobs = mp::UnpinnedKnobs::kRunDefaults;
      q.cuda_graph_scope_given = false;
      absl::StatusOr<mp::Prediction> pred =
          mp::PredictPinned(q, std::make_shared<mp::DatasheetCostModel>(*cluster));
      if (!pred.ok()) {
        why = std::string(pred.status().message()).substr(0, 60);
        continue;
      }
      if (c.measured_tflops_per_gpu > 0) {
        meas = c.measured_tflops_per_gpu * pred->tokens_per_sec_per_gpu / pred->model_tflops_per_gpu;
      }
      tps[pass] = pred->tokens_per_sec_per_gpu;
      errors[pass][c.set].push_back(tps[pass] / meas - 1);
      const bool inside = InsideInterval(pred->interval, meas);
      covered[pass][c.set] += inside;
      if (pass == 0) {
        interval = absl::StrFormat("%.0f-%.0f%s", pred->interval.tokens_per_sec_per_gpu_low,
                                   pred->interval.tokens_per_sec_per_gpu_high,
                                   inside ? "" : " out");
      }
      if (pass == 0 && absl::GetFlag(FLAGS_verbose)) {
        // Which knobs the run defaults chose against the recipe's own.
        detail = absl::StrFormat("      predict: %s, graphs %s\n      recipe:  %s, graphs %s\n",
                    mp::ToString(pred->knobs).c_str(),
                    mp::PredictedStack(q).cuda_graph_scope == mp::CudaGraphScope::kFullIteration
                        ? "full iteration"
                        : "scoped",
                    mp::ToString(c.knobs).c_str(),
                    c.features.graph_full_iteration ? "full iteration" : "scoped");
      }
    }
    auto err = [&](int pass) { return tps[pass] > 0 ? 100 * (tps[pass] / meas - 1) : 0.0; };
    std::printf("  %-38s %9.0f %9.0f %+7.1f%% %9.0f %+7.1f%% %9.0f %+7.1f%%  %s%s\n",
                c.id.c_str(), meas, tps[0], err(0), tps[1], err(1), tps[2], err(2),
                interval.c_str(), why.c_str());
    std::printf("%s", detail.c_str());
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    for (const auto& [set, e] : errors[pass]) {
      const mt::ErrorSummary s = mt::Summarize(e);
      std::printf(
          "  %-27s %-20s runs %2d  MAPE %5.1f%%  signed %+6.1f%%  > 30%%: %d  inside the 80%% "
          "interval: %d\n",
          kPassName[pass], mt::SetLabel(set), s.rows, 100 * s.mape, 100 * s.mean_signed,
          CountBeyond(e, 0.3), covered[pass][set]);
    }
  }
  // Predict's own interval on runs it never saw, asked as a user would
  // (forced-balanced routing, as those runs ran): at least issue 16's 70%.
  // Over-coverage is not checked here: a request that leaves knobs unset
  // gets the union over what they could be (planner/request.h).
  int runs = 0, inside = 0;
  for (const auto& [set, e] : errors[0]) {
    runs += int(e.size());
    inside += covered[0][set];
  }
  std::printf("  balanced, all held-out runs: %d of %d inside predict's 80%% interval\n", inside,
              runs);
  Criteria().Require(runs > 0 && inside >= kMinCoverage * runs,
                     absl::StrFormat("held-out runs inside predict's 80%% interval: %d of %d "
                                     "(balanced routing; at least %.0f%%)",
                                     inside, runs, 100 * kMinCoverage));
}

// The JSON array of rows in `path`.
absl::StatusOr<json> ReadJsonArray(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  json rows = json::parse(buf.str(), nullptr, false);
  if (rows.is_discarded() || !rows.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a JSON array"));
  }
  return rows;
}

// The id of the first row of `candidates` that `rows` already holds (the same
// id, or the same container, GPU count and measured tokens/s/GPU: one table
// row), "" when none does.
std::string RowAlsoIn(const json& candidates, const json& rows) {
  auto key = [](const json& r) {
    return absl::StrCat(StrOr(r, "container", ""), "|", IntOr(r, "num_gpus", 0).value_or(0), "|",
                        std::llround(NumberOrNone(r, "tokens_per_sec_per_gpu").value_or(0)));
  };
  std::set<std::string> ids, keys;
  for (const json& r : rows) {
    ids.insert(StrOr(r, "id", ""));
    keys.insert(key(r));
  }
  for (const json& c : candidates) {
    if (ids.count(StrOr(c, "id", "")) > 0 || keys.count(key(c)) > 0) return StrOr(c, "id", "?");
  }
  return "";
}

// Rows of a runs.json-schema file that no constant was set against: each
// priced by the headline's scheme with the shipped constants (what the
// cross-validation scores) and through `moetune predict` given only the
// published layout (issue 16's hidden-set protocol; balanced routing, as the
// tables ran, and natural, predict's default), then the layout ranking of
// these rows together with runs.json's (`in_sample`, priced `in_sample_pred`).
void PrintHeldOutRows(const std::string& path, const json& rows, const RowModel& row_model,
                      const FittedConstants& constants, const std::vector<RowSpec>& in_sample,
                      const std::vector<double>& in_sample_pred) {
  std::printf("\n== Held out: %s (never used to set a constant), shipped constants ==\n",
              path.c_str());
  std::printf("  %-58s %7s | %7s %7s  in | predict: %7s  in %7s\n", "run", "meas", "pred",
              "err", "bal err", "nat err");
  std::vector<RowSpec> specs;
  std::vector<double> headline;
  // errors[0] headline, [1] predict balanced, [2] predict natural; per key.
  std::map<std::string, std::vector<double>> by_gpu, by_model;
  std::vector<double> errors[3];
  // The same without the rows of each kind the publisher's own material puts
  // in doubt: [0] the page footnotes the number as a known software
  // regression (publisher_known_issue, tools/extract_bridge_tables.py); [1]
  // the published layout is set by no preset of the container's release tag
  // (preset_audit.own_tag_preset null, tools/audit_bridge_presets.py).
  constexpr int kApartKinds = 2;
  const char* kApartWhy[kApartKinds] = {
      "the page footnotes as a known regression",
      "whose layout no preset of their container's tag sets"};
  std::vector<double> errors_kept[kApartKinds][3];
  int apart_rows[kApartKinds] = {0, 0};
  int inside[3] = {0, 0, 0}, failed[3] = {0, 0, 0};
  for (const json& row : rows) {
    const std::string id = StrOr(row, "id", "?");
    const bool known_issue = row.contains("publisher_known_issue") &&
                             row["publisher_known_issue"].is_boolean() &&
                             row["publisher_known_issue"].get<bool>();
    const bool layout_unmatched = row.contains("preset_audit") &&
                                  row["preset_audit"].is_object() &&
                                  row["preset_audit"].contains("own_tag_preset") &&
                                  row["preset_audit"]["own_tag_preset"].is_null();
    const bool apart[kApartKinds] = {known_issue, layout_unmatched};
    absl::StatusOr<RowSpec> spec = ParseRow(row);
    absl::StatusOr<Evaluated> ev =
        spec.ok() ? EvaluateRow(*spec, row_model, constants, false)
                  : absl::StatusOr<Evaluated>(spec.status());
    if (!ev.ok() || !ev->spec.measured_tokens) {
      // Counted as unanswered in every pass: the criterion below needs
      // every held-out row priced.
      std::printf("  %-58s no prediction: %s\n", id.c_str(),
                  ev.ok() ? "no tokens/s" : std::string(ev.status().message()).c_str());
      for (int& f : failed) ++f;
      continue;
    }
    const double meas = *ev->spec.measured_tokens;
    const double err = ev->pred.tokens_per_sec_per_gpu / meas - 1;
    const bool in_headline = InsideInterval(ev->pred.interval, meas);
    for (int a = 0; a < kApartKinds; ++a) {
      apart_rows[a] += apart[a];
      if (!apart[a]) errors_kept[a][0].push_back(err);
    }
    errors[0].push_back(err);
    inside[0] += in_headline;
    by_gpu[ev->spec.cluster_name].push_back(err);
    by_model[ev->spec.model_preset].push_back(err);
    std::string line = absl::StrFormat("  %-58s %7.0f | %7.0f %+6.1f%% %3s |", id.substr(0, 58),
                                       meas, ev->pred.tokens_per_sec_per_gpu, 100 * err,
                                       in_headline ? "" : "out");
    for (const mp::Routing routing : {mp::Routing::kBalanced, mp::Routing::kNatural}) {
      const int k = routing == mp::Routing::kBalanced ? 1 : 2;
      absl::StatusOr<mp::Prediction> p =
          PredictPublishedLayout(ev->spec, mp::UnpinnedKnobs::kRunDefaults, routing);
      if (!p.ok()) {
        ++failed[k];
        absl::StrAppend(&line, "  no answer    ");
        continue;
      }
      const double e = p->tokens_per_sec_per_gpu / meas - 1;
      const bool in = InsideInterval(p->interval, meas);
      errors[k].push_back(e);
      for (int a = 0; a < kApartKinds; ++a) {
        if (!apart[a]) errors_kept[a][k].push_back(e);
      }
      inside[k] += in;
      absl::StrAppend(&line, absl::StrFormat(" %+7.1f%% %3s", 100 * e, in ? "" : "out"));
    }
    if (known_issue) absl::StrAppend(&line, "  known issue (page footnote)");
    if (layout_unmatched) absl::StrAppend(&line, "  layout of no preset of its tag");
    std::printf("%s\n", line.c_str());
    specs.push_back(ev->spec);
    headline.push_back(ev->pred.tokens_per_sec_per_gpu);
  }
  const char* kPass[3] = {"headline scheme", "predict, balanced", "predict, natural"};
  for (int k = 0; k < 3; ++k) {
    const mt::ErrorSummary s = mt::Summarize(errors[k]);
    std::printf("  %-18s rows %3d  MAPE %5.1f%%  signed %+6.1f%%  > 12%%: %2d  > 30%%: %2d  "
                "inside the 80%% interval: %d  no answer: %d\n",
                kPass[k], s.rows, 100 * s.mape, 100 * s.mean_signed, CountBeyond(errors[k], 0.12),
                CountBeyond(errors[k], 0.3), inside[k], failed[k]);
  }
  // Counted above and in every criterion; printed apart because no model of
  // the software predicts a fault its publisher names, nor a run whose
  // published layout is not the one it ran.
  for (int a = 0; a < kApartKinds; ++a) {
    if (apart_rows[a] == 0) continue;
    for (int k = 0; k < 3; ++k) {
      const mt::ErrorSummary s = mt::Summarize(errors_kept[a][k]);
      std::printf("  %-18s without the %d rows %s: rows %3d  MAPE %5.1f%%  signed %+6.1f%%  "
                  "> 30%%: %2d\n",
                  kPass[k], apart_rows[a], kApartWhy[a], s.rows, 100 * s.mape,
                  100 * s.mean_signed, CountBeyond(errors_kept[a][k], 0.3));
    }
  }
  for (const auto* groups : {&by_gpu, &by_model}) {
    for (const auto& [key, e] : *groups) {
      const mt::ErrorSummary s = mt::Summarize(e);
      std::printf("    headline, %-16s rows %2d  MAPE %5.1f%%  signed %+6.1f%%  worst %+6.1f%%\n",
                  key.c_str(), s.rows, 100 * s.mape, 100 * s.mean_signed, 100 * s.worst);
    }
  }
  std::vector<const RowSpec*> ranked;
  std::vector<double> ranked_pred;
  for (size_t i = 0; i < in_sample.size(); ++i) {
    ranked.push_back(&in_sample[i]);
    ranked_pred.push_back(in_sample_pred[i]);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    ranked.push_back(&specs[i]);
    ranked_pred.push_back(headline[i]);
  }
  const mt::RankingSummary ranking =
      PrintRanking("runs.json and the held-out rows together, shipped constants", ranked,
                   ranked_pred, absl::GetFlag(FLAGS_verbose));
  PrintGenerationPairs("runs.json and the held-out rows together, shipped constants", ranked,
                       ranked_pred);
  const mt::ErrorSummary through_predict = mt::Summarize(errors[1]);
  Criteria().Require(failed[1] == 0 && through_predict.mape <= kMaxHeldOutMape,
                     absl::StrFormat("held-out rows through predict (balanced): MAPE %.1f%% "
                                     "(at most %.0f%%), %d without an answer (none allowed)",
                                     100 * through_predict.mape, 100 * kMaxHeldOutMape,
                                     failed[1]));
  Criteria().Require(ranking.pairs > 0 &&
                         ranking.right >= kMinHeldOutLayoutOrder * ranking.pairs,
                     absl::StrFormat("layout order with the held-out rows %d / %d < %.0f%%",
                                     ranking.right, ranking.pairs,
                                     100 * kMinHeldOutLayoutOrder));
}

// Prints the memory anchors: measured peak allocated memory, outside runs.json
// (Megatron-Bridge skill cards at 067f987d), against the predicted peak.
// Llama3-70B SFT on 32 H100, FP8 current scaling, the deep-pipeline
// group's job and knobs: skills/nemo-mbridge-perf-activation-recompute/
// card.yaml (PR #3107: TP4 PP4 VP5 DP2 with recompute_modules
// [core_attn] 58.8, [mlp] 55.6, [mlp, core_attn] 55.6, [core_attn,
// layernorm] 59.6) and skills/nemo-mbridge-perf-memory-tuning/card.yaml
// (the core_attn baseline at TP4 PP8 VP5 DP1 53.2, TP8 PP4 VP5 DP1
// 50.2). Moonlight-16B-A3B on 8 H100, BF16, the recompute ladders' job
// (activation-recompute card: peak allocated after iteration 2, [] 36.618
// ... [layernorm, moe_act] 35.949). The cards write "GB"; compared as
// 10^9 bytes (were they GiB, the measured values would be 7.4% larger).
void PrintMemoryAnchors(const RowModel& row_model,
                        const FittedConstants& default_constants) {
  struct MemAnchor {
    std::string name;
    double predicted_gb = 0;
    double measured_gb = 0;
  };
  std::vector<MemAnchor> anchors;
  // Which pipeline rank's memory a card's figure is: the last rank's for
  // the runs logged before Megatron-Bridge reduced its memory metrics over
  // the pipeline (2f7f48f6c, 2026-05-04, issue 3167: the TensorBoard / W&B
  // writers run on rank world_size - 1 only); the peak rank's otherwise.
  enum class Logged { kPeakRank, kLastRank };
  auto predict_peak = [&](const std::string& model_preset, const std::string& cluster_preset,
                          const mp::TrainingShape& shape, mp::StackGeneration generation,
                          const mp::MegatronFeatures& features, const mp::ParallelConfig& p,
                          mp::Knobs knobs, Logged logged) -> std::optional<double> {
    absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(model_preset);
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(cluster_preset);
    if (!model.ok() || !cluster.ok()) return std::nullopt;
    mp::StackConstants st = row_model.Stack(generation, default_constants);
    st.features = features;
    absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
        *model, *cluster, shape, row_model.Cost(*cluster, default_constants), st);
    if (!sm.ok()) return std::nullopt;
    knobs.recompute.modules = ModulesOfModel(*model, p, knobs.recompute.modules);
    knobs = mp::NormalizeForMegatron(*model, p, {}, knobs, st.features.graph_full_iteration)
                .knobs;
    absl::StatusOr<mp::Prediction> pred = sm->Predict(p, knobs);
    if (!pred.ok()) return std::nullopt;
    // torch's peak allocated: the tensors, without the CUDA context /
    // workspaces / fragmentation reserve and NCCL's buffers.
    const mp::MemoryBreakdown& rank =
        logged == Logged::kLastRank ? pred->last_stage_memory : pred->memory;
    return rank.TensorBytes() / 1e9;
  };
  auto selective = [](uint32_t modules) {
    mp::Recompute r;
    r.mode = modules == 0 ? mp::RecomputeMode::kNone : mp::RecomputeMode::kSelective;
    r.modules = modules;
    return r;
  };
  for (const mt::LayoutGroup& g : mt::HopperDeepPipelineGroups()) {
    if (g.model_preset != "llama3-70b") continue;
    struct Exp {
      int tp, pp;
      uint32_t modules;
      const char* modules_name;
      double measured_gb;
    };
    const Exp exps[] = {
        {4, 4, mp::kRecomputeCoreAttn, "core_attn", 58.8},
        {4, 4, mp::kRecomputeMlp, "mlp", 55.6},
        {4, 4, mp::kRecomputeMlp | mp::kRecomputeCoreAttn, "mlp, core_attn", 55.6},
        {4, 4, mp::kRecomputeCoreAttn | mp::kRecomputeLayerNorm, "core_attn, layernorm", 59.6},
        {4, 8, mp::kRecomputeCoreAttn, "core_attn", 53.2},
        {8, 4, mp::kRecomputeCoreAttn, "core_attn", 50.2},
    };
    for (const Exp& e : exps) {
      for (const mt::LayoutCase& lc : g.cases) {
        if (lc.parallel.tp != e.tp || lc.parallel.pp != e.pp) continue;
        mp::Knobs k = lc.knobs;
        k.recompute = selective(e.modules);
        // PR 3107 (March 2026) logged the last rank: its card marks the
        // core_attn runs "OOM_on_rank0" beside a 58.8 GB peak.
        std::optional<double> gb =
            predict_peak(g.model_preset, g.cluster_preset, g.shape, g.generation, g.features,
                         lc.parallel, k, Logged::kLastRank);
        if (gb) {
          anchors.push_back({absl::StrFormat("Llama3-70B SFT 32 H100 tp%d pp%d vp5 [%s]", e.tp,
                                             e.pp, e.modules_name),
                             *gb, e.measured_gb});
        }
      }
    }
  }
  {
    const struct {
      uint32_t modules;
      const char* name;
      double measured_gb;
    } moonlight[] = {
        {0, "", 36.618},
        {mp::kRecomputeCoreAttn, "core_attn", 36.614},
        {mp::kRecomputeMlaUpProj, "mla_up_proj", 35.902},
        {mp::kRecomputeMlaUpProj | mp::kRecomputeMlp, "mla_up_proj, mlp", 35.917},
        {mp::kRecomputeMoeAct, "moe_act", 35.941},
        {mp::kRecomputeLayerNorm | mp::kRecomputeMoeAct, "layernorm, moe_act", 35.949},
    };
    const std::vector<mt::StandaloneLadder> ladders = mt::MoonlightH100RecomputeLadders();
    if (!ladders.empty() && !ladders[0].steps.empty()) {
      const mt::StandaloneLadder& l = ladders[0];
      for (const auto& v : moonlight) {
        mp::Knobs k = l.steps[0].knobs;
        k.recompute = selective(v.modules);
        std::optional<double> gb =
            predict_peak(l.model_preset, l.cluster_preset, l.shape, l.generation,
                         l.steps[0].features, l.parallel, k, Logged::kPeakRank);
        if (gb) {
          anchors.push_back(
              {absl::StrFormat("Moonlight-16B-A3B 8 H100 tp2 ep8 [%s]", v.name), *gb,
               v.measured_gb});
        }
      }
    }
  }
  std::printf("\n== Memory anchors: measured peak allocated memory (Megatron-Bridge skill "
              "cards, outside runs.json) against the predicted peak of tensors (peak less the reserve and "
              "NCCL buffers), shipped constants ==\n");
  double abs_sum = 0, signed_sum = 0;
  for (const MemAnchor& a : anchors) {
    const double err = a.predicted_gb / a.measured_gb - 1;
    abs_sum += std::fabs(err);
    signed_sum += err;
    std::printf("  %-52s meas %6.1f GB  pred %6.1f GB  err %+6.1f%%\n", a.name.c_str(),
                a.measured_gb, a.predicted_gb, 100 * err);
  }
  if (!anchors.empty()) {
    std::printf("  %zu runs: mean |error| %.1f%%, signed %+.1f%% (pred / meas - 1: positive = "
                "the model over-counts)\n",
                anchors.size(), 100 * abs_sum / anchors.size(),
                100 * signed_sum / anchors.size());
  }
}

// Prints the public runs outside runs.json whose recipes set knobs the rows
// never vary (tests/internal/recipe_checks.h): checks, never fitted.
void PrintRecipeChecksOutsideRuns(const RowModel& row_model,
                                  const FittedConstants& default_constants) {
  std::printf("\n== Recipe checks outside runs.json (CUDA-graph scope, natural routing, FP8 "
              "attention), shipped constants ==\n");
  std::printf("  %-34s %9s %9s %8s %9s  %s\n", "run", "meas", "pred", "err", "attn s",
              "recipe / not modelled");
  // Per published set (verification cards, recipe index): each run's
  // error (tokens/s/GPU, pred / meas - 1) and its performance runs per
  // model and cluster, for the summaries.
  using Set = mt::RecipeCheck::Set;
  struct CardPerf {
    double meas = 0, pred = 0;
    mp::Precision precision = mp::Precision::kBf16;
  };
  struct SetResults {
    std::vector<std::pair<std::string, double>> errors;
    std::map<std::pair<std::string, std::string>, CardPerf> perf;
  };
  std::map<Set, SetResults> sets;
  for (const mt::RecipeCheck& c : mt::PublicRecipeChecks()) {
    absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(c.model_preset);
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(c.cluster_preset);
    if (!model.ok() || !cluster.ok()) {
      std::printf("  %s: preset missing\n", c.id.c_str());
      continue;
    }
    auto predict = [&](const mp::StackConstants& s) -> absl::StatusOr<mp::Prediction> {
      absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
          *model, *cluster, c.shape, row_model.Cost(*cluster, default_constants), s);
      if (!sm.ok()) return sm.status();
      const mp::NormalizedKnobs n = mp::NormalizeForMegatron(
          *model, c.parallel, {}, c.knobs, s.features.graph_full_iteration);
      return sm->Predict(c.parallel, n.knobs);
    };
    auto attention_s = [](const mp::Prediction& p) {
      for (const mp::Term& t : p.breakdown) {
        if (t.name == "attention.core") return t.seconds;
      }
      return 0.0;
    };
    mp::StackConstants s = row_model.Stack(c.generation, default_constants);
    s.features = c.features;
    const mp::StackConstants::UnfusedSinkLayers stack_sinks = s.unfused_sink_layers;
    if (c.fp8_attention) s.unfused_sink_layers = mp::StackConstants::UnfusedSinkLayers::kNone;
    absl::StatusOr<mp::Prediction> p = predict(s);
    if (!p.ok()) {
      std::printf("  %-34s %s\n", c.id.c_str(), std::string(p.status().message()).c_str());
      continue;
    }
    // TFLOP/s/GPU published: tokens with the prediction's FLOPs per token.
    const double meas = c.measured_tflops_per_gpu > 0
                            ? c.measured_tflops_per_gpu * p->tokens_per_sec_per_gpu /
                                  p->model_tflops_per_gpu
                            : c.measured_tokens_per_sec_per_gpu;
    if (c.set != Set::kOther) {
      SetResults& r = sets[c.set];
      r.errors.emplace_back(c.id, p->tokens_per_sec_per_gpu / meas - 1);
      // A card's performance run, or any recipe-index or release-tracker
      // run (all are).
      if (c.set == Set::kRecipeIndex || c.set == Set::kReleaseTracker ||
          absl::StrContains(c.id, "-card-performance")) {
        r.perf[{c.model_preset, c.cluster_preset}] = {meas, p->tokens_per_sec_per_gpu,
                                                      c.knobs.precision};
      }
    }
    std::printf("  %-34s %9.0f %9.0f %+7.1f%% %9.3f  %s%s%s%s\n", c.id.c_str(), meas,
                p->tokens_per_sec_per_gpu, 100 * (p->tokens_per_sec_per_gpu / meas - 1),
                attention_s(*p), c.recipe.c_str(), p->fits ? "" : " [does not fit]",
                c.not_modelled.empty() ? "" : " | not modelled: ", c.not_modelled.c_str());
    if (absl::GetFlag(FLAGS_verbose)) {
      std::printf("      step %.3f s\n", p->step_time_s);
      PrintBreakdown(*p);
    }
    // What-ifs: each setting the check's error depends on, changed alone
    // (graph scope and routing for the Qwen3-30B-A3B card, EP overlap for
    // every run that has it).
    auto what_if = [&](const char* label, const mp::StackConstants& ws, const mp::Knobs& wk) {
      absl::StatusOr<mp::Prediction> q = absl::UnknownError("no prediction");
      absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
          *model, *cluster, c.shape, row_model.Cost(*cluster, default_constants), ws);
      if (sm.ok()) {
        const mp::NormalizedKnobs n = mp::NormalizeForMegatron(
            *model, c.parallel, {}, wk, ws.features.graph_full_iteration);
        q = sm->Predict(c.parallel, n.knobs);
      }
      if (!q.ok()) return;
      std::printf("  %-34s %9s %9.0f %+7.1f%% %9.3f  what-if: %s\n", "", "",
                  q->tokens_per_sec_per_gpu, 100 * (q->tokens_per_sec_per_gpu / meas - 1),
                  attention_s(*q), label);
    };
    if (c.model_preset == "qwen3-30b-a3b") {
      if (c.knobs.cuda_graphs && s.features.graph_full_iteration) {
        // The 26.02-26.04 rule: the MoE layers' host work adds to the GPU
        // time instead of hiding under the other micro-batch's compute.
        mp::StackConstants ws = s;
        ws.moe_host_hidden_by_ep_overlap = false;
        what_if("MoE host time adds (no hiding)", ws, c.knobs);
      }
      if (c.knobs.cuda_graphs && !s.features.graph_full_iteration) {
        // What the run would gain from full-iteration graphs (the 26.06
        // host hiding), the rest of its recipe unchanged.
        mp::StackConstants ws = s;
        ws.features.graph_full_iteration = true;
        what_if("full-iteration graphs (MoE host time hidden, the 26.06 rule)", ws, c.knobs);
      }
      if (c.knobs.routing == mp::Routing::kNatural) {
        mp::Knobs wk = c.knobs;
        wk.routing = mp::Routing::kBalanced;
        what_if("forced balancing (imbalance 1)", s, wk);
      }
    }
    if (c.knobs.overlap.ep_comm) {
      mp::Knobs wk = c.knobs;
      wk.overlap.ep_comm = false;
      what_if("EP overlap off (nothing of the dispatch / combine hidden)", s, wk);
    }
    if (c.fp8_attention && stack_sinks != s.unfused_sink_layers) {
      // What-if: the sink layers as the stack's BF16 rows run them
      // (StackConstants::unfused_sink_layers), which the recipe's FP8
      // attention does not allow.
      s.unfused_sink_layers = stack_sinks;
      absl::StatusOr<mp::Prediction> q = predict(s);
      if (q.ok()) {
        std::printf("  %-34s %9s %9.0f %+7.1f%% %9.3f  what-if: sink layers as the stack's BF16 "
                    "rows (unfused sliding window)%s\n", "",
                    "", q->tokens_per_sec_per_gpu, 100 * (q->tokens_per_sec_per_gpu / meas - 1),
                    attention_s(*q), q->fits ? "" : " [does not fit]");
      }
    }
  }
  // Each published set as one out-of-sample figure: the verification
  // cards (every card of a model with a preset whose recipe the step
  // model can be told; the SFT-long-context and PEFT cards are not among
  // them), the recipe-index runs no knob ladder holds and the ModelZoo
  // GB200 / GB300 runs.
  for (const auto& [set, r] : sets) {
    if (r.errors.empty()) continue;
    double abs_sum = 0, signed_sum = 0;
    const std::pair<std::string, double>* worst = &r.errors.front();
    for (const auto& e : r.errors) {
      abs_sum += std::fabs(e.second);
      signed_sum += e.second;
      if (std::fabs(e.second) > std::fabs(worst->second)) worst = &e;
    }
    const double n = double(r.errors.size());
    std::printf("  %s: %zu runs, MAPE %.1f%%, signed %+.1f%%, worst %s %+.1f%%\n",
                mt::SetTitle(set), r.errors.size(), 100 * abs_sum / n, 100 * signed_sum / n,
                worst->first.c_str(), 100 * worst->second);
    // Same model, same precision (each cluster's own recipe layout).
    for (const auto& [key, gb300] : r.perf) {
      if (key.second != "gb300-nvl72") continue;
      auto gb200 = r.perf.find({key.first, "gb200-nvl72"});
      if (gb200 == r.perf.end() || gb200->second.precision != gb300.precision) continue;
      const double meas = gb300.meas / gb200->second.meas;
      const double pred = gb300.pred / gb200->second.pred;
      std::printf("    ratio GB300 / GB200 tokens/s/GPU, %-16s meas %.3f pred %.3f err %+.1f%%\n",
                  key.first.c_str(), meas, pred, 100 * (pred / meas - 1));
    }
  }
}

// Prints the scale anchors and series (tests/internal/scale_anchors.h):
// MLPerf Training v5.1 Llama 3.1 405B at 512 - 5,120 GPUs, v5.0 Llama 3.1
// 405B FP8 and v6.0 DeepSeek-V3 at 256 - 8,192 GPUs; measured step times
// from the published logs, predicted with the shipped constants; checks,
// never fitted.
void PrintScaleAnchorsAndSeries(const RowModel& row_model,
                                const FittedConstants& default_constants) {
  std::printf("\n== Scale anchors: MLPerf Training v5.1 Llama 3.1 405B, NVIDIA (mlcommons/"
              "training_results_v5.1; step = median over result_{0,1,2} of the median "
              "train_step_time, steps >= 5), shipped constants ==\n");
  auto print_header = [] {
    std::printf("  %-22s %-11s %5s %5s %4s %3s | %8s %8s %7s | %7s %7s %-17s | %6s %6s %6s %6s\n",
                "run", "cluster", "gpus", "gbs", "dp", "m", "meas s", "pred s", "err",
                "meas", "pred", "80% interval", "bubble", "dp exp", "pp exp", "optim");
  };
  print_header();
  struct Point {
    double meas_tps = 0, pred_tps = 0, meas_s = 0, pred_s = 0;
    int m = 0;
    bool ok = false;
    bool in_interval = false;  // measured inside the prediction's 80% interval
  };
  // Predicts each run of a series with the shipped constants (the step
  // model of its generation, its published layout and knobs) and prints
  // measured vs predicted.
  auto predict_series = [&](const std::vector<mt::ScaleAnchor>& anchors,
                            std::optional<mp::Routing> routing, bool quiet) {
    std::vector<Point> points;
    for (const mt::ScaleAnchor& run : anchors) {
      mt::ScaleAnchor a = run;
      if (routing.has_value()) a.knobs.routing = *routing;
      Point pt;
      pt.meas_s = mt::MeasuredStepSeconds(a);
      pt.meas_tps = mt::StepTokensPerSecPerGpu(a.shape, pt.meas_s);
      pt.m = mt::MicroBatchesPerReplica(a.shape, a.parallel);
      absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(a.model_preset);
      absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(a.cluster_preset);
      std::string name = a.system.substr(a.system.find('/') + 1);
      name = name.substr(0, name.find("_ngc"));
      if (!model.ok() || !cluster.ok()) {
        std::printf("  %-22s preset missing\n", name.c_str());
        points.push_back(pt);
        continue;
      }
      mp::StackConstants stack = row_model.Stack(a.generation, default_constants);
      stack.features.graph_full_iteration = a.graph_full_iteration;
      absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
          *model, *cluster, a.shape, row_model.Cost(*cluster, default_constants), stack);
      absl::StatusOr<mp::Prediction> p = absl::UnknownError("not predicted");
      if (sm.ok()) {
        const mp::NormalizedKnobs n = mp::NormalizeForMegatron(
            *model, a.parallel, {}, a.knobs, stack.features.graph_full_iteration);
        p = sm->Predict(a.parallel, n.knobs);
      } else {
        p = sm.status();
      }
      if (!p.ok()) {
        std::printf("  %-22s %s\n", name.c_str(), std::string(p.status().message()).c_str());
        points.push_back(pt);
        continue;
      }
      double bubble = 0, dp_exposed = 0, pp_exposed = 0, optimizer = 0;
      for (const mp::Term& t : p->breakdown) {
        if (t.kind == mp::TermKind::kPipelineBubble) bubble += t.seconds;
        if (t.kind == mp::TermKind::kCommDpExposed) dp_exposed += t.seconds;
        if (t.kind == mp::TermKind::kCommPpExposed) pp_exposed += t.seconds;
        if (t.kind == mp::TermKind::kOptimizer) optimizer += t.seconds;
      }
      pt.pred_s = p->step_time_s;
      pt.pred_tps = p->tokens_per_sec_per_gpu;
      pt.ok = true;
      pt.in_interval = InsideInterval(p->interval, pt.meas_tps);
      points.push_back(pt);
      if (quiet) continue;
      const std::string band = absl::StrFormat(
          "%.0f-%.0f%s", p->interval.tokens_per_sec_per_gpu_low,
          p->interval.tokens_per_sec_per_gpu_high, pt.in_interval ? "" : " out");
      std::printf("  %-22s %-11s %5d %5d %4d %3d | %8.3f %8.3f %+6.1f%% | %7.1f %7.1f %-17s | "
                  "%6.3f %6.3f %6.3f %6.3f%s\n",
                  name.c_str(), a.cluster_preset.c_str(), a.shape.gpus, a.shape.global_batch,
                  mp::ResolvedDp(a.shape, a.parallel), pt.m, pt.meas_s, pt.pred_s,
                  100 * (pt.pred_tps / pt.meas_tps - 1), pt.meas_tps, pt.pred_tps, band.c_str(),
                  bubble, dp_exposed, pp_exposed, optimizer, p->fits ? "" : " [does not fit]");
      if (absl::GetFlag(FLAGS_verbose)) {
        PrintBreakdown(*p);
      }
    }
    return points;
  };
  auto print_coverage = [](const std::vector<Point>& pts) {
    int in = 0, n = 0;
    for (const Point& pt : pts) {
      if (!pt.ok) continue;
      ++n;
      in += pt.in_interval ? 1 : 0;
    }
    std::printf("  measured inside the prediction's 80%% interval: %d / %d\n", in, n);
  };
  const std::vector<mt::ScaleAnchor> anchors = mt::MlperfLlama405bAnchors();
  std::vector<Point> points = predict_series(anchors, std::nullopt, false);
  print_coverage(points);
  std::printf("  (err = predicted / measured tokens/s/GPU - 1; meas, pred in tokens/s/GPU; "
              "model terms in s per step)\n  recipe: %s\n  not modelled: %s\n",
              anchors.front().recipe.c_str(), anchors.front().not_modelled.c_str());
  // Per-GPU throughput ratios: GB200 2,560 / 512 and 5,120 / 512 (the
  // same TP4 PP8 VP8 CP2 layout), GB300 / GB200 at 512 (each its own TP).
  // Per-GPU throughput ratio of run i of series a over run j of series b,
  // measured and predicted.
  auto ratio_of = [](const std::vector<Point>& a, size_t i, const std::vector<Point>& b, size_t j,
                     const char* what) {
    if (i >= a.size() || j >= b.size() || !a[i].ok || !b[j].ok) return;
    const double meas = a[i].meas_tps / b[j].meas_tps;
    const double pred = a[i].pred_tps / b[j].pred_tps;
    std::printf("  ratio %-38s meas %.3f pred %.3f err %+6.1f%%\n", what, meas, pred,
                100 * (pred / meas - 1));
  };
  auto ratio = [&](size_t num, size_t den, const char* what) {
    ratio_of(points, num, points, den, what);
  };
  // Mean |error| and mean signed error of runs [from, to) of a series.
  auto series_error = [](const std::vector<Point>& pts, size_t from, size_t to) {
    double abs_sum = 0, signed_sum = 0;
    int n = 0;
    for (size_t i = from; i < to && i < pts.size(); ++i) {
      if (!pts[i].ok) continue;
      const double e = pts[i].pred_tps / pts[i].meas_tps - 1;
      abs_sum += std::abs(e);
      signed_sum += e;
      ++n;
    }
    return std::pair<double, double>{n ? abs_sum / n : 0, n ? signed_sum / n : 0};
  };
  ratio(1, 0, "GB200 2,560 / 512 tokens/s/GPU");
  ratio(2, 0, "GB200 5,120 / 512 tokens/s/GPU");
  ratio(3, 0, "GB300 / GB200 at 512 tokens/s/GPU");
  // step = m x t + K from the 512 and 2,560 runs (same layout), measured
  // and predicted, and what that split says of the 5,120 run.
  if (points.size() >= 3 && points[0].ok && points[1].ok && points[2].ok) {
    const mt::StepSplit ms =
        mt::SplitStep(points[0].m, points[0].meas_s, points[1].m, points[1].meas_s);
    const mt::StepSplit ps =
        mt::SplitStep(points[0].m, points[0].pred_s, points[1].m, points[1].pred_s);
    std::printf(
        "  step = m x t + K (GB200 512 and 2,560): meas t %.4f s K %.3f s, pred t "
        "%.4f s K %.3f s; at 5,120 (m %d) meas K = %.3f s\n",
        ms.per_micro_batch_s, ms.per_step_s, ps.per_micro_batch_s, ps.per_step_s, points[2].m,
        points[2].meas_s - points[2].m * ms.per_micro_batch_s);
  }
  // --- MLPerf Training v5.0 Llama 3.1 405B at FP8: GB200 256 - 2,496 and
  // H100 512 - 8,192 (tests/internal/scale_anchors.h), never fitted: dense
  // FP8 on both GPU generations, from a source none of the constants saw.
  {
    const std::vector<Point> nvfp4 = points;  // the v5.1 series above
    std::printf(
        "\n== Scale series: MLPerf Training v5.0 Llama 3.1 405B, FP8 (training_results_"
        "v5.0; step as above), shipped constants ==\n");
    print_header();
    const std::vector<mt::ScaleAnchor> v50 = mt::MlperfV50Llama405bAnchors();
    const std::vector<Point> fp8 = predict_series(v50, std::nullopt, false);
    print_coverage(fp8);
    std::printf(
        "  (GB200 TP4 PP8 VP8 CP2, H100 TP8 PP8 VP8 CP2; m = micro-batches per replica)\n"
        "  recipe: %s\n  not modelled: %s\n",
        v50.front().recipe.c_str(), v50.front().not_modelled.c_str());
    for (const auto& [label, from, to] :
         {std::tuple<const char*, size_t, size_t>{"GB200 (7 runs)", 0, 7},
          std::tuple<const char*, size_t, size_t>{"H100 (5 runs)", 7, 12}}) {
      const auto e = series_error(fp8, from, to);
      std::printf("  %-15s MAPE %5.1f%% (signed %+5.1f%%)\n", label, 100 * e.first,
                  100 * e.second);
    }
    ratio_of(fp8, 6, fp8, 2, "GB200 carina 2,496 / 512 tokens/s/GPU");
    ratio_of(fp8, 11, fp8, 7, "H100 8,192 / 512 tokens/s/GPU");
    ratio_of(fp8, 2, fp8, 7, "GB200 / H100 at 512 tokens/s/GPU");
    // The same cluster (NVIDIA tyche, 512 GB200), layout and rank order a
    // round apart: v5.1 NVFP4 (NeMo 25.09, gbs 1152) over v5.0 FP8 (NeMo
    // 25.04, gbs 896) -- precision and software change together.
    ratio_of(nvfp4, 0, fp8, 1, "NVFP4 v5.1 / FP8 v5.0, tyche 512 GB200");
    for (const auto& [label, i, j] :
         {std::tuple<const char*, size_t, size_t>{"GB200 carina 512 and 2,496", 2, 6},
          std::tuple<const char*, size_t, size_t>{"H100 512 and 8,192", 7, 11}}) {
      if (j >= fp8.size() || !fp8[i].ok || !fp8[j].ok) continue;
      const mt::StepSplit ms = mt::SplitStep(fp8[i].m, fp8[i].meas_s, fp8[j].m, fp8[j].meas_s);
      const mt::StepSplit ps = mt::SplitStep(fp8[i].m, fp8[i].pred_s, fp8[j].m, fp8[j].pred_s);
      std::printf("  step = m x t + K (%s): meas t %.4f s K %.3f s, pred t %.4f s K %.3f s\n",
                  label, ms.per_micro_batch_s, ms.per_step_s, ps.per_micro_batch_s,
                  ps.per_step_s);
    }
  }
  // --- MLPerf Training v6.0 DeepSeek-V3 671B, GB200 512 - 8,192 and GB300
  // 256 - 8,192 (tests/internal/scale_anchors.h): the strong-scaling and
  // GB300 / GB200 evidence, never fitted.
  std::printf("\n== Scale series: MLPerf Training v6.0 DeepSeek-V3 671B (training_results_v6.0; "
              "step = median train_step_time of the logged steps of result_0), real data, "
              "natural routing, shipped constants ==\n");
  print_header();
  const std::vector<mt::ScaleAnchor> dsv3 = mt::MlperfDeepSeekV3Anchors();
  points = predict_series(dsv3, std::nullopt, false);
  print_coverage(points);
  std::printf("  (GB200 TP2 PP4 VP4 EP32 recompute mlp; GB300 TP1 PP4 VP4 EP32; m = micro-batches "
              "per replica)\n  recipe: %s\n  not modelled: %s\n",
              dsv3.front().recipe.c_str(), dsv3.front().not_modelled.c_str());
  const std::vector<Point> balanced = predict_series(dsv3, mp::Routing::kBalanced, true);
  for (const auto& [label, from, to] :
       {std::tuple<const char*, size_t, size_t>{"GB200 (4 runs)", 0, 4},
        std::tuple<const char*, size_t, size_t>{"GB300 (5 runs)", 4, 9}}) {
    const auto nat = series_error(points, from, to);
    const auto bal = series_error(balanced, from, to);
    std::printf("  %-15s MAPE %5.1f%% (signed %+5.1f%%) natural routing; %5.1f%% (%+5.1f%%) "
                "if priced forced-balanced\n",
                label, 100 * nat.first, 100 * nat.second, 100 * bal.first, 100 * bal.second);
  }
  ratio(3, 0, "GB200 8,192 / 512 tokens/s/GPU");
  ratio(8, 4, "GB300 8,192 / 256 tokens/s/GPU");
  ratio(5, 0, "GB300 / GB200 at 512 tokens/s/GPU");
  ratio(8, 3, "GB300 / GB200 at 8,192 tokens/s/GPU");
  // step = m x t + K over each hardware's extremes (same layout), then
  // within one operator's runs: the GB200 runs with few micro-batches
  // (2,048 and 8,192: m 60 and 16), NVIDIA's GB300 theia (256 and 512)
  // and CoreWeave's GB300 (2,048 and 8,192) -- the GB300 extremes span
  // two clusters.
  for (const auto& [label, i, j] :
       {std::tuple<const char*, size_t, size_t>{"GB200 512 and 8,192", 0, 3},
        std::tuple<const char*, size_t, size_t>{"GB300 256 and 8,192", 4, 8},
        std::tuple<const char*, size_t, size_t>{"GB200 2,048 and 8,192", 1, 3},
        std::tuple<const char*, size_t, size_t>{"GB300 NVIDIA theia 256 and 512", 4, 5},
        std::tuple<const char*, size_t, size_t>{"GB300 CoreWeave 2,048 and 8,192", 6, 8}}) {
    if (j >= points.size() || !points[i].ok || !points[j].ok) continue;
    const mt::StepSplit ms =
        mt::SplitStep(points[i].m, points[i].meas_s, points[j].m, points[j].meas_s);
    const mt::StepSplit ps =
        mt::SplitStep(points[i].m, points[i].pred_s, points[j].m, points[j].pred_s);
    std::printf("  step = m x t + K (%s): meas t %.4f s K %.3f s, pred t %.4f s K %.3f s\n",
                label, ms.per_micro_batch_s, ms.per_step_s, ps.per_micro_batch_s,
                ps.per_step_s);
  }
}

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_runs);
  if (path.empty()) {
    std::fprintf(stderr, "usage: validate --runs runs.json [--stack S]\n");
    return 2;
  }
  absl::StatusOr<json> parsed = ReadJsonArray(path);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const json rows = *std::move(parsed);
  const std::string stack = absl::GetFlag(FLAGS_stack);
  const std::string recompute_from = absl::GetFlag(FLAGS_recompute_from);
  if (recompute_from != "rule" && recompute_from != "recipe") {
    std::fprintf(stderr, "--recompute_from: '%s' is neither 'rule' nor 'recipe'\n",
                 recompute_from.c_str());
    return 2;
  }
  const std::string graphs_from = absl::GetFlag(FLAGS_graphs_from);
  if (graphs_from != "stack" && graphs_from != "recipe") {
    std::fprintf(stderr, "--graphs_from: '%s' is neither 'stack' nor 'recipe'\n",
                 graphs_from.c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_check) &&
      (!absl::GetFlag(FLAGS_cv) || !absl::GetFlag(FLAGS_set).empty() ||
       stack != "megatron-core-2026" || !absl::GetFlag(FLAGS_row).empty() ||
       recompute_from != "rule" || graphs_from != "stack" ||
       absl::GetFlag(FLAGS_heldout_runs).empty())) {
    std::fprintf(stderr,
                 "--check needs the cross-validation on every megatron-core-2026 row and the "
                 "held-out rows: --heldout_runs, and no --cv=false, --set, --row, --stack, "
                 "--recompute_from or --graphs_from\n");
    return 2;
  }
  if (recompute_from == "recipe") {
    std::printf(
        "recompute: each row's recipe's (kRecipeRecompute, Megatron-Bridge v0.3.0 - "
        "v0.6.0), not the headline's rule; the constants are refit per fold as usual, "
        "the 'shipped' figures keep the headline's constants\n");
    for (const RecipeRecomputeFact& f : mt::RecipeRecomputeFacts()) {
      mp::Recompute r;
      r.mode = f.mode;
      r.modules = f.modules;
      std::printf("  %-16s %-12s %-26s %s\n", f.model_preset,
                  f.cluster_preset != nullptr ? f.cluster_preset : "every GPU",
                  RecomputeText(r).c_str(), f.source);
    }
    std::printf("\n");
  }
  absl::StatusOr<Overrides> overrides = ParseOverrides(absl::GetFlag(FLAGS_set));
  if (!overrides.ok()) {
    std::fprintf(stderr, "%s\n", std::string(overrides.status().message()).c_str());
    return 2;
  }
  const std::vector<mt::FitParameter> fit_params = PinnedFitParameters(*overrides);
  const std::vector<double> defaults = mt::Priors(fit_params);
  const FittedConstants default_constants = FromValues(defaults);
  const RowModel row_model(*overrides);
  const std::string only = absl::GetFlag(FLAGS_row);

  // --- Every parseable row, predicted with the shipped constants; the
  // selected stack's rows with a measured tokens/s are the validation set.
  std::vector<Evaluated> all;
  std::vector<RowSpec> specs;
  std::vector<RowSetup> setups;
  std::vector<double> predicted;
  int skipped = 0;
  for (const json& row : rows) {
    const std::string id = StrOr(row, "id", "?");
    if (!only.empty() && id.find(only) == std::string::npos) continue;
    const bool selected = stack == "all" || StrOr(row, "stack", "") == stack;
    auto skip = [&](const std::string& why) {
      if (!selected) return;
      std::printf("SKIP %-70s %s\n", id.c_str(), why.c_str());
      ++skipped;
    };
    absl::StatusOr<RowSpec> spec = ParseRow(row);
    if (!spec.ok()) {
      skip(std::string(spec.status().message()));
      continue;
    }
    absl::StatusOr<Evaluated> ev =
        EvaluateRow(*std::move(spec), row_model, default_constants, selected && !only.empty());
    if (!ev.ok()) {
      skip(std::string(ev.status().message()));
      continue;
    }
    all.push_back(*ev);
    if (!selected) continue;
    if (!ev->spec.measured_tokens) {
      skip("no numeric tokens_per_sec_per_gpu");
      continue;
    }
    const mp::Prediction& pred = ev->pred;
    const double measured = *ev->spec.measured_tokens;
    const double err = (pred.tokens_per_sec_per_gpu - measured) / measured;
    std::printf("%-36s %-71s pred %8.0f meas %8.0f err %+6.1f%% mem %5.1f GiB%s rc=%s\n",
                id.substr(0, 36).c_str(), ev->spec.label.c_str(), pred.tokens_per_sec_per_gpu,
                measured, 100 * err, pred.peak_memory_bytes / (1024.0 * 1024 * 1024),
                pred.fits ? "" : " (does not fit)",
                RecomputeText(ev->setup.knobs.recompute).c_str());
    if (absl::GetFlag(FLAGS_verbose)) {
      for (const mp::Term& t : pred.breakdown) {
        std::printf("      %-32s %-22s %9.3f s %s\n", t.name.c_str(),
                    std::string(mp::TermKindName(t.kind)).c_str(), t.seconds,
                    std::string(mp::CostSourceName(t.source)).c_str());
      }
      std::printf("      step %.3f s, model TFLOPS/GPU %.0f, MFU %.3f\n", pred.step_time_s,
                  pred.model_tflops_per_gpu, pred.mfu);
    }
    specs.push_back(ev->spec);
    setups.push_back(ev->setup);
    predicted.push_back(pred.tokens_per_sec_per_gpu);
  }
  if (specs.empty()) {
    std::printf("no rows of stack '%s'\n", stack.c_str());
    return 1;
  }
  std::vector<double> measured;
  std::vector<double> errors;
  for (size_t i = 0; i < specs.size(); ++i) {
    measured.push_back(*specs[i].measured_tokens);
    errors.push_back((predicted[i] - measured[i]) / measured[i]);
  }
  const mt::ErrorSummary in_sample = mt::Summarize(errors);
  size_t worst = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (std::abs(errors[i]) > std::abs(errors[worst])) worst = i;
  }
  PrintMemoryFits(all);
  PrintPublishedLayoutOnly(specs);
  PrintRecipeChecksThroughPredict();
  if (const std::string heldout = absl::GetFlag(FLAGS_heldout_runs); !heldout.empty()) {
    absl::StatusOr<json> heldout_rows = ReadJsonArray(heldout);
    if (!heldout_rows.ok()) {
      std::fprintf(stderr, "--heldout_runs: %s\n",
                   std::string(heldout_rows.status().message()).c_str());
      return 2;
    }
    if (const std::string dup = RowAlsoIn(*heldout_rows, rows); !dup.empty()) {
      std::fprintf(stderr, "--heldout_runs: %s is also in %s; held-out rows must be new\n",
                   dup.c_str(), path.c_str());
      return 2;
    }
    PrintHeldOutRows(heldout, *heldout_rows, row_model, default_constants, specs, predicted);
  }
  std::printf("\nstack %s: %zu rows predicted, %d skipped\n", stack.c_str(), specs.size(),
              skipped);
  std::printf("MAPE %.1f%%; rows > 10%%: %d; rows > 25%%: %d\n", 100 * in_sample.mape,
              in_sample.over_10, in_sample.over_25);
  std::printf("worst: %s (%s) err %+.1f%%\n", specs[worst].id.c_str(),
              specs[worst].label.c_str(), 100 * errors[worst]);

  // Rows with identical inputs whose measurements no single prediction can
  // fit within a band: each such group forces at least one row beyond it.
  std::vector<mt::MeasuredRow> measured_rows;
  for (size_t i = 0; i < specs.size(); ++i) {
    measured_rows.push_back({specs[i].id, specs[i].inputs, measured[i]});
  }
  for (const double band : {0.25, 0.10}) {
    const std::vector<mt::Contradiction> groups = mt::FindContradictions(measured_rows, band);
    std::printf("contradictory inputs beyond %.0f%%: %zu group(s); at least %zu row(s) "
                "> %.0f%% for any model\n",
                100 * band, groups.size(), groups.size(), 100 * band);
    for (const mt::Contradiction& g : groups) {
      std::printf("  same inputs, measured %.0f .. %.0f tokens/s/GPU: every prediction is "
                  ">= %.1f%% off one of them (%s)\n",
                  g.low, g.high, 100 * g.best_error, specs[g.rows.front()].label.c_str());
      for (size_t i : g.rows) {
        std::printf("    %-70s meas %8.0f pred %8.0f err %+6.1f%%\n", specs[i].id.c_str(),
                    measured[i], predicted[i], 100 * errors[i]);
      }
    }
  }

  // --- Cross-validation of the constants set from data.
  std::vector<double> gpu_out_predicted;  // leave-one-GPU-out, per spec
  if (absl::GetFlag(FLAGS_cv) && specs.size() > 1) {
    // The model under given constant values, through the fast path (same
    // numbers as Predict: step_model_quick_equivalence_test).
    const mt::RowPredictor predict = [&](const std::vector<double>& values,
                                         size_t i) -> std::optional<double> {
      absl::StatusOr<mp::StepModel> sm = row_model.Model(specs[i], FromValues(values));
      if (!sm.ok()) return std::nullopt;
      const mp::Estimate e = sm->Quick(specs[i].parallel, setups[i].knobs);
      if (e.reason != mp::Infeasibility::kNone) return std::nullopt;
      return e.tokens_per_sec_per_gpu;
    };
    std::vector<size_t> all_rows(specs.size());
    for (size_t i = 0; i < all_rows.size(); ++i) all_rows[i] = i;
    const std::vector<double> fitted_all =
        mt::FitOnRows(fit_params, predict, measured, all_rows);
    std::printf("\n== Constants set from data (rule: grid over the plausible range, coordinate "
                "descent to the least training MAPE, ties keep the prior) ==\n");
    std::printf("  %-28s %10s %18s %14s\n", "constant", "shipped", "grid", "fit, all rows");
    for (size_t k = 0; k < fit_params.size(); ++k) {
      const mt::FitParameter& p = fit_params[k];
      const std::string grid =
          p.grid.empty() ? std::string("pinned (--set)")
                         : absl::StrFormat("%g .. %g (%zu)", p.grid.front(), p.grid.back(),
                                           p.grid.size());
      std::printf("  %-28s %10g %18s %14g\n", p.name.c_str(), p.prior, grid.c_str(),
                  fitted_all[k]);
    }
    const bool shipped_is_fit = fitted_all == defaults;
    if (stack == "megatron-core-2026") {
      Criteria().Require(shipped_is_fit,
                         "shipped constants differ from the rule's choice on all rows");
    }
    std::printf("  shipped constants %s the rule's choice on all rows of this stack%s\n",
                shipped_is_fit ? "equal" : "DIFFER FROM",
                stack == "megatron-core-2026" ? "" : " (they are set on megatron-core-2026)");
    std::printf("\n== Errors, stack %s (tokens/s/GPU) ==\n", stack.c_str());
    PrintSummaryLine("in-sample, shipped constants", in_sample);
    std::vector<double> refit_errors;
    for (size_t i : all_rows) {
      const std::optional<double> p = predict(fitted_all, i);
      if (p) refit_errors.push_back((*p - measured[i]) / measured[i]);
    }
    PrintSummaryLine("in-sample, constants refit on all rows", mt::Summarize(refit_errors));
    struct Scheme {
      const char* name;
      std::string (*key)(const RowSpec&);
    };
    const Scheme schemes[] = {{"source", SourceKey},
                              {"container", ContainerKey},
                              {"GPU", GpuKey}};
    std::vector<std::pair<std::string, mt::CrossValidation>> results;
    for (const Scheme& scheme : schemes) {
      std::vector<std::string> groups;
      for (const RowSpec& r : specs) groups.push_back(scheme.key(r));
      results.emplace_back(scheme.name,
                           mt::LeaveOneGroupOut(fit_params, predict, measured, groups));
      PrintSummaryLine(absl::StrFormat("leave-one-%s-out (%zu folds)", scheme.name,
                                       results.back().second.folds.size())
                           .c_str(),
                       results.back().second.pooled);
      Criteria().Require(results.back().second.pooled.mape <= kMaxCvMape,
                         absl::StrFormat("leave-one-%s-out MAPE %.1f%% > %.0f%%", scheme.name,
                                         100 * results.back().second.pooled.mape,
                                         100 * kMaxCvMape));
    }
    // Leave-one-model-out: not one of issue 16's three schemes (so no
    // criterion), the direct check that no constant is a model's own: each
    // model's rows priced with the constants the rule sets on the other
    // models' rows.
    std::vector<std::string> model_groups;
    for (const RowSpec& r : specs) model_groups.push_back(r.model_preset);
    const mt::CrossValidation model_cv =
        mt::LeaveOneGroupOut(fit_params, predict, measured, model_groups);
    PrintSummaryLine(absl::StrFormat("leave-one-model-out (%zu folds)", model_cv.folds.size())
                         .c_str(),
                     model_cv.pooled);
    // The same pooled figures without the rows of contradictory groups
    // (identical inputs measured > 25% apart): no model predicts both.
    {
      std::vector<bool> contradictory(specs.size(), false);
      for (const mt::Contradiction& g : mt::FindContradictions(measured_rows, 0.25)) {
        for (size_t i : g.rows) contradictory[i] = true;
      }
      for (const auto& [name, cv] : results) {
        std::vector<double> kept;
        for (size_t i = 0; i < specs.size(); ++i) {
          if (!contradictory[i] && cv.held_out_error[i]) kept.push_back(*cv.held_out_error[i]);
        }
        PrintSummaryLine(absl::StrFormat("leave-one-%s-out, w/o contradictory rows", name).c_str(),
                         mt::Summarize(kept));
      }
    }
    std::printf("\n== Folds: held-out group, its rows, held-out errors, constants fitted on "
                "the other groups (%s) ==\n",
                absl::StrJoin(fit_params, " ",
                              [](std::string* out, const mt::FitParameter& p) {
                                out->append(p.name);
                              })
                    .c_str());
    auto print_folds = [](const std::string& name, const mt::CrossValidation& cv) {
      for (const mt::Fold& f : cv.folds) {
        std::printf("  %-9s %-28s n %2d  MAPE %5.1f%%  signed %+6.1f%%  > 25%%: %d  train "
                    "MAPE %4.1f%%  | %s\n",
                    name.c_str(), f.held_out.substr(0, 28).c_str(), f.test_error.rows,
                    100 * f.test_error.mape, 100 * f.test_error.mean_signed,
                    f.test_error.over_25, 100 * f.train_error.mape,
                    FormatValues(f.values).c_str());
      }
    };
    for (const auto& [name, cv] : results) print_folds(name, cv);
    print_folds("model", model_cv);
    std::printf("\n== Held-out rows beyond 20%% (scheme: error) ==\n");
    for (size_t i = 0; i < specs.size(); ++i) {
      std::string line;
      bool any = false;
      for (const auto& [name, cv] : results) {
        const std::optional<double>& e = cv.held_out_error[i];
        any = any || (e && std::abs(*e) > 0.20);
        line += absl::StrFormat("  %s %+6.1f%%", name, e ? 100 * *e : 0.0);
      }
      if (any) std::printf("  %-64s%s\n", specs[i].id.substr(0, 64).c_str(), line.c_str());
    }
    // --- 80% intervals (planner/prediction_interval.h): the split-conformal
    // ranks (mt::QuantilesOf) of the leave-one-container-out errors per class
    // (dense, MoE), and of the other-stack rows' errors for settings no
    // published row measured.
    {
      const mt::CrossValidation& container_cv = results[1].second;
      std::vector<int> classes;
      for (const RowSpec& r : specs) classes.push_back(r.model.IsMoe() ? 1 : 0);
      std::vector<double> errs;
      std::vector<int> err_classes;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (!container_cv.held_out_error[i]) continue;
        errs.push_back(*container_cv.held_out_error[i]);
        err_classes.push_back(classes[i]);
      }
      const double cov = mp::kIntervalCoverage;
      constexpr int kMinClassRows = 8;
      const std::vector<mt::ErrorQuantiles> q =
          mt::ClassQuantiles(errs, err_classes, 2, cov, kMinClassRows);
      std::vector<double> other_errors;
      for (const Evaluated& e : all) {
        if (stack != "megatron-core-2026") break;  // the shipped table's basis
        if (e.spec.stack == stack || !e.spec.measured_tokens) continue;
        other_errors.push_back(e.pred.tokens_per_sec_per_gpu / *e.spec.measured_tokens - 1);
      }
      const mt::ErrorQuantiles wide = other_errors.empty()
                                          ? mt::ErrorQuantiles{}
                                          : mt::QuantilesOf(other_errors, cov);
      std::printf("\n== 80%% intervals: errors at the split-conformal ranks (low high rows) ==\n");
      std::printf("  dense      %+.4f %+.4f %d  (leave-one-container-out)\n", q[0].q_lo,
                  q[0].q_hi, q[0].rows);
      std::printf("  moe        %+.4f %+.4f %d  (leave-one-container-out)\n", q[1].q_lo,
                  q[1].q_hi, q[1].rows);
      std::printf("  unmeasured %+.4f %+.4f %d  (other-stack rows, shipped constants)\n",
                  wide.q_lo, wide.q_hi, wide.rows);
      const mp::IntervalTable& shipped = mp::ShippedIntervalTable();
      auto same = [](const mp::ErrorPercentiles& a, const mt::ErrorQuantiles& b) {
        return std::abs(a.q10 - b.q_lo) < 1e-4 && std::abs(a.q90 - b.q_hi) < 1e-4 &&
               a.rows == b.rows;
      };
      const bool table_is_shipped =
          same(shipped.dense, q[0]) && same(shipped.moe, q[1]) &&
          (stack != "megatron-core-2026" || same(shipped.unmeasured, wide));
      std::printf("  shipped table (planner/prediction_interval.cc) %s\n",
                  table_is_shipped ? "equals these" : "DIFFERS from these");
      // The envelope's micro-batch bounds (prediction_interval.h): the most
      // tokens per micro-batch among these rows, per class.
      double most_tokens[2] = {0, 0};
      for (const RowSpec& r : specs) {
        double& m = most_tokens[r.model.IsMoe() ? 1 : 0];
        m = std::max(m, double(r.parallel.mbs) * double(r.shape.seq_len));
      }
      const bool envelope_is_shipped =
          most_tokens[0] == mp::kMeasuredDenseMicroBatchTokens &&
          most_tokens[1] == mp::kMeasuredMoeMicroBatchTokens;
      std::printf("  tokens per micro-batch, at most: dense %.0f, moe %.0f; the envelope's "
                  "bounds (planner/prediction_interval.h) %s\n",
                  most_tokens[0], most_tokens[1],
                  envelope_is_shipped ? "equal these" : "DIFFER from these");
      if (stack == "megatron-core-2026") {
        Criteria().Require(table_is_shipped && envelope_is_shipped,
                           "shipped interval table or envelope differs from the rows");
      }
      for (size_t k = 0; k < 3; ++k) {
        const char* name = results[k].first.c_str();
        std::vector<std::string> groups;
        for (const RowSpec& r : specs) {
          groups.push_back(k == 0 ? SourceKey(r) : k == 1 ? ContainerKey(r) : GpuKey(r));
        }
        const mt::Coverage c = mt::NestedIntervalCoverage(
            fit_params, predict, measured, groups, classes, 2, cov, kMinClassRows);
        std::string per_fold;
        for (const mt::CoverageFold& f : c.folds) {
          per_fold += absl::StrFormat(" %s %d/%d;", f.held_out.substr(0, 14), f.covered, f.rows);
        }
        std::printf("  coverage on held-out folds, leave-one-%s-out (nested): %d / %d = %.0f%%  |%s\n",
                    name, c.covered, c.rows, 100 * c.fraction(), per_fold.c_str());
        Criteria().Require(
            c.fraction() >= kMinCoverage && c.fraction() <= kMaxCoverage,
            absl::StrFormat("80%% interval coverage, leave-one-%s-out: %d / %d = %.1f%%, "
                            "outside %.0f-%.0f%%",
                            name, c.covered, c.rows, 100 * c.fraction(), 100 * kMinCoverage,
                            100 * kMaxCoverage));
      }
      if (!other_errors.empty()) {
        // The class intervals where the model was not tuned: why the
        // unmeasured ones are wider.
        int inside = 0;
        for (double e : other_errors) inside += e >= q[1].q_lo && e <= q[1].q_hi ? 1 : 0;
        std::printf("  other-stack rows inside the MoE-class interval: %d / %zu = %.0f%% (hence "
                    "the wider interval for unmeasured settings)\n",
                    inside, other_errors.size(), 100.0 * inside / other_errors.size());
      }
    }
    const mt::CrossValidation& gpu_cv = results.back().second;
    for (size_t i = 0; i < specs.size(); ++i) {
      gpu_out_predicted.push_back(
          gpu_cv.held_out_error[i] ? measured[i] * (1 + *gpu_cv.held_out_error[i]) : 0.0);
    }
  }

  // --- Layout ranking: groups of rows that differ only in layout.
  {
    std::vector<const RowSpec*> selected_rows;
    for (const RowSpec& r : specs) selected_rows.push_back(&r);
    const mt::RankingSummary ranking = PrintRanking(
        absl::StrFormat("stack %s, shipped constants", stack).c_str(), selected_rows, predicted,
        true);
    if (stack == "megatron-core-2026") {
      Criteria().Require(ranking.pairs > 0 && ranking.right >= kMinLayoutOrder * ranking.pairs,
                         absl::StrFormat("layout order %d / %d pairs, under %.0f%%",
                                         ranking.right, ranking.pairs, 100 * kMinLayoutOrder));
    }
    if (!gpu_out_predicted.empty()) {
      PrintRanking(absl::StrFormat("stack %s, leave-one-GPU-out constants", stack).c_str(),
                   selected_rows, gpu_out_predicted, false);
    }
    std::vector<const RowSpec*> any_stack;
    std::vector<double> any_predicted;
    for (const Evaluated& e : all) {
      if (!e.spec.measured_tokens) continue;
      any_stack.push_back(&e.spec);
      any_predicted.push_back(e.pred.tokens_per_sec_per_gpu);
    }
    PrintRanking("every stack (other stacks predicted as 26.02), shipped constants", any_stack,
                 any_predicted, true);
    PrintGenerationPairs(absl::StrFormat("stack %s, shipped constants", stack).c_str(),
                         selected_rows, predicted);
    if (!gpu_out_predicted.empty()) {
      PrintGenerationPairs(absl::StrFormat("stack %s, leave-one-GPU-out constants", stack).c_str(),
                           selected_rows, gpu_out_predicted);
    }
  }

  // Every ladder's measured and predicted step gains, for the summary line.
  std::vector<mt::LadderGains> ladder_gains;
  // --- Knob ladder: DeepSeek-V3 on 256 GB200, one named optimization per
  // step (tests/internal/knob_ladder.h), each step predicted with its knobs.
  {
    const std::vector<mt::LadderStep> steps = mt::DeepSeekV3Gb200Ladder();
    std::vector<double> meas, pred;
    std::vector<const mt::LadderStep*> found;
    for (const mt::LadderStep& step : steps) {
      const Evaluated* row = nullptr;
      for (const Evaluated& e : all) {
        if (e.spec.id == step.id) row = &e;
      }
      if (row == nullptr || !row->spec.measured_tflops) continue;
      absl::StatusOr<mp::StepModel> sm =
          row_model.Model(row->spec, default_constants, step.features);
      if (!sm.ok()) continue;
      absl::StatusOr<mp::Prediction> p = sm->Predict(row->spec.parallel, step.knobs);
      if (!p.ok()) continue;
      meas.push_back(*row->spec.measured_tflops);
      pred.push_back(p->model_tflops_per_gpu);
      found.push_back(&step);
      if (absl::GetFlag(FLAGS_verbose)) {
        std::printf("  ladder %s: step %.3f s\n", step.id.c_str(), p->step_time_s);
        PrintBreakdown(*p);
      }
    }
    if (!found.empty()) {
      const std::vector<double> gm = mt::StepGains(meas);
      const std::vector<double> gp = mt::StepGains(pred);
      int right_sign = 0, steps_with_gain = 0;
      std::printf("\n== Knob ladder: DeepSeek-V3, 256 GB200, TP1 PP8 VP4 EP32, MXFP8 "
                  "(Megatron-LM deepseek-v3-gb200-optimization; software predicted as %s) ==\n",
                  std::string(mp::StackGenerationName(mp::StackGeneration::k2602)).c_str());
      std::printf("  %-4s %-44s %8s %8s %8s %8s  %s\n", "step", "optimization", "meas TF",
                  "pred TF", "meas x", "pred x", "model knob");
      for (size_t i = 0; i < found.size(); ++i) {
        if (i > 0) {
          ++steps_with_gain;
          right_sign += (gp[i] > 1.0 + 1e-9) == (gm[i] > 1.0) ? 1 : 0;
        }
        std::printf("  %-4s %-44s %8.1f %8.1f %8.3f %8.3f  %s\n",
                    found[i]->id.substr(found[i]->id.size() - 2).c_str(),
                    found[i]->name.substr(0, 44).c_str(), meas[i], pred[i], gm[i], gp[i],
                    found[i]->mapping.c_str());
      }
      ladder_gains.push_back({gm, gp});
      const double cm = meas.back() / meas.front();
      const double cp = pred.back() / pred.front();
      std::printf("  cumulative: measured %.3fx, predicted %.3fx (%+.1f%%); per-step gain sign "
                  "right %d / %d; baseline absolute %+.1f%%, final %+.1f%%\n",
                  cm, cp, 100 * (cp / cm - 1), right_sign, steps_with_gain,
                  100 * (pred.front() / meas.front() - 1), 100 * (pred.back() / meas.back() - 1));
      Criteria().Require(std::abs(cp / cm - 1) <= kMaxLadderCumulativeError,
                         absl::StrFormat("DeepSeek-V3 ladder cumulative %.3fx vs %.3fx measured "
                                         "(%+.1f%%), beyond %.0f%%",
                                         cp, cm, 100 * (cp / cm - 1),
                                         100 * kMaxLadderCumulativeError));
      if (right_sign < steps_with_gain) {
        std::printf("  (criterion not met, not enforced by --check: every step gain of the "
                    "right sign, %d / %d)\n", right_sign, steps_with_gain);
      }
    }
  }
  // --- Ladders whose rows runs.json lacks (numbers and sources in
  // tests/internal/knob_ladder.cc).
  for (const mt::StandaloneLadder& l : mt::StandaloneLadders()) {
    absl::StatusOr<mp::ModelSpec> model = mt::LadderModel(l);
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(l.cluster_preset);
    std::printf("\n== Knob ladder: %s (%s; software predicted as %s) ==\n", l.title.c_str(),
                l.source.c_str(), std::string(mp::StackGenerationName(l.generation)).c_str());
    if (!model.ok() || !cluster.ok()) {
      std::printf("  not predicted: %s\n",
                  std::string((model.ok() ? cluster.status() : model.status()).message()).c_str());
      continue;
    }
    if (!l.assumed.empty()) std::printf("  not stated by the source, assumed: %s\n", l.assumed.c_str());
    std::vector<double> pred, pred_step_s, priced_imbalance, pred_tensor_gb;
    for (const mt::LadderStep& step : l.steps) {
      mp::StackConstants s = row_model.Stack(l.generation, default_constants);
      s.features = step.features;
      absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
          *model, *cluster, l.shape, row_model.Cost(*cluster, default_constants), s);
      if (!sm.ok()) {
        std::printf("  %s: %s\n", step.id.c_str(), std::string(sm.status().message()).c_str());
        break;
      }
      absl::StatusOr<mp::Prediction> p =
          sm->Predict(step.parallel.value_or(l.parallel), step.knobs);
      if (!p.ok()) {
        std::printf("  %s: %s\n", step.id.c_str(), std::string(p.status().message()).c_str());
        break;
      }
      pred.push_back(p->model_tflops_per_gpu);
      pred_step_s.push_back(p->step_time_s);
      priced_imbalance.push_back(p->moe_load_imbalance_priced);
      pred_tensor_gb.push_back(p->memory.TensorBytes() / 1e9);
      if (absl::GetFlag(FLAGS_verbose)) {
        std::printf("  ladder %s: step %.3f s\n", step.id.c_str(), p->step_time_s);
        PrintBreakdown(*p);
      }
    }
    if (pred.size() != l.steps.size()) continue;
    const std::vector<double> measured = mt::MeasuredThroughput(l);
    const std::vector<double> gm = mt::StepGains(measured);
    const std::vector<double> gp = mt::StepGains(pred);
    ladder_gains.push_back({gm, gp});
    const bool tflops = !l.measured_tflops.empty();
    if (!tflops) {
      std::printf("  (step times only: %% = meas s / pred s - 1, the throughput error; added = "
                  "the step's seconds beyond the first step's, measured vs predicted)\n");
    }
    for (size_t i = 0; i < pred.size(); ++i) {
      // Published as TFLOP/s: the measured step is the priced one scaled by
      // the FLOP rates (same model FLOPs per step); its excess over the
      // priced step shows costs paid once per step or per micro-batch.
      const std::string meas_text =
          tflops ? absl::StrFormat("meas %6.1f TF  pred %6.1f TF (%+5.1f%%) step %6.2f s vs %6.2f "
                                   "s (%+.2f s)",
                                   measured[i], pred[i], 100 * (pred[i] / measured[i] - 1),
                                   pred_step_s[i] * pred[i] / measured[i], pred_step_s[i],
                                   pred_step_s[i] * (pred[i] / measured[i] - 1))
                 : absl::StrFormat("meas %6.2f s   pred %6.2f s  (%+5.1f%%)  added %+6.3f s vs "
                                   "%+6.3f s",
                                   l.measured_step_s[i], pred_step_s[i],
                                   100 * (l.measured_step_s[i] / pred_step_s[i] - 1),
                                   l.measured_step_s[i] - l.measured_step_s[0],
                                   pred_step_s[i] - pred_step_s[0]);
      const std::string imbalance_text =
          priced_imbalance[i] != 1.0 ? absl::StrFormat(" [imbalance priced %.3f]", priced_imbalance[i])
                                     : std::string();
      std::printf("  %-32s %s  meas x %.3f  pred x %.3f  %s%s\n",
                  l.steps[i].name.substr(0, 32).c_str(), meas_text.c_str(), gm[i], gp[i],
                  l.steps[i].mapping.c_str(), imbalance_text.c_str());
    }
    if (l.measured_allocated_gb.size() == pred.size()) {
      // Allocated memory (torch's counters: the tensors, no reserve), and
      // what each step saves against the first.
      std::printf("  memory allocated, GB (saved against the first step):\n");
      for (size_t i = 0; i < pred.size(); ++i) {
        std::printf("  %-32s meas %6.1f (%5.1f)  pred tensors %6.1f (%5.2f)\n",
                    l.steps[i].name.substr(0, 32).c_str(), l.measured_allocated_gb[i],
                    l.measured_allocated_gb[0] - l.measured_allocated_gb[i], pred_tensor_gb[i],
                    pred_tensor_gb[0] - pred_tensor_gb[i]);
      }
    }
  }
  {
    const mt::LadderSummary s = mt::SummarizeLadders(ladder_gains);
    std::printf("\nknob ladders: %d steps over %d ladders, signs right %d/%d, median |gain error| "
                "%.1f%% (|pred x / meas x - 1| per step)\n",
                s.steps, s.ladders, s.signs_right, s.steps, 100 * s.median_abs_gain_error);
  }
  // --- Deep pipelines on Hopper (tests/internal/deep_pipelines.h): each
  // public layout with its published knobs; predicted vs measured step time,
  // the bottleneck rank's exposed P2P and EP time and the bubble, and the
  // pairwise order (measured pairs) or the predicted order (the others).
  int groups_pairs = 0, groups_right = 0;
  for (const mt::LayoutGroup& g : mt::HopperDeepPipelineGroups()) {
    absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(g.model_preset);
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(g.cluster_preset);
    if (!model.ok() || !cluster.ok()) continue;
    std::printf("\n== Deep pipelines: %s (%s; software predicted as %s) ==\n", g.title.c_str(),
                g.source.c_str(), std::string(mp::StackGenerationName(g.generation)).c_str());
    mp::StackConstants s = row_model.Stack(g.generation, default_constants);
    s.features = g.features;
    absl::StatusOr<mp::StepModel> sm = mp::StepModel::Create(
        *model, *cluster, g.shape, row_model.Cost(*cluster, default_constants), s);
    if (!sm.ok()) continue;
    std::vector<std::optional<double>> pred_step(g.cases.size());
    std::vector<std::optional<double>> meas_step(g.cases.size());
    for (size_t i = 0; i < g.cases.size(); ++i) {
      const mt::LayoutCase& lc = g.cases[i];
      // The published recompute, else the lightest that fits (ChooseKnobs'
      // rule); then what Megatron-Core runs for the combination.
      const std::vector<mp::Recompute> ladder =
          lc.recompute_published ? std::vector<mp::Recompute>{lc.knobs.recompute}
                                 : RecomputeLadder();
      absl::StatusOr<mp::Prediction> p = absl::UnknownError("no prediction");
      mp::Knobs knobs;
      for (const mp::Recompute& rc : ladder) {
        knobs = lc.knobs;
        knobs.recompute = rc;
        knobs.recompute.modules = ModulesOfModel(*model, lc.parallel, rc.modules);
        knobs = mp::NormalizeForMegatron(*model, lc.parallel, {}, knobs,
                                         s.features.graph_full_iteration)
                    .knobs;
        p = sm->Predict(lc.parallel, knobs);
        if (!p.ok() || p->peak_memory_bytes <= kRecipeMemoryHeadroom * p->hbm_bytes) break;
      }
      if (!p.ok()) {
        std::printf("  %-30s %s\n", lc.name.c_str(), std::string(p.status().message()).c_str());
        continue;
      }
      pred_step[i] = p->step_time_s;
      // Model FLOPs per step per GPU: the same for every layout of the group.
      meas_step[i] =
          mt::MeasuredCaseStepSeconds(lc, p->model_tflops_per_gpu * 1e12 * p->step_time_s);
      double pp_exposed = 0, ep_exposed = 0, bubble = 0;
      for (const mp::Term& t : p->breakdown) {
        const std::string kind(mp::TermKindName(t.kind));
        if (kind == "comm.pp.exposed") pp_exposed += t.seconds;
        if (kind == "comm.ep.exposed") ep_exposed += t.seconds;
        if (t.kind == mp::TermKind::kPipelineBubble) bubble += t.seconds;
      }
      const std::string meas =
          meas_step[i]
              ? absl::StrFormat("meas %6.2f s (%5.0f tok/s/GPU) err %+6.1f%%", *meas_step[i],
                                mt::StepTokensPerSecPerGpu(g.shape, *meas_step[i]),
                                100 * (*meas_step[i] / p->step_time_s - 1))
              : std::string("meas   (none)");
      std::printf("  %-30s pred %6.2f s (%5.0f tok/s/GPU) %s | pp exposed %5.2f s, ep exposed "
                  "%5.2f s, bubble %5.2f s, peak %5.1f GiB%s rc=%s%s | %s\n",
                  lc.name.c_str(), p->step_time_s, p->tokens_per_sec_per_gpu, meas.c_str(),
                  pp_exposed, ep_exposed, bubble, p->peak_memory_bytes / (1024.0 * 1024 * 1024),
                  p->fits ? "" : " (does not fit)", RecomputeText(knobs.recompute).c_str(),
                  lc.recompute_published ? "" : " (lightest that fits)", lc.note.c_str());
    }
    int pairs = 0, right = 0;
    for (size_t i = 0; i < g.cases.size(); ++i) {
      for (size_t j = i + 1; j < g.cases.size(); ++j) {
        if (!pred_step[i] || !pred_step[j]) continue;
        const mt::LayoutCase& a = g.cases[i];
        const mt::LayoutCase& b = g.cases[j];
        if (meas_step[i] && meas_step[j]) {
          ++pairs;
          right += (*pred_step[i] < *pred_step[j]) == (*meas_step[i] < *meas_step[j]);
        } else {
          std::printf("  predicted faster: %s (%.2f s vs %.2f s for %s)\n",
                      (*pred_step[i] <= *pred_step[j] ? a : b).name.c_str(),
                      std::min(*pred_step[i], *pred_step[j]),
                      std::max(*pred_step[i], *pred_step[j]),
                      (*pred_step[i] <= *pred_step[j] ? b : a).name.c_str());
        }
      }
    }
    if (pairs > 0) std::printf("  measured pairs in the right order: %d / %d\n", right, pairs);
    groups_pairs += pairs;
    groups_right += right;
  }
  std::printf(
      "\nHopper layout groups outside runs.json: measured pairs in the right order %d / %d\n",
      groups_right, groups_pairs);
  PrintMemoryAnchors(row_model, default_constants);
  PrintRecipeChecksOutsideRuns(row_model, default_constants);
  PrintScaleAnchorsAndSeries(row_model, default_constants);
  if (absl::GetFlag(FLAGS_check)) {
    const CriteriaCheck& c = Criteria();
    std::printf("\n== --check: %d criteria checked, %zu failed ==\n", c.checked, c.failed.size());
    for (const std::string& f : c.failed) std::printf("  %s\n", f.c_str());
    // Every criterion above must have been reached: a run that skipped a
    // section (no rows, no ladder) proves nothing.
    // ... + held-out recipe runs through predict + the held-out table rows' MAPE and order.
    constexpr int kCriteria = 1 + 3 + 1 + 3 + 1 + 1 + 1 + 2;
    if (c.checked != kCriteria) {
      std::printf("  expected %d criteria, checked %d\n", kCriteria, c.checked);
      return 1;
    }
    return c.failed.empty() ? 0 : 1;
  }
  return 0;
}
