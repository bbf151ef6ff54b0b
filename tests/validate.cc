// Predicts every row of a published-runs file (shared/validation/runs.json)
// with its published configuration and prints predicted vs measured
// tokens/s/GPU, the error of each row and the MAPE; then the groups of rows
// with identical inputs whose measurements no single prediction can fit
// within 25% (and 10%), which bound what any model can reach.
//
//   bazel run -c opt //tests:validate -- --runs /work/shared/validation/runs.json
//       [--stack megatron-core-2026] [--verbose] [--row ID] [--set key=value,...]
//
// Each row is predicted with the software generation of its container
// (StackGenerationForContainer; rows without one get the oldest, 26.02).
// Row fields used: model_id, cluster_preset, num_gpus, seq_len,
// global_batch, micro_batch, tp, pp, vp (null = 1), ep (null = 1), etp
// (null = 1), cp, dp, precision_id, recompute, offload, id (a "-LoRA-" or
// "-SFT-" run is fine-tuning). Unknown recompute: what the stack does by
// default -- no recompute unless the layout does not fit with the headroom
// the published recipes keep (kRecipeMemoryHeadroom), then the lightest
// selective set that fits, then full recompute.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"
#include "planner/training_config.h"
#include "tests/internal/contradictions.h"

ABSL_FLAG(std::string, runs, "", "path to runs.json");
ABSL_FLAG(std::string, stack, "megatron-core-2026",
          "rows of this stack only ('all' for every row)");
ABSL_FLAG(bool, verbose, false, "print each row's breakdown");
ABSL_FLAG(std::string, set, "",
          "sensitivity study: override global constants, e.g. "
          "ep_overlap_fraction=0.5,host_op_us=20,gemm_efficiency_scale=0.9 "
          "(keys: see ApplyOverrides)");
ABSL_FLAG(std::string, row, "",
          "only rows whose id contains this; prints every recompute option's "
          "memory");

namespace mp = moetune::planner;
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

// The stack's defaults for the knobs a row does not publish: Megatron-Core
// 2026 containers use grouped GEMM, DeepEP/HybridEP dispatch, TP/EP/DP/PP
// overlap and CUDA graphs.
mp::Knobs StackKnobs(mp::Precision precision) {
  mp::Knobs k;
  k.precision = precision;
  k.grouped_gemm = true;
  k.dispatcher = mp::Dispatcher::kFusedDedup;
  k.cuda_graphs = true;
  return k;
}

// Recompute settings tried in order when a row does not publish one.
std::vector<mp::Recompute> RecomputeLadder() {
  std::vector<mp::Recompute> ladder;
  ladder.push_back({});
  auto sel = [](uint32_t modules) {
    mp::Recompute r;
    r.mode = mp::RecomputeMode::kSelective;
    r.modules = modules;
    return r;
  };
  ladder.push_back(sel(mp::kRecomputeMoeAct | mp::kRecomputeLayerNorm));
  ladder.push_back(sel(mp::kRecomputeMoeAct | mp::kRecomputeLayerNorm |
                       mp::kRecomputeMlaUpProj | mp::kRecomputeCoreAttn));
  ladder.push_back(sel(mp::kRecomputeMoeAct | mp::kRecomputeLayerNorm |
                       mp::kRecomputeMlaUpProj | mp::kRecomputeCoreAttn |
                       mp::kRecomputeMlp | mp::kRecomputeSharedExperts));
  ladder.push_back(sel(mp::kRecomputeMoeAct | mp::kRecomputeLayerNorm |
                       mp::kRecomputeMlaUpProj | mp::kRecomputeCoreAttn |
                       mp::kRecomputeMlp | mp::kRecomputeSharedExperts |
                       mp::kRecomputeMoe));
  mp::Recompute full;
  full.mode = mp::RecomputeMode::kFull;
  ladder.push_back(full);
  return ladder;
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
  // "selective", or a module list.
  r.mode = mp::RecomputeMode::kSelective;
  absl::StatusOr<uint32_t> modules = mp::ParseRecomputeModules(text);
  r.modules = modules.ok() ? *modules : mp::kRecomputeCoreAttn;
  return r;
}

// Published recipes are tuned to leave room for allocator spikes and
// fragmentation the memory model does not see: a layout counts as fitting
// when the predicted peak is within 90% of HBM.
constexpr double kRecipeMemoryHeadroom = 0.9;

// --set overrides for sensitivity studies (not used for the reported
// figures). Prior constants are scaled for every GPU generation alike; stack
// constants are set on every row's generation alike.
struct Overrides {
  std::vector<std::pair<std::string, double>> stack;  // ApplyStackOverrides
  double gemm_efficiency_scale = 1.0;
  double attention_efficiency_scale = 1.0;
  double dispatch_efficiency_scale = 1.0;
  double hbm_efficiency_scale = 1.0;
  double comm_sm_fraction_scale = 1.0;
  double dispatch_scaleout_efficiency = 0;  // 0: keep the prior's
  double dispatch_scaleout_max_gbs = -1;    // < 0: keep the prior's
};

// Sets one StackConstants field by name; false for an unknown key.
bool SetStackConstant(const std::string& key, double v, mp::StackConstants* k) {
  if (key == "ep_overlap_fraction") k->ep_overlap_fraction = v;
  else if (key == "ep_overlap_needs_interleaving") k->ep_overlap_needs_interleaving = v != 0;
  else if (key == "tp_overlap_fraction") k->tp_overlap_fraction = v;
  else if (key == "moe_host_ops_forward") k->moe_host_ops_forward = v;
  else if (key == "grouped_gemm_host_ops_per_expert") k->grouped_gemm_host_ops_per_expert = v;
  else if (key == "host_op_us") k->host_op_s = v * 1e-6;
  else if (key == "moe_host_hidden_by_ep_overlap") k->moe_host_hidden_by_ep_overlap = v != 0;
  else if (key == "lora_adapter_hbm_passes") k->lora_adapter_hbm_passes = v;
  else if (key == "unfused_sink_layers")  // 0 none, 1 sliding window, 2 all
    k->unfused_sink_layers = static_cast<mp::StackConstants::UnfusedSinkLayers>(int(v));
  else return false;
  return true;
}

absl::StatusOr<Overrides> ParseOverrides(const std::string& text) {
  Overrides o;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return absl::InvalidArgumentError("--set needs key=value");
    const std::string key = item.substr(0, eq);
    const double v = std::atof(item.substr(eq + 1).c_str());
    mp::StackConstants probe;
    if (SetStackConstant(key, v, &probe)) o.stack.emplace_back(key, v);
    else if (key == "gemm_efficiency_scale") o.gemm_efficiency_scale = v;
    else if (key == "attention_efficiency_scale") o.attention_efficiency_scale = v;
    else if (key == "dispatch_efficiency_scale") o.dispatch_efficiency_scale = v;
    else if (key == "hbm_efficiency_scale") o.hbm_efficiency_scale = v;
    else if (key == "comm_sm_fraction_scale") o.comm_sm_fraction_scale = v;
    else if (key == "dispatch_scaleout_efficiency") o.dispatch_scaleout_efficiency = v;
    else if (key == "dispatch_scaleout_max_gbs") o.dispatch_scaleout_max_gbs = v;
    else return absl::InvalidArgumentError("unknown --set key " + key);
  }
  return o;
}

// The software generation of a row: its container's; rows without a
// parseable container (other frameworks) get the oldest generation the
// model describes.
mp::StackGeneration RowGeneration(const std::string& container) {
  absl::StatusOr<mp::StackGeneration> g = mp::StackGenerationForContainer(container);
  return g.ok() ? *g : mp::StackGeneration::k2602;
}

struct RowResult {
  std::string id;
  std::string label;
  // Everything the prediction depends on (model, cluster, shape, layout,
  // precision, published recompute, software generation): rows with equal
  // inputs get equal predictions.
  std::string inputs;
  double predicted = 0;
  double measured = 0;
  double error = 0;  // (predicted - measured) / measured
  std::string recompute;
  bool fits = false;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_runs);
  if (path.empty()) {
    std::fprintf(stderr, "usage: validate --runs runs.json [--stack S]\n");
    return 2;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 2;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const json rows = json::parse(buf.str(), nullptr, false);
  if (rows.is_discarded() || !rows.is_array()) {
    std::fprintf(stderr, "%s is not a JSON array\n", path.c_str());
    return 2;
  }
  const std::string stack = absl::GetFlag(FLAGS_stack);
  absl::StatusOr<Overrides> overrides = ParseOverrides(absl::GetFlag(FLAGS_set));
  if (!overrides.ok()) {
    std::fprintf(stderr, "%s\n", std::string(overrides.status().message()).c_str());
    return 2;
  }
  std::map<std::string, std::shared_ptr<const mp::CostModel>> cost_models;
  std::vector<RowResult> results;
  int skipped = 0;
  for (const json& row : rows) {
    if (stack != "all" && StrOr(row, "stack", "") != stack) continue;
    const std::string id = StrOr(row, "id", "?");
    const std::string only = absl::GetFlag(FLAGS_row);
    if (!only.empty() && id.find(only) == std::string::npos) continue;
    auto skip = [&](const std::string& why) {
      std::printf("SKIP %-70s %s\n", id.c_str(), why.c_str());
      ++skipped;
    };
    absl::StatusOr<mp::ModelSpec> model = mp::LoadModelPreset(StrOr(row, "model_id", ""));
    if (!model.ok()) {
      skip(std::string(model.status().message()));
      continue;
    }
    const std::string cluster_name = StrOr(row, "cluster_preset", "");
    absl::StatusOr<mp::ClusterSpec> cluster = mp::LoadClusterPreset(cluster_name);
    if (!cluster.ok()) {
      skip(std::string(cluster.status().message()));
      continue;
    }
    std::shared_ptr<const mp::CostModel>& cost = cost_models[cluster_name];
    if (!cost) {
      mp::PriorConstants k = mp::PriorConstantsFor(cluster->gpu);
      for (double& e : k.gemm_efficiency) e *= overrides->gemm_efficiency_scale;
      k.attention_efficiency *= overrides->attention_efficiency_scale;
      k.dispatch_nvlink_efficiency *= overrides->dispatch_efficiency_scale;
      k.dispatch_scaleout_efficiency *= overrides->dispatch_efficiency_scale;
      k.hbm_efficiency *= overrides->hbm_efficiency_scale;
      k.comm_sm_fraction *= overrides->comm_sm_fraction_scale;
      if (overrides->dispatch_scaleout_efficiency > 0) {
        k.dispatch_scaleout_efficiency = overrides->dispatch_scaleout_efficiency;
      }
      if (overrides->dispatch_scaleout_max_gbs >= 0) {
        k.dispatch_scaleout_max_bytes_per_sec = overrides->dispatch_scaleout_max_gbs * 1e9;
      }
      cost = std::make_shared<mp::DatasheetCostModel>(*cluster, k);
    }

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
    mp::TrainingShape shape;
    shape.gpus = num("num_gpus", 0);
    shape.seq_len = num("seq_len", 0);
    shape.global_batch = num("global_batch", 0);
    if (id.find("-LoRA-") != std::string::npos) shape.objective = mp::Objective::kLora;
    if (id.find("-SFT-") != std::string::npos) shape.objective = mp::Objective::kFinetune;
    mp::ParallelConfig p;
    p.tp = num("tp", 1);
    p.pp = num("pp", 1);
    p.vp = num("vp", 1);
    p.ep = num("ep", 1);
    p.etp = num("etp", 1);
    p.cp = num("cp", 1);
    p.dp = num("dp", 0);
    p.mbs = num("micro_batch", 1);
    if (!numeric || !row.contains("tokens_per_sec_per_gpu") ||
        !row.at("tokens_per_sec_per_gpu").is_number()) {
      skip(numeric ? "no numeric tokens_per_sec_per_gpu"
                   : "field '" + bad_field + "' is not a number");
      continue;
    }
    // Rows whose published layout is Megatron-FSDP say so in their notes
    // ("FSDP column = 64").
    p.shard_params = StrOr(row, "notes", "").find("FSDP") != std::string::npos;
    absl::StatusOr<mp::Precision> precision =
        mp::ParsePrecision(StrOr(row, "precision_id", "bf16"));
    if (!precision.ok()) {
      skip(std::string(precision.status().message()));
      continue;
    }
    const mp::StackGeneration generation = RowGeneration(StrOr(row, "container", ""));
    mp::StackConstants stack_constants = mp::StackConstantsFor(generation);
    for (const auto& [key, v] : overrides->stack) SetStackConstant(key, v, &stack_constants);
    absl::StatusOr<mp::StepModel> sm =
        mp::StepModel::Create(*model, *cluster, shape, cost, stack_constants);
    if (!sm.ok()) {
      skip(std::string(sm.status().message()));
      continue;
    }
    mp::Knobs knobs = StackKnobs(*precision);
    absl::StatusOr<mp::Recompute> published = PublishedRecompute(row);
    std::vector<mp::Recompute> ladder =
        published.ok() ? std::vector<mp::Recompute>{*published} : RecomputeLadder();
    absl::StatusOr<mp::Prediction> pred = absl::UnknownError("no prediction");
    for (const mp::Recompute& r : ladder) {
      knobs.recompute = r;
      pred = sm->Predict(p, knobs);
      if (!only.empty() && pred.ok()) {
        const mp::MemoryBreakdown& mem = pred->memory;
        const double gib = 1024.0 * 1024 * 1024;
        std::printf(
            "  recompute %-9s %-60s tok/s %8.0f peak %6.1f GiB (w %.1f g %.1f "
            "o %.1f a %.1f c %.1f r %.1f)\n",
            std::string(mp::RecomputeModeName(r.mode)).c_str(),
            mp::RecomputeModulesName(r.modules).c_str(),
            pred->tokens_per_sec_per_gpu, pred->peak_memory_bytes / gib,
            mem.weights_bytes / gib, mem.grads_bytes / gib,
            mem.optimizer_bytes / gib, mem.activations_bytes / gib,
            mem.comm_buffers_bytes / gib, mem.reserve_bytes / gib);
      }
      if (!pred.ok() ||
          pred->peak_memory_bytes <= kRecipeMemoryHeadroom * pred->hbm_bytes) {
        break;
      }
    }
    if (!pred.ok()) {
      skip(std::string(pred.status().message()));
      continue;
    }
    RowResult res;
    res.id = id;
    res.label = absl::StrFormat(
        "%s %s %dg s%d gbs%d mbs%d tp%d pp%d vp%d ep%d cp%d %s sw%s",
        model->name, cluster_name, shape.gpus, shape.seq_len,
        shape.global_batch, p.mbs, p.tp, p.pp, p.vp, p.ep, p.cp,
        std::string(mp::PrecisionName(*precision)),
        std::string(mp::StackGenerationName(generation)));
    res.inputs = absl::StrFormat(
        "%s %s gpus=%d seq=%d gbs=%d %s %s recompute=%s %s sw=%s", model->name,
        cluster_name, shape.gpus, shape.seq_len, shape.global_batch,
        std::string(mp::ObjectiveName(shape.objective)), mp::ToString(p),
        published.ok() ? std::string(mp::RecomputeModeName(published->mode)) +
                             mp::RecomputeModulesName(published->modules)
                       : "unpublished",
        std::string(mp::PrecisionName(*precision)),
        std::string(mp::StackGenerationName(generation)));
    res.predicted = pred->tokens_per_sec_per_gpu;
    res.measured = row.at("tokens_per_sec_per_gpu").get<double>();
    res.error = (res.predicted - res.measured) / res.measured;
    res.recompute = std::string(mp::RecomputeModeName(knobs.recompute.mode));
    if (knobs.recompute.mode == mp::RecomputeMode::kSelective) {
      res.recompute += "(" + mp::RecomputeModulesName(knobs.recompute.modules) + ")";
    }
    res.fits = pred->fits;
    results.push_back(res);
    std::printf("%-36s %-71s pred %8.0f meas %8.0f err %+6.1f%% mem %5.1f GiB%s rc=%s\n",
                id.substr(0, 36).c_str(), res.label.c_str(), res.predicted,
                res.measured, 100 * res.error,
                pred->peak_memory_bytes / (1024.0 * 1024 * 1024),
                res.fits ? "" : " (does not fit)", res.recompute.c_str());
    if (absl::GetFlag(FLAGS_verbose)) {
      for (const mp::Term& t : pred->breakdown) {
        std::printf("      %-32s %-22s %9.3f s %s\n", t.name.c_str(),
                    std::string(mp::TermKindName(t.kind)).c_str(), t.seconds,
                    std::string(mp::CostSourceName(t.source)).c_str());
      }
      std::printf("      step %.3f s, model TFLOPS/GPU %.0f, MFU %.3f\n",
                  pred->step_time_s, pred->model_tflops_per_gpu, pred->mfu);
    }
  }
  if (results.empty()) {
    std::printf("no rows of stack '%s'\n", stack.c_str());
    return 1;
  }
  double sum_abs = 0;
  const RowResult* worst = &results.front();
  int over25 = 0, over10 = 0;
  for (const RowResult& r : results) {
    sum_abs += std::abs(r.error);
    if (std::abs(r.error) > std::abs(worst->error)) worst = &r;
    over25 += std::abs(r.error) > 0.25 ? 1 : 0;
    over10 += std::abs(r.error) > 0.10 ? 1 : 0;
  }
  std::printf("\nstack %s: %zu rows predicted, %d skipped\n", stack.c_str(),
              results.size(), skipped);
  std::printf("MAPE %.1f%%; rows > 10%%: %d; rows > 25%%: %d\n",
              100 * sum_abs / results.size(), over10, over25);
  std::printf("worst: %s (%s) err %+.1f%%\n", worst->id.c_str(),
              worst->label.c_str(), 100 * worst->error);

  // Rows with identical inputs whose measurements no single prediction can
  // fit within a band: each such group forces at least one row beyond it.
  std::vector<moetune::tests::MeasuredRow> measured;
  for (const RowResult& r : results) measured.push_back({r.id, r.inputs, r.measured});
  for (const double band : {0.25, 0.10}) {
    const std::vector<moetune::tests::Contradiction> groups =
        moetune::tests::FindContradictions(measured, band);
    std::printf("contradictory inputs beyond %.0f%%: %zu group(s); at least %zu row(s) "
                "> %.0f%% for any model\n",
                100 * band, groups.size(), groups.size(), 100 * band);
    for (const moetune::tests::Contradiction& g : groups) {
      std::printf("  same inputs, measured %.0f .. %.0f tokens/s/GPU: every prediction is "
                  ">= %.1f%% off one of them (%s)\n",
                  g.low, g.high, 100 * g.best_error, results[g.rows.front()].label.c_str());
      for (size_t i : g.rows) {
        std::printf("    %-70s meas %8.0f pred %8.0f err %+6.1f%%\n", results[i].id.c_str(),
                    results[i].measured, results[i].predicted, 100 * results[i].error);
      }
    }
  }
  return 0;
}
