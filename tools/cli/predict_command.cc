// `moetune predict`: one training step of a model on a cluster with a given
// layout and knobs, from the local datasheet cost model, as one JSON object
// (or text).
//
//   moetune predict --model M --cluster C --gpus N --seq S --gbs G
//       --precision P [--tp --pp --vp --ep --etp --cp --mbs]
//       [--recompute none|selective|full] [--recompute-modules a,b]
//       [--offload none|attn_norm,core_attn,...] [--offload-layers N]
//       [--dispatcher D]
//       [--grouped-gemm true|false] [--cuda-graphs true|false]
//       [--overlap tp,ep,dp,pp|none] [--comm-streams K] [--moe-imbalance X]
//       [--shard-params] [--dp-outermost]
//       [--first-stage-layers L] [--last-stage-layers L]
//       [--objective pretrain|finetune|lora] [--stack CONTAINER|latest]
//       [--framework megatron|maxtext] [--format json|text|maxtext]
//       [--routing natural|balanced] [--optimizer-states fp32|bf16]
//       [--optimizer-offload-fraction F [--optimizer-offload-overlap]]
//       [--search-knobs]
//
// --optimizer-states: the precision of the distributed Adam optimizer's
// state (planner/training_config.h OptimizerStates): fp32 (default) or bf16
// (Megatron's precision-aware optimizer with BF16 moments and main grads, as
// Megatron-Bridge's DeepSeek-V3 recipe runs; 8 B of state per parameter
// instead of 12). A numerics choice, never searched. Megatron only.
//
// --routing: how the MoE router spreads tokens (planner/routing.h).
// natural (the default: real training, data and the model's own router)
// prices each MoE layer at the pace of its busiest expert-parallel rank
// and the step at the slowest EP group's; balanced is what the published
// benchmark tables force (--moe-router-force-load-balancing). An explicit
// --moe-imbalance X (>= 1) replaces what the routing implies. Neither given
// (MoE): natural routing's prediction, with an interval that also spans
// forced balancing's (planner/request.h PredictPinned).
//
// --dp-outermost: Megatron's rank order with data parallelism outermost,
// tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping: each model replica on consecutive
// ranks, inside an NVLink domain when it fits, DP groups across domains);
// without it, Megatron's default tp-cp-ep-dp-pp (PP outermost). Never
// chosen by the search; Megatron only (MaxText refuses it, naming the rule).
//
// --stack: the software the run uses, a Megatron-Core/Bridge container
// version (26.02, 26.04.01, 26.06, ...; default latest); it selects the step
// model's software generation (planner/software_stack.h) and is echoed as
// "software_stack" in the JSON.
//
// Predict answers "what will this run do" (planner/request.h, the same
// translation the server's Predict RPC uses): with the run layout given (tp,
// pp, mbs, and ep for a MoE model) the knobs not given are what a run does
// with those flags unset (planner/run_defaults.h: the stack's recipe
// defaults, the lightest recompute that fits); otherwise, or with
// --search-knobs, they take the values the autotuner chooses with the given
// ones fixed, and the best plan is predicted. With every knob given there is
// one candidate. Precision is
// bf16 unless --precision is given; --overlap pins exactly the listed
// overlaps; --moe-imbalance prices every candidate. What Megatron-Core
// refuses (planner/framework_rules.h) is bad input naming the rule.
//
// Exit codes: 0 ok, 2 bad input or a combination the framework refuses, 3
// nothing fits in memory (one line on stderr, naming the tightest
// constraint).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "planner/request.h"
#include "planner/cost_model.h"
#include "planner/emitters.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/run_defaults.h"
#include "planner/search.h"
#include "planner/search_space.h"
#include "planner/software_stack.h"
#include "planner/step_model.h"
#include "planner/training_config.h"
#include "planner/units.h"
#include "tools/cli/args.h"
#include "tools/cli/command_registry.h"

namespace moetune::cli {
namespace {

namespace pl = ::moetune::planner;

const std::vector<FlagSpec>& PredictFlags() {
  static const std::vector<FlagSpec> specs = {
      {"model", false, "model preset (e.g. deepseek-v3) or a config.json / native JSON file"},
      {"cluster", false, "cluster preset (e.g. gb200-nvl72) or a cluster JSON file"},
      {"gpus", false, "number of GPUs"},
      {"seq", false, "sequence length (tokens)"},
      {"gbs", false, "global batch (sequences per step)"},
      {"precision", false, "bf16 (default), fp8, mxfp8, nvfp4"},
      {"tp", false, "tensor parallel (default: the search's choice)"},
      {"pp", false, "pipeline stages (default: the search's choice)"},
      {"vp", false, "virtual stages per pipeline rank (default: 1 with the run layout given, else the search's choice)"},
      {"ep", false, "expert parallel (default: the search's choice)"},
      {"etp", false, "expert tensor parallel (default: tp for MoE with the run layout given, else the search's choice)"},
      {"cp", false, "context parallel (default: 1 with the run layout given, else the search's choice)"},
      {"mbs", false, "micro-batch size (default: the search's choice)"},
      {"recompute", false, "none, selective or full (default: the run default; see --search-knobs)"},
      {"recompute-modules", false,
       "selective modules: core_attn,mla_up_proj,layernorm,moe_act,mlp,moe,shared_experts"},
      {"recompute-layers", false, "full recompute: layers per stage (default all)"},
      {"offload", false,
       "none or modules: attn_norm,core_attn,attn_proj,mlp_norm,expert_fc1,moe_act "
       "(default: the run default; see --search-knobs)"},
      {"offload-layers", false,
       "layer-wise activation offload: the first N layers' saved tensors go to host memory "
       "(Megatron --cpu-offloading-num-layers; pp 1, no recompute, CUDA graphs off; default 0, "
       "never searched)"},
      {"dispatcher", false, "alltoall or fused_dedup (default: the run default; see --search-knobs)"},
      {"grouped-gemm", false, "true or false (a loop of GEMMs) (default: the run default; see --search-knobs)"},
      {"cuda-graphs", false, "true or false (default: the run default; see --search-knobs)"},
      {"overlap", false,
       "communications overlapped with compute: tp,ep,dp,pp or none (default: the run default; see "
       "--search-knobs)"},
      {"comm-streams", false, "communication streams (default: the run default; see --search-knobs)"},
      {"moe-imbalance", false, "tokens on the busiest GPU's experts / mean, >= 1 (default: what --routing implies)"},
      {"routing", false, "MoE routing: natural (default: real training, priced at the busiest expert-parallel rank) or balanced (forced, as the published benchmarks run); not given, the 80% interval also spans forced balancing"},
      {"optimizer-states", false, "Adam state precision: fp32 (default) or bf16 (BF16 moments and main grads, --use-precision-aware-optimizer; never searched)"},
      {"optimizer-offload-fraction", false, "share of the optimizer shard stepped on the host (Megatron --optimizer-cpu-offload --optimizer-offload-fraction F; 0..1, default 0, never searched)"},
      {"optimizer-offload-overlap", true, "pipeline the offloaded optimizer's copies with its CPU steps (--overlap-cpu-optimizer-d2h-h2d)"},
      {"shard-params", true, "shard parameters and gradients over DP (FSDP)"},
      {"dp-outermost", true, "Megatron rank order with data parallel outermost, tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping: model replicas on consecutive ranks, DP groups across NVLink domains); default: off, Megatron's default order tp-cp-ep-dp-pp (pipeline outermost); never searched; with pp > 1 on a MoE model needs ep x etp = tp x cp; not for --framework maxtext"},
      {"first-stage-layers", false, "layers on the first pipeline stage"},
      {"last-stage-layers", false, "layers on the last pipeline stage"},
      {"objective", false, "pretrain (default), finetune or lora"},
      {"stack", false, "software stack: container version (Megatron: 26.02, 26.04.01, 26.06, ...; older ones are priced as 26.02 with the interval of settings no published run measured; MaxText: maxtext-2026-09-10, ...) or latest (default)"},
      {"framework", false, "megatron (default) or maxtext: whose rules the pins must pass and how the step is priced"},
      {"cuda-graph-scope", false, "what the run's CUDA graphs capture: modules (attn, moe_router, moe_preprocess, as moetune's Megatron file writes) or full_iteration (the whole step with a static MoE token budget, as Megatron-Bridge's 26.06+ MoE performance recipes run); default: full_iteration for a MoE model at mxfp8 on a 26.06+ stack with the run layout given, else modules"},
      {"format", false, "json (default), text, or maxtext (with --framework maxtext: the MaxText YAML and XLA_FLAGS)"},
      {"search-knobs", true, "knobs not given (recompute, offload, dispatcher, overlap, streams, CUDA graphs) are the autotuner's choice (the fastest that fits) instead of what a run does with those flags unset (the default once tp, pp, mbs and, for MoE, ep are given: planner/run_defaults.h)"},
      {"help", true, "show this help"},
  };
  return specs;
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

int Fail(int code, const std::string& message) {
  std::cerr << "moetune predict: " << OneLine(message) << "\n";
  return code;
}

absl::StatusOr<std::optional<int>> OptionalPositiveInt(const Args& args,
                                                       const std::string& name) {
  absl::StatusOr<std::optional<long long>> v = args.GetInt(name);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::optional<int>();
  if (**v <= 0 || **v > (1LL << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a positive integer, got ", **v));
  }
  return std::optional<int>(static_cast<int>(**v));
}

absl::StatusOr<int> RequiredPositiveInt(const Args& args, const std::string& name) {
  absl::StatusOr<std::optional<int>> v = OptionalPositiveInt(args, name);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return absl::InvalidArgumentError(absl::StrCat("missing --", name));
  return **v;
}

absl::StatusOr<bool> Bool(const Args& args, const std::string& name, bool fallback) {
  if (!args.Has(name)) return fallback;
  const std::string v = absl::AsciiStrToLower(args.GetOr(name, ""));
  if (v == "true" || v == "1" || v == "on") return true;
  if (v == "false" || v == "0" || v == "off") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, " takes true or false, got '", v, "'"));
}

// The documented default EP: the largest divisor of the routed experts that
// divides tp*cp*dp / etp and fits one NVLink domain.
int DefaultEp(const pl::ModelSpec& m, const pl::ClusterSpec& c,
              const pl::TrainingShape& s, const pl::ParallelConfig& p) {
  if (!m.IsMoe()) return 1;
  const int denom = p.tp * p.pp * p.cp;
  if (denom <= 0 || s.gpus % denom != 0) return 1;
  const int dp = s.gpus / denom;
  const int pool = p.tp * p.cp * dp / std::max(1, p.etp);
  int best = 1;
  for (int ep = 1; ep <= std::min(pool, c.nvlink_domain_gpus); ++ep) {
    if (m.num_routed_experts % ep == 0 && pool % ep == 0) best = ep;
  }
  return best;
}

// The knobs the user pinned, as the search's FixedKnobs: predict is the
// search with these pinned (planner/request.h).
pl::FixedKnobs GivenKnobs(const Args& args, const pl::ParallelConfig& p,
                          const pl::Knobs& knobs) {
  pl::FixedKnobs f;
  bool all = true;
  auto pin_int = [&](const char* flag, int value, std::optional<int>* field) {
    if (args.Has(flag)) {
      *field = value;
    } else {
      all = false;
    }
  };
  pin_int("tp", p.tp, &f.tp);
  pin_int("pp", p.pp, &f.pp);
  pin_int("vp", p.vp, &f.vp);
  pin_int("ep", p.ep, &f.ep);
  pin_int("etp", p.etp, &f.etp);
  pin_int("cp", p.cp, &f.cp);
  pin_int("mbs", p.mbs, &f.mbs);
  if (p.first_stage_layers) f.first_stage_layers = p.first_stage_layers;
  if (p.last_stage_layers) f.last_stage_layers = p.last_stage_layers;
  if (args.Has("shard-params")) f.shard_params = true;
  if (args.Has("dp-outermost")) f.dp_outermost = true;
  if (args.Has("recompute") || args.Has("recompute-modules")) {
    f.recompute = knobs.recompute;
  } else {
    all = false;
  }
  if (args.Has("offload")) {
    f.offload_modules = knobs.offload_activations ? knobs.offload_modules : 0u;
  } else {
    all = false;
  }
  // Not searched (0 unless given), so not part of `all`.
  if (args.Has("offload-layers")) f.offload_layers = knobs.offload_layers;
  if (args.Has("dispatcher")) {
    f.dispatcher = knobs.dispatcher;
  } else {
    all = false;
  }
  auto pin_bool = [&](const char* flag, bool value, std::optional<bool>* field) {
    if (args.Has(flag)) {
      *field = value;
    } else {
      all = false;
    }
  };
  pin_bool("grouped-gemm", knobs.grouped_gemm, &f.grouped_gemm);
  pin_bool("cuda-graphs", knobs.cuda_graphs, &f.cuda_graphs);
  if (args.Has("overlap")) {
    const pl::Overlap& o = knobs.overlap;
    const bool any = o.tp_comm || o.ep_comm || o.dp_comm || o.pp_comm;
    const bool every = o.tp_comm && o.ep_comm && o.dp_comm && o.pp_comm;
    // A partial set is searched as "overlap on" and applied as given after.
    f.overlap = any;
    if (any && !every) all = false;
  } else {
    all = false;
  }
  if (args.Has("comm-streams")) {
    f.comm_streams = knobs.overlap.num_comm_streams;
  } else {
    all = false;
  }
  f.precision = knobs.precision;
  (void)all;
  return f;
}

std::string TextReport(const pl::Prediction& p) {
  std::string out = absl::StrFormat(
      "%s on %d x %s, seq %d, global batch %d, %s\n"
      "layout: %s\nrank order: %s\nknobs:  %s\n\n"
      "step %.3f s   %.1f tokens/s/GPU   %.1f model TFLOPS/GPU   MFU %.1f%%\n"
      "peak memory %.1f GiB of %.1f GiB (%s)\n",
      p.model.name, p.shape.gpus, p.cluster_name, p.shape.seq_len, p.shape.global_batch,
      std::string(pl::PrecisionName(p.knobs.precision)), pl::ToString(p.parallel),
      absl::StrCat(std::string(pl::RankOrderName(p.parallel)),
                   p.parallel.dp_outermost ? " (data parallel outermost, --use-tp-pp-dp-mapping)"
                                           : " (Megatron's default, pipeline outermost)"),
      pl::ToString(p.knobs), p.step_time_s, p.tokens_per_sec_per_gpu,
      p.model_tflops_per_gpu, 100 * p.mfu, p.peak_memory_bytes / pl::units::kGiB,
      p.hbm_bytes / pl::units::kGiB, p.fits ? "fits" : "does NOT fit");
  if (p.parallel.pp > 1) {
    // Rank 0 usually holds the peak; Megatron-Bridge logged the last rank's
    // memory alone before 2026-05 (its TensorBoard / W&B writer).
    absl::StrAppend(&out, absl::StrFormat("last pipeline stage %.1f GiB (%.1f GiB of tensors)\n",
                                          p.last_stage_memory_bytes / pl::units::kGiB,
                                          p.last_stage_memory.TensorBytes() / pl::units::kGiB));
  }
  if (p.host_offload_bytes > 0) {
    const double host = p.cluster.host_memory_bytes_per_gpu;
    absl::StrAppend(&out, absl::StrFormat("host memory (offloaded %s) %.1f GiB",
                                          pl::HostOffloadContents(p),
                                          p.host_offload_bytes / pl::units::kGiB),
                    host > 0 ? absl::StrFormat(" of %.1f GiB", host / pl::units::kGiB)
                             : std::string(" (the cluster states no host memory)"),
                    "\n");
  }
  absl::StrAppend(&out, "\nbreakdown (per step, slowest pipeline rank):\n");
  for (const pl::Term& t : p.breakdown) {
    absl::StrAppend(&out, absl::StrFormat("  %-30s %-22s %9.3f s  %s\n", t.name,
                                          std::string(pl::TermKindName(t.kind)), t.seconds,
                                          std::string(pl::CostSourceName(t.source))));
  }
  if (p.interval.coverage > 0) absl::StrAppend(&out, "\n", pl::IntervalText(p.interval), "\n");
  int calibrated = 0;
  for (const pl::Term& t : p.breakdown) calibrated += t.source == pl::CostSource::kCalibrated;
  absl::StrAppend(&out, absl::StrFormat("\ncost source: %d of %d terms calibrated, %d from datasheet "
                                        "priors%s\n",
                                        calibrated, p.breakdown.size(),
                                        p.breakdown.size() - calibrated,
                                        calibrated == 0 ? " (predict has no measurements; a server "
                                                          "plan job with a calibration cluster "
                                                          "uses them)"
                                                        : ""));
  return out;
}

int RunPredict(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> parsed = Args::Parse(argv, PredictFlags());
  if (!parsed.ok()) return Fail(kExitBadInput, std::string(parsed.status().message()));
  const Args& args = *parsed;
  if (args.Has("help")) {
    std::cout << "usage: moetune predict --model M --cluster C --gpus N --seq S --gbs G "
                 "[--precision P] [layout and knob flags]\n\n"
                 "With tp, pp, mbs (and ep for a MoE model) given, the knobs not given are what a "
                 "run does\nwith those flags unset: the stack's recipe defaults, the lightest "
                 "recompute that fits\nwithin 84% of the GPU's memory, vp/cp 1, etp = tp "
                 "(--search-knobs: the autotuner's choice instead);\nthe 80% interval then also "
                 "spans what those knobs could be (eager, all-to-all, no\noverlap .. graphs, every "
                 "overlap).\nOtherwise the layout and knob "
                 "flags not given are chosen by the search (the fastest plan\nthat fits in HBM, with "
                 "the given ones pinned). With all of them given, the step is\npredicted as given.\n\n"
              << Args::Usage(PredictFlags());
    return kExitOk;
  }
  for (const char* required : {"model", "cluster"}) {
    if (!args.Has(required)) {
      return Fail(kExitBadInput, absl::StrCat("missing --", required));
    }
  }
  absl::StatusOr<pl::ModelSpec> model = pl::LoadModelArg(*args.Get("model"));
  if (!model.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--model: ", model.status().message()));
  }
  absl::StatusOr<pl::ClusterSpec> cluster = pl::LoadClusterArg(*args.Get("cluster"));
  if (!cluster.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--cluster: ", cluster.status().message()));
  }
  pl::TrainingShape shape;
  for (auto [flag, field] : {std::pair<const char*, int*>{"gpus", &shape.gpus},
                             {"seq", &shape.seq_len},
                             {"gbs", &shape.global_batch}}) {
    absl::StatusOr<int> v = RequiredPositiveInt(args, flag);
    if (!v.ok()) return Fail(kExitBadInput, std::string(v.status().message()));
    *field = *v;
  }
  if (args.Has("objective")) {
    absl::StatusOr<pl::Objective> o = pl::ParseObjective(args.GetOr("objective", ""));
    if (!o.ok()) return Fail(kExitBadInput, std::string(o.status().message()));
    shape.objective = *o;
  }

  absl::StatusOr<pl::Framework> framework = pl::ParseFramework(args.GetOr("framework", "megatron"));
  if (!framework.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--framework: ", framework.status().message()));
  }
  absl::StatusOr<pl::SoftwareStack> stack =
      pl::ParseSoftwareStack(*framework, args.GetOr("stack", ""));
  if (!stack.ok()) return Fail(kExitBadInput, absl::StrCat("--stack: ", stack.status().message()));
  absl::StatusOr<pl::CudaGraphScope> graph_scope =
      pl::ParseCudaGraphScope(args.GetOr("cuda-graph-scope", "modules"));
  if (!graph_scope.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--cuda-graph-scope: ", graph_scope.status().message()));
  }
  stack->cuda_graph_scope = *graph_scope;

  pl::ParallelConfig p;
  for (auto [flag, field] : {std::pair<const char*, int*>{"tp", &p.tp},
                             {"pp", &p.pp},
                             {"vp", &p.vp},
                             {"etp", &p.etp},
                             {"cp", &p.cp},
                             {"mbs", &p.mbs}}) {
    absl::StatusOr<std::optional<int>> v = OptionalPositiveInt(args, flag);
    if (!v.ok()) return Fail(kExitBadInput, std::string(v.status().message()));
    if (v->has_value()) *field = **v;
  }
  absl::StatusOr<std::optional<int>> ep = OptionalPositiveInt(args, "ep");
  if (!ep.ok()) return Fail(kExitBadInput, std::string(ep.status().message()));
  p.ep = ep->has_value() ? **ep : DefaultEp(*model, *cluster, shape, p);
  for (auto [flag, field] :
       {std::pair<const char*, std::optional<int>*>{"first-stage-layers", &p.first_stage_layers},
        {"last-stage-layers", &p.last_stage_layers}}) {
    absl::StatusOr<std::optional<long long>> v = args.GetInt(flag);
    if (!v.ok()) return Fail(kExitBadInput, std::string(v.status().message()));
    if (v->has_value()) *field = static_cast<int>(**v);
  }
  p.shard_params = args.Has("shard-params");
  p.dp_outermost = args.Has("dp-outermost");

  pl::Knobs knobs;
  if (args.Has("precision")) {
    absl::StatusOr<pl::Precision> prec = pl::ParsePrecision(args.GetOr("precision", ""));
    if (!prec.ok()) return Fail(kExitBadInput, std::string(prec.status().message()));
    knobs.precision = *prec;
  }
  if (args.Has("dispatcher")) {
    absl::StatusOr<pl::Dispatcher> d = pl::ParseDispatcher(args.GetOr("dispatcher", ""));
    if (!d.ok()) return Fail(kExitBadInput, std::string(d.status().message()));
    knobs.dispatcher = *d;
  }
  for (auto [flag, field] : {std::pair<const char*, bool*>{"grouped-gemm", &knobs.grouped_gemm},
                             {"cuda-graphs", &knobs.cuda_graphs}}) {
    absl::StatusOr<bool> b = Bool(args, flag, *field);
    if (!b.ok()) return Fail(kExitBadInput, std::string(b.status().message()));
    *field = *b;
  }
  if (args.Has("overlap")) {
    const std::string v = absl::AsciiStrToLower(args.GetOr("overlap", ""));
    knobs.overlap.tp_comm = knobs.overlap.ep_comm = knobs.overlap.dp_comm =
        knobs.overlap.pp_comm = false;
    if (v != "none") {
      for (absl::string_view part : absl::StrSplit(v, ',', absl::SkipEmpty())) {
        if (part == "tp") {
          knobs.overlap.tp_comm = true;
        } else if (part == "ep") {
          knobs.overlap.ep_comm = true;
        } else if (part == "dp") {
          knobs.overlap.dp_comm = true;
        } else if (part == "pp") {
          knobs.overlap.pp_comm = true;
        } else {
          return Fail(kExitBadInput, absl::StrCat("--overlap: unknown communication '", part,
                                                  "' (expected tp, ep, dp, pp or none)"));
        }
      }
    }
  }
  absl::StatusOr<std::optional<int>> streams = OptionalPositiveInt(args, "comm-streams");
  if (!streams.ok()) return Fail(kExitBadInput, std::string(streams.status().message()));
  if (streams->has_value()) knobs.overlap.num_comm_streams = **streams;
  absl::StatusOr<std::optional<double>> imbalance = args.GetDouble("moe-imbalance");
  if (!imbalance.ok()) return Fail(kExitBadInput, std::string(imbalance.status().message()));
  if (imbalance->has_value()) {
    if (!(**imbalance >= 1.0)) {
      return Fail(kExitBadInput,
                  absl::StrCat("--moe-imbalance must be >= 1.0, got ", **imbalance));
    }
    knobs.moe_load_imbalance = **imbalance;
  }
  // Natural routing (real training) unless --routing says otherwise.
  absl::StatusOr<pl::Routing> routing = pl::ParseRouting(args.GetOr("routing", "natural"));
  if (!routing.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--routing: ", routing.status().message()));
  }
  knobs.routing = *routing;
  absl::StatusOr<pl::OptimizerStates> states =
      pl::ParseOptimizerStates(args.GetOr("optimizer-states", "fp32"));
  if (!states.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--optimizer-states: ", states.status().message()));
  }
  knobs.optimizer_states = *states;
  absl::StatusOr<OptimizerOffloadFlags> offload = ParseOptimizerOffloadFlags(args);
  if (!offload.ok()) return Fail(kExitBadInput, std::string(offload.status().message()));
  knobs.optimizer_offload_fraction = offload->fraction;
  knobs.optimizer_offload_overlap = offload->overlap;
  if (args.Has("offload")) {
    const std::string v = absl::AsciiStrToLower(args.GetOr("offload", ""));
    if (v != "none") {
      absl::StatusOr<uint32_t> mods = pl::ParseOffloadModules(v);
      if (!mods.ok()) return Fail(kExitBadInput, std::string(mods.status().message()));
      knobs.offload_activations = *mods != 0;
      knobs.offload_modules = *mods;
    }
  }
  if (args.Has("offload-layers")) {
    absl::StatusOr<std::optional<long long>> n = args.GetInt("offload-layers");
    if (!n.ok()) return Fail(kExitBadInput, std::string(n.status().message()));
    if (!n->has_value() || **n < 0 || **n > (1LL << 30)) {
      return Fail(kExitBadInput, "--offload-layers must be a non-negative integer");
    }
    knobs.offload_layers = static_cast<int>(**n);
  }
  if (args.Has("recompute") || args.Has("recompute-modules")) {
    pl::Recompute r;
    if (args.Has("recompute")) {
      absl::StatusOr<pl::RecomputeMode> mode =
          pl::ParseRecomputeMode(args.GetOr("recompute", ""));
      if (!mode.ok()) return Fail(kExitBadInput, std::string(mode.status().message()));
      r.mode = *mode;
    } else {
      r.mode = pl::RecomputeMode::kSelective;
    }
    if (args.Has("recompute-modules")) {
      absl::StatusOr<uint32_t> mods =
          pl::ParseRecomputeModules(args.GetOr("recompute-modules", ""));
      if (!mods.ok()) return Fail(kExitBadInput, std::string(mods.status().message()));
      r.modules = *mods;
    } else if (r.mode == pl::RecomputeMode::kSelective) {
      r.modules = pl::kRecomputeCoreAttn;  // Megatron's default selective set
    }
    absl::StatusOr<std::optional<int>> layers = OptionalPositiveInt(args, "recompute-layers");
    if (!layers.ok()) return Fail(kExitBadInput, std::string(layers.status().message()));
    if (layers->has_value()) r.num_layers = **layers;
    knobs.recompute = r;
  }

  pl::PlanRequest request;
  request.model = *model;
  request.cluster = *cluster;
  request.shape = shape;
  request.constraints.fixed = GivenKnobs(args, p, knobs);
  // With the run layout given (tp, pp, mbs and, for MoE, ep) `p` is the
  // layout priced, vp and cp at their run value 1 where not given: refuse it
  // here with its reason (etp, not given, is checked at 1, the value that
  // constrains the layout least; the run defaults then set it to tp and
  // check that themselves, planner/run_defaults.h). Otherwise the search
  // chooses what was not given and refuses the request itself (naming a
  // layout and why) only when no layout with the given flags is valid:
  // `p`'s placeholders for the flags not given are no layout anyone asked
  // for.
  if (pl::PinsRunLayout(request)) {
    if (absl::Status s = pl::Validate(*model, shape, p); !s.ok()) {
      return Fail(kExitBadInput, std::string(s.message()));
    }
  }
  if (args.Has("overlap")) request.constraints.fixed.overlap_exact = knobs.overlap;
  request.constraints.precisions = {knobs.precision};
  request.constraints.moe_load_imbalance = knobs.moe_load_imbalance;
  request.constraints.routing = knobs.routing;
  request.constraints.optimizer_states = knobs.optimizer_states;
  request.constraints.optimizer_offload_fraction = knobs.optimizer_offload_fraction;
  request.constraints.optimizer_offload_overlap = knobs.optimizer_offload_overlap;
  request.stack = *stack;
  request.unpinned_knobs =
      args.Has("search-knobs") ? pl::UnpinnedKnobs::kSearch : pl::UnpinnedKnobs::kRunDefaults;
  request.cuda_graph_scope_given = args.Has("cuda-graph-scope");
  request.routing_given = args.Has("routing") || args.Has("moe-imbalance");
  *stack = pl::PredictedStack(request);  // the scope a run of it captures, as priced
  // What filled the knobs the command line did not give.
  const bool run_defaults = pl::UsesRunDefaults(request);
  const char* knobs_not_given = run_defaults ? "run_defaults" : "search";
  absl::StatusOr<pl::Prediction> pred =
      pl::PredictPinned(request, std::make_shared<pl::DatasheetCostModel>(*cluster));
  if (!pred.ok()) {
    return Fail(pred.status().code() == absl::StatusCode::kFailedPrecondition ? kExitInfeasible
                                                                              : kExitBadInput,
                std::string(pred.status().message()));
  }
  const std::string format = args.GetOr("format", "json");
  if (format == "json") {
    nlohmann::json j = pl::ToJson(*pred);
    j["software_stack"] = {{"container", stack->container},
                           {"generation", std::string(pl::StackGenerationName(stack->generation))},
                           {"cuda_graph_scope", std::string(pl::CudaGraphScopeName(stack->cuda_graph_scope))}};
    if (stack->framework != pl::Framework::kMegatron) {
      j["software_stack"]["framework"] = std::string(pl::FrameworkName(stack->framework));
    }
    // A container older than every generation described: priced as the
    // oldest, its interval that of settings no published run measured.
    if (!pl::StackConstantsFor(*stack).predating_container.empty()) {
      j["software_stack"]["older_than_every_generation"] = true;
    }
    j["knobs_not_given"] = knobs_not_given;
    std::cout << j.dump(2) << "\n";
  } else if (format == "maxtext") {
    pl::EmitContext ctx;
    ctx.problem = pl::ToString(pl::ProblemOf(request)) + ", software stack " + pl::ToString(*stack);
    absl::StatusOr<pl::MaxTextConfig> mt = pl::EmitMaxText(*pred, *cluster, ctx);
    if (!mt.ok()) return Fail(kExitBadInput, std::string(mt.status().message()));
    std::cout << pl::RenderMaxText(*mt);
  } else if (format == "text") {
    std::cout << TextReport(*pred) << "software stack: " << pl::ToString(*stack) << "\n"
              << "knobs not given: "
              << (run_defaults ? "what a run does with them unset (run defaults; --search-knobs: the "
                                 "autotuner's choice)"
                               : "the autotuner's choice")
              << "\n";
  } else {
    return Fail(kExitBadInput, absl::StrCat("--format: expected json, text or maxtext, got '", format, "'"));
  }
  return kExitOk;
}

}  // namespace

MOETUNE_REGISTER_COMMAND(predict, "predict one training step (local, datasheet cost model)",
                         RunPredict);

}  // namespace moetune::cli
