// `moetune plan`: search the best parallel layout and knobs for a model on a
// cluster, locally with the datasheet cost model, and print it as JSON,
// Megatron-LM arguments, MaxText YAML or text.
//
//   moetune plan --model M --cluster C --gpus N --seq S --gbs G
//       [--precision P|auto] [--fix k=v,...] [--top K] [--exhaustive]
//       [--explain] [--format json|megatron|maxtext|text|html] [--out FILE]
//       [--max-memory-fraction F] [--dispatchers alltoall,fused_dedup]
//       [--threads N] [--objective pretrain|finetune|lora] [--stack CONTAINER]
//       [--framework megatron|maxtext] [--routing natural|balanced]
//       [--moe-imbalance X] [--dp-outermost] [--optimizer-states fp32|bf16]
//       [--optimizer-offload-fraction F [--optimizer-offload-overlap]]
//
// --optimizer-states: the Adam state's precision every candidate runs with
// (fp32 default; bf16: BF16 moments and main grads, Megatron's
// --use-precision-aware-optimizer, emitted into the Megatron arguments).
// Never searched: it changes the numerics, the user decides.
//
// --dp-outermost: pins Megatron's rank order with data parallelism
// outermost (tp-cp-ep-pp-dp, --use-tp-pp-dp-mapping in the emitted
// arguments); the same as --fix dp_outermost=true. Without it the plans use
// Megatron's default order (the search never chooses the order).
//
// --routing: how the MoE router spreads tokens (planner/routing.h).
// natural (the default: real training) prices each MoE layer at the pace of
// its busiest expert-parallel rank; balanced is what the published
// benchmarks force (--moe-router-force-load-balancing, emitted into the
// Megatron arguments). --moe-imbalance X (>= 1) sets the busiest rank's
// tokens / mean explicitly instead.
//
// Exit codes: 0 ok, 1 internal failure, 2 bad input (one line on stderr),
// 3 no feasible plan (the tightest constraint on stderr).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "planner/cost_model.h"
#include "planner/emitters.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/report/report.h"
#include "planner/request.h"
#include "planner/report/what_if.h"
#include "planner/search.h"
#include "planner/software_stack.h"
#include "planner/training_config.h"
#include "planner/units.h"
#include "tools/cli/args.h"
#include "tools/cli/command_registry.h"

namespace moetune::cli {
namespace {

namespace pl = ::moetune::planner;

const std::vector<FlagSpec>& PlanFlags() {
  static const std::vector<FlagSpec> specs = {
      {"model", false, "model preset name (e.g. deepseek-v3) or a config.json / native JSON file"},
      {"cluster", false, "cluster preset name (e.g. gb200-nvl72) or a cluster JSON file"},
      {"gpus", false, "number of GPUs"},
      {"seq", false, "sequence length (tokens)"},
      {"gbs", false, "global batch (sequences per step)"},
      {"precision", false, "bf16 (default), fp8, mxfp8, nvfp4, a comma list, or auto (all the GPU supports)"},
      {"fix", false, "pin knobs: tp=1,ep=64,recompute=full,dispatcher=alltoall,offload_layers=20,... (see planner/search_space.h)"},
      {"top", false, "number of layouts to report (default 5)"},
      {"exhaustive", true, "score every candidate of the space (memory check only)"},
      {"explain", true, "print, per pruning rule, how many candidates it removed and one example"},
      {"format", false, "json (default), megatron, maxtext, text or html (report page with what-ifs)"},
      {"out", false, "write the output to FILE (atomically) instead of stdout"},
      {"max-memory-fraction", false,
       "fraction of the GPU memory (as nvidia-smi reports it) a plan may use (default 0.94)"},
      {"dispatchers", false, "allowed MoE dispatchers: alltoall, fused_dedup (default both)"},
      {"threads", false, "worker threads (default: one per core)"},
      {"objective", false, "pretrain (default), finetune or lora"},
      {"stack", false, "software stack: container version (Megatron: 26.02, 26.04.01, 26.06, ...; older ones are priced as 26.02 with the interval of settings no published run measured; MaxText: maxtext-2026-09-10, ...) or latest (default)"},
      {"framework", false, "megatron (default) or maxtext: whose rules, search space and config the plan follows"},
      {"routing", false, "MoE routing: natural (default: real training, priced at the busiest expert-parallel rank) or balanced (forced, as the published benchmarks run)"},
      {"moe-imbalance", false, "tokens on the busiest GPU's experts / mean, >= 1 (default: what --routing implies)"},
      {"optimizer-offload-fraction", false, "share of every candidate's optimizer shard stepped on the host (Megatron --optimizer-cpu-offload --optimizer-offload-fraction F; 0..1, default 0, never searched, Megatron only)"},
      {"optimizer-offload-overlap", true, "pipeline the offloaded optimizer's copies with its CPU steps (--overlap-cpu-optimizer-d2h-h2d)"},
      {"optimizer-states", false, "Adam state precision: fp32 (default) or bf16 (BF16 moments and main grads, --use-precision-aware-optimizer; never searched, Megatron only)"},
      {"dp-outermost", true, "pin Megatron's rank order with data parallel outermost, tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping); as --fix dp_outermost=true; default: Megatron's order tp-cp-ep-dp-pp, never searched"},
      {"help", true, "show this help"},
  };
  return specs;
}

int Fail(int code, const std::string& message) {
  std::cerr << "moetune plan: " << message << "\n";
  return code;
}

int ExitCodeFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kOutOfRange:
      return kExitBadInput;
    case absl::StatusCode::kFailedPrecondition:
      return kExitInfeasible;
    default:
      return kExitFailure;
  }
}

// One line: status messages never carry newlines onto the terminal.
std::string OneLine(absl::string_view message) {
  std::string s(message);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

absl::StatusOr<int> RequiredPositiveInt(const Args& args, const std::string& name) {
  absl::StatusOr<std::optional<long long>> v = args.GetInt(name);
  if (!v.ok()) return v.status();
  if (!v->has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("missing --", name));
  }
  if (**v <= 0 || **v > (1LL << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a positive integer, got ", **v));
  }
  return static_cast<int>(**v);
}

// Writes `text` to `path` through a temporary file in the same directory and
// a rename, so readers never see a partial file.
absl::Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", path, ": cannot create ", tmp, ": ", std::strerror(errno)));
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !flushed || !closed) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("--out ", path, ": write failed: ",
                                            std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", path, ": cannot rename into place: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string TextReport(const pl::SearchResult& r, const pl::EmitContext& ctx) {
  std::string out = pl::EmitText(r.best.prediction, ctx);
  absl::StrAppend(&out, "\ntop ", r.top.size(), " layouts:\n");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const pl::Prediction& p = r.top[i].prediction;
    // With the interval's ends: layouts whose predictions differ by less
    // than the interval's width are ranked by the model alone.
    const std::string range =
        p.interval.coverage > 0
            ? absl::StrFormat(" (%.0f%%: %.0f .. %.0f)", 100 * p.interval.coverage,
                              p.interval.tokens_per_sec_per_gpu_low,
                              p.interval.tokens_per_sec_per_gpu_high)
            : std::string();
    absl::StrAppend(&out, absl::StrFormat("  %zu. %9.1f tok/s/GPU%s  %6.1f GiB  %s\n", i + 1,
                                          p.tokens_per_sec_per_gpu, range,
                                          p.peak_memory_bytes / pl::units::kGiB,
                                          pl::ToString(r.top[i].plan)));
  }
  absl::StrAppend(&out, "\nPareto front (peak memory vs tokens/s/GPU):\n");
  for (const pl::RankedPlan& rp : r.pareto) {
    const pl::Prediction& p = rp.prediction;
    absl::StrAppend(&out, absl::StrFormat("  %6.1f GiB  %9.1f tok/s/GPU  %s\n",
                                          p.peak_memory_bytes / pl::units::kGiB,
                                          p.tokens_per_sec_per_gpu,
                                          pl::ToString(rp.plan)));
  }
  // What "feasible" means: the peak-memory budget (max_memory_fraction of
  // the GPU memory nvidia-smi reports).
  const double hbm = r.best.prediction.hbm_bytes;
  const std::string budget =
      hbm > 0 ? absl::StrFormat(" (peak memory within %.1f GiB = %.2f x %.1f GiB)",
                                r.memory_limit_bytes / pl::units::kGiB, r.memory_limit_bytes / hbm,
                                hbm / pl::units::kGiB)
              : std::string();
  absl::StrAppend(&out,
                  absl::StrFormat("\nsearch (%s): %u candidates, %u scored, %u "
                                  "feasible%s, %.3f s\n",
                                  r.exhaustive ? "exhaustive" : "default",
                                  r.candidates_total, r.candidates_evaluated,
                                  r.candidates_feasible, budget, r.search_seconds));
  return out;
}

int RunPlan(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> parsed = Args::Parse(argv, PlanFlags());
  if (!parsed.ok()) return Fail(kExitBadInput, OneLine(parsed.status().message()));
  const Args& args = *parsed;
  if (args.Has("help")) {
    std::cout << "usage: moetune plan --model M --cluster C --gpus N --seq S --gbs G "
                 "[flags]\n\n"
              << Args::Usage(PlanFlags());
    return kExitOk;
  }
  if (!args.positional().empty()) {
    return Fail(kExitBadInput,
                absl::StrCat("unexpected argument '", args.positional()[0], "'"));
  }

  pl::SearchProblem problem;
  {
    const std::optional<std::string> model = args.Get("model");
    const std::optional<std::string> cluster = args.Get("cluster");
    if (!model) return Fail(kExitBadInput, "missing --model");
    if (!cluster) return Fail(kExitBadInput, "missing --cluster");
    absl::StatusOr<pl::ModelSpec> m = pl::LoadModelArg(*model);
    if (!m.ok()) return Fail(kExitBadInput, OneLine(m.status().message()));
    absl::StatusOr<pl::ClusterSpec> c = pl::LoadClusterArg(*cluster);
    if (!c.ok()) return Fail(kExitBadInput, OneLine(c.status().message()));
    problem.model = *std::move(m);
    problem.cluster = *std::move(c);
  }
  for (const char* name : {"gpus", "seq", "gbs"}) {
    absl::StatusOr<int> v = RequiredPositiveInt(args, name);
    if (!v.ok()) return Fail(kExitBadInput, OneLine(v.status().message()));
    if (std::string(name) == "gpus") problem.shape.gpus = *v;
    if (std::string(name) == "seq") problem.shape.seq_len = *v;
    if (std::string(name) == "gbs") problem.shape.global_batch = *v;
  }
  if (const std::optional<std::string> o = args.Get("objective")) {
    absl::StatusOr<pl::Objective> obj = pl::ParseObjective(*o);
    if (!obj.ok()) return Fail(kExitBadInput, OneLine(obj.status().message()));
    problem.shape.objective = *obj;
  }

  pl::SearchOptions options;
  options.exhaustive = args.Has("exhaustive") && args.GetOr("exhaustive", "") == "true";
  if (const std::optional<std::string> p = args.Get("precision")) {
    if (*p == "auto") {
      options.constraints.precisions = pl::SupportedPrecisions(problem.cluster.gpu);
    } else {
      for (absl::string_view part : absl::StrSplit(*p, ',', absl::SkipEmpty())) {
        absl::StatusOr<pl::Precision> prec =
            pl::ParsePrecision(std::string_view(part.data(), part.size()));
        if (!prec.ok()) {
          return Fail(kExitBadInput, absl::StrCat("--precision: ", prec.status().message()));
        }
        options.constraints.precisions.push_back(*prec);
      }
      if (options.constraints.precisions.empty()) {
        return Fail(kExitBadInput, "--precision: empty list");
      }
    }
  }
  if (const std::optional<std::string> d = args.Get("dispatchers")) {
    for (absl::string_view part : absl::StrSplit(*d, ',', absl::SkipEmpty())) {
      absl::StatusOr<pl::Dispatcher> disp =
          pl::ParseDispatcher(std::string_view(part.data(), part.size()));
      if (!disp.ok()) {
        return Fail(kExitBadInput, absl::StrCat("--dispatchers: ", disp.status().message()));
      }
      options.constraints.dispatchers.push_back(*disp);
    }
  }
  // Natural routing (real training) unless --routing says otherwise.
  absl::StatusOr<pl::Routing> routing = pl::ParseRouting(args.GetOr("routing", "natural"));
  if (!routing.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--routing: ", routing.status().message()));
  }
  options.constraints.routing = *routing;
  absl::StatusOr<pl::OptimizerStates> states =
      pl::ParseOptimizerStates(args.GetOr("optimizer-states", "fp32"));
  if (!states.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--optimizer-states: ", states.status().message()));
  }
  options.constraints.optimizer_states = *states;
  absl::StatusOr<OptimizerOffloadFlags> offload = ParseOptimizerOffloadFlags(args);
  if (!offload.ok()) return Fail(kExitBadInput, std::string(offload.status().message()));
  options.constraints.optimizer_offload_fraction = offload->fraction;
  options.constraints.optimizer_offload_overlap = offload->overlap;
  {
    absl::StatusOr<std::optional<double>> imbalance = args.GetDouble("moe-imbalance");
    if (!imbalance.ok()) return Fail(kExitBadInput, OneLine(imbalance.status().message()));
    if (imbalance->has_value()) {
      if (!(**imbalance >= 1.0)) {
        return Fail(kExitBadInput,
                    absl::StrCat("--moe-imbalance must be >= 1.0, got ", **imbalance));
      }
      options.constraints.moe_load_imbalance = **imbalance;
    }
  }
  if (const std::optional<std::string> f = args.Get("fix")) {
    absl::StatusOr<pl::FixedKnobs> fixed = pl::ParseFixSpec(*f);
    if (!fixed.ok()) return Fail(kExitBadInput, OneLine(fixed.status().message()));
    options.constraints.fixed = *fixed;
  }
  if (args.Has("dp-outermost")) {
    if (options.constraints.fixed.dp_outermost == false) {
      return Fail(kExitBadInput, "--dp-outermost contradicts --fix dp_outermost=false");
    }
    options.constraints.fixed.dp_outermost = true;
  }
  {
    absl::StatusOr<std::optional<long long>> top = args.GetInt("top");
    if (!top.ok()) return Fail(kExitBadInput, OneLine(top.status().message()));
    if (top->has_value()) {
      if (**top < 1 || **top > 1000) {
        return Fail(kExitBadInput, absl::StrCat("--top must be from 1 to 1000, got ", **top));
      }
      options.top_k = static_cast<int>(**top);
    }
    absl::StatusOr<std::optional<long long>> threads = args.GetInt("threads");
    if (!threads.ok()) return Fail(kExitBadInput, OneLine(threads.status().message()));
    if (threads->has_value()) {
      if (**threads < 0 || **threads > 1024) {
        return Fail(kExitBadInput,
                    absl::StrCat("--threads must be from 0 to 1024, got ", **threads));
      }
      options.threads = static_cast<int>(**threads);
    }
    absl::StatusOr<std::optional<double>> frac = args.GetDouble("max-memory-fraction");
    if (!frac.ok()) return Fail(kExitBadInput, OneLine(frac.status().message()));
    if (frac->has_value()) options.max_memory_fraction = **frac;
  }
  const std::string format = args.GetOr("format", "json");
  if (format != "json" && format != "megatron" && format != "maxtext" && format != "text" &&
      format != "html") {
    return Fail(kExitBadInput, absl::StrCat("--format must be json, megatron, maxtext, "
                                            "text or html, got '", format, "'"));
  }
  const bool explain = args.Has("explain") && args.GetOr("explain", "") == "true";
  const std::optional<std::string> out_path = args.Get("out");

  // Progress on a terminal only, and never in JSON mode.
  bool progress_shown = false;
  if (format != "json" && ::isatty(STDERR_FILENO)) {
    options.progress = [&progress_shown](const pl::SearchProgress& p) {
      const double pct = p.candidates_total == 0
                             ? 100.0
                             : 100.0 * p.candidates_done / p.candidates_total;
      std::fprintf(stderr, "\rplan: %5.1f%%  %llu scored  best %.1f tok/s/GPU  %.1f s ",
                   pct, static_cast<unsigned long long>(p.candidates_evaluated),
                   p.best_tokens_per_sec_per_gpu, p.seconds);
      std::fflush(stderr);
      progress_shown = true;
    };
  }

  absl::StatusOr<pl::Framework> framework = pl::ParseFramework(args.GetOr("framework", "megatron"));
  if (!framework.ok()) {
    return Fail(kExitBadInput, "--framework: " + OneLine(framework.status().message()));
  }
  if ((format == "megatron" && *framework != pl::Framework::kMegatron) ||
      (format == "maxtext" && *framework != pl::Framework::kMaxText)) {
    return Fail(kExitBadInput, absl::StrCat("--format ", format, " needs --framework ", format,
                                            " (the plan is searched under that framework's rules)"));
  }
  absl::StatusOr<pl::SoftwareStack> stack =
      pl::ParseSoftwareStack(*framework, args.GetOr("stack", ""));
  if (!stack.ok()) return Fail(kExitBadInput, "--stack: " + OneLine(stack.status().message()));
  options.framework = stack->framework;
  auto cost = std::make_shared<pl::DatasheetCostModel>(problem.cluster);
  absl::StatusOr<pl::SearchResult> result = pl::SearchForStack(problem, cost, options, *stack);
  if (progress_shown) std::fprintf(stderr, "\n");
  if (!result.ok()) {
    return Fail(ExitCodeFor(result.status()), OneLine(result.status().message()));
  }

  pl::EmitContext ctx;
  ctx.generated_at = UtcNow();
  ctx.problem = pl::ToString(problem) + ", software stack " + pl::ToString(*stack);
  std::string text;
  if (format == "json") {
    nlohmann::json j = pl::ToJson(*result);
    j["generated_at"] = ctx.generated_at;
    text = j.dump(2) + "\n";
  } else if (format == "megatron") {
    text = pl::EmitMegatronArgs(result->best.prediction, ctx);
  } else if (format == "maxtext") {
    absl::StatusOr<pl::MaxTextConfig> mt =
        pl::EmitMaxText(result->best.prediction, problem.cluster, ctx);
    if (!mt.ok()) return Fail(ExitCodeFor(mt.status()), OneLine(mt.status().message()));
    text = pl::RenderMaxText(*mt);
  } else if (format == "html") {
    // The report page (planner/report), each what-if re-planned like this plan.
    pl::ReportInput report;
    report.result = *result;
    report.what_ifs = pl::RunWhatIfs(problem, pl::DefaultWhatIfScenarios(),
                                     pl::DatasheetReplanner(options));
    report.generated_at = ctx.generated_at;
    absl::StatusOr<std::string> html = pl::RenderPlanReport(report);
    if (!html.ok()) return Fail(kExitFailure, OneLine(html.status().message()));
    text = *std::move(html);
  } else {
    text = TextReport(*result, ctx);
  }
  if (explain) {
    const std::string why = pl::ExplainPruning(*result);
    if (format == "text" && !out_path) {
      text += "\n" + why;
    } else {
      std::cerr << why;
    }
  }
  if (out_path) {
    absl::Status s = WriteAtomically(*out_path, text);
    if (!s.ok()) return Fail(ExitCodeFor(s), OneLine(s.message()));
  } else {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) return Fail(kExitFailure, "writing to stdout failed");
  }
  return kExitOk;
}

}  // namespace

MOETUNE_REGISTER_COMMAND(plan, "search the best parallel layout and knobs (local, datasheet cost model)",
                         RunPlan);

}  // namespace moetune::cli
