#include "planner/request.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "planner/framework_rules.h"
#include "planner/internal/strings.h"
#include "planner/prediction_interval.h"
#include "planner/routing.h"
#include "planner/run_defaults.h"
#include "planner/step_model.h"

namespace moetune::planner {

using internal::Sv;

SearchProblem ProblemOf(const PlanRequest& r) {
  return SearchProblem{r.model, r.cluster, r.shape};
}

SearchOptions OptionsOf(const PlanRequest& r) {
  SearchOptions o;
  o.top_k = r.top_k;
  o.exhaustive = r.exhaustive;
  o.constraints = r.constraints;
  o.max_memory_fraction = r.max_memory_fraction;
  o.threads = r.threads;
  o.framework = r.stack.framework;
  return o;
}

absl::StatusOr<SearchResult> PlanSearch(const PlanRequest& r,
                                        std::shared_ptr<const CostModel> cost_model) {
  return SearchForStack(ProblemOf(r), std::move(cost_model), OptionsOf(r), r.stack);
}

namespace {

// The one (layout, knobs) candidate of a request that pins everything, or
// nullopt when something is left to search.
std::optional<std::pair<ParallelConfig, Knobs>> SingleCandidate(const PlanRequest& r) {
  const FixedKnobs& f = r.constraints.fixed;
  if (!(f.tp && f.pp && f.vp && f.ep && f.etp && f.cp && f.mbs && f.recompute &&
        f.offload_modules && f.dispatcher && f.grouped_gemm && (f.overlap_exact || f.overlap) &&
        f.comm_streams && f.cuda_graphs && f.precision)) {
    return std::nullopt;
  }
  ParallelConfig p;
  p.tp = *f.tp, p.pp = *f.pp, p.vp = *f.vp, p.ep = *f.ep, p.etp = *f.etp, p.cp = *f.cp;
  p.mbs = *f.mbs;
  p.dp = f.dp.value_or(0);
  ApplyLayoutPins(f, &p);
  Knobs k;
  ApplyKnobPins(f, &k);  // every knob is pinned
  ApplyUnsearchedKnobs(r.constraints, &k);
  return std::make_pair(p, k);
}

// The step of `request` as pinned (or filled with the run defaults).
absl::StatusOr<Prediction> PredictPinnedRun(const PlanRequest& request,
                                            std::shared_ptr<const CostModel> cost_model) {
  PlanRequest r = request;
  if (UsesRunDefaults(request)) {
    absl::StatusOr<PlanRequest> pinned = WithRunDefaults(request, cost_model);
    if (!pinned.ok()) return pinned.status();
    r = *std::move(pinned);
  }
  PlanRequest one = r;
  one.top_k = 1;
  absl::StatusOr<SearchResult> result = PlanSearch(one, cost_model);
  if (result.ok()) return result->best.prediction;
  // Everything pinned and it does not fit: the prediction says so (fits =
  // false) rather than refusing -- the question was what this plan does.
  const auto single = SingleCandidate(r);
  if (result.status().code() != absl::StatusCode::kFailedPrecondition || !single) {
    return result.status();
  }
  if (const auto rule = FirstRule(
          FrameworkLayoutViolations(r.stack.framework, r.model, r.shape, single->first))) {
    return absl::InvalidArgumentError(RuleText(*rule));
  }
  const NormalizedKnobs n =
      NormalizeFor(r.stack.framework, r.model, single->first, r.constraints.fixed, single->second,
                   r.stack.cuda_graph_scope == CudaGraphScope::kFullIteration);
  if (n.violation) return absl::InvalidArgumentError(RuleText(*n.violation));
  absl::StatusOr<StepModel> sm = StepModel::Create(r.model, r.cluster, r.shape,
                                                   std::move(cost_model), StackConstantsFor(r.stack));
  if (!sm.ok()) return sm.status();
  absl::StatusOr<Prediction> p = sm->Predict(single->first, n.knobs);
  if (p.ok()) p->framework = r.stack.framework;
  return p;
}

// `iv` widened to cover `other` as well (the union of the two ranges).
void WidenTo(const PredictionInterval& other, PredictionInterval* iv) {
  iv->tokens_per_sec_per_gpu_low =
      std::min(iv->tokens_per_sec_per_gpu_low, other.tokens_per_sec_per_gpu_low);
  iv->tokens_per_sec_per_gpu_high =
      std::max(iv->tokens_per_sec_per_gpu_high, other.tokens_per_sec_per_gpu_high);
}

// The two ends of what the execution knobs a request leaves to the run
// defaults could be (`unset`, RunKnobsNotGiven), each as requests that pin them,
// tried in order until the framework accepts one:
// - eager: CUDA graphs off, the NCCL all-to-all dispatcher, no
//   communication overlap -- how Megatron-Bridge's functional and SFT
//   recipes run (e.g. qwen3_30b_a3b_sft_16gpu_h100_bf16_config);
// - graphed: CUDA graphs as the run defaults have them (on, unless
//   Megatron-Core excludes them with the pinned settings), capturing the
//   whole iteration for a MoE model (--cuda-graph-impl full_iteration);
//   every overlap on, the EP A2A overlap included -- or, where Megatron-Core
//   refuses that overlap with the pinned settings (e.g. the whole MoE layer
//   recomputed), every other one; the dispatcher stays the default (DeepEP /
//   HybridEP, the faster one).
// These are the slow and the fast settings for most runs, not for every one:
// capturing the whole iteration prices natural routing's static token
// budget (padded expert rows), which can cost more than graphs save, so the
// ends are named by their settings, not by speed.
// Grouped GEMM and the stream count keep the defaults at both ends: every
// 2026 MoE recipe runs grouped GEMM, and the streams do not decide what is
// hidden in the step model. A knob the request pins stays as pinned.
struct KnobEnd {
  const char* name;
  std::vector<PlanRequest> tries;
};
std::array<KnobEnd, 2> KnobEnds(const PlanRequest& r, const std::vector<std::string>& unset) {
  const auto not_given = [&](std::string_view flag) {
    return std::find(unset.begin(), unset.end(), flag) != unset.end();
  };
  PlanRequest slow = r, fast = r;
  // Graphs on is the run default: the fast end leaves them to it, so that
  // Megatron-Core's own exclusions turn them off where it would (NormalizeFor).
  if (not_given("--cuda-graphs")) slow.constraints.fixed.cuda_graphs = false;
  if (not_given("--cuda-graph-scope")) {
    slow.cuda_graph_scope_given = fast.cuda_graph_scope_given = true;
    slow.stack.cuda_graph_scope = CudaGraphScope::kModules;
    fast.stack.cuda_graph_scope = CudaGraphScope::kFullIteration;
  }
  if (not_given("--dispatcher")) slow.constraints.fixed.dispatcher = Dispatcher::kAllToAll;
  std::vector<PlanRequest> fast_tries;
  if (not_given("--overlap")) {
    Overlap none;
    none.tp_comm = none.ep_comm = none.dp_comm = none.pp_comm = false;
    slow.constraints.fixed.overlap_exact = none;
    slow.constraints.fixed.overlap = false;
    fast.constraints.fixed.overlap = true;
    fast_tries.push_back(fast);
    Overlap all_but_ep;
    all_but_ep.ep_comm = false;
    fast.constraints.fixed.overlap_exact = all_but_ep;
  }
  fast_tries.push_back(std::move(fast));
  return {KnobEnd{"eager", {std::move(slow)}}, KnobEnd{"graphed", std::move(fast_tries)}};
}

// The prediction's interval when the request left execution knobs to the
// run defaults: the run's own settings are then a guess the layout does not
// carry, and they move the step by up to ~2x (CUDA graphs on a small-expert
// MoE, the EP A2A overlap across nodes). The interval becomes the union of
// the intervals at the defaults and at both ends of what those knobs could
// be (KnobEnds), each end with its own basis (an end outside the settings
// published runs measured gets the wider errors, prediction_interval.h).
// The prediction itself stays the defaults'. An end the framework refuses
// in every form is left out of the union, and the basis says so.
absl::StatusOr<Prediction> WithKnobsNotGiven(const PlanRequest& request,
                                             absl::StatusOr<Prediction> p,
                                             const std::shared_ptr<const CostModel>& cost_model) {
  if (!p.ok()) return p;
  const std::vector<std::string> unset = RunKnobsNotGiven(request);
  if (unset.empty()) return p;
  PredictionInterval& iv = p->interval;
  std::vector<std::string> ends;
  for (const KnobEnd& end : KnobEnds(request, unset)) {
    absl::StatusOr<Prediction> e = absl::UnknownError("no settings to try");
    for (const PlanRequest& attempt : end.tries) {
      e = PredictPinnedRun(attempt, cost_model);
      if (e.ok()) break;
    }
    if (!e.ok()) {
      ends.push_back(absl::StrCat(end.name, " refused: ", e.status().message()));
      continue;
    }
    WidenTo(e->interval, &iv);
    ends.push_back(absl::StrFormat("%s %.1f", end.name, e->tokens_per_sec_per_gpu));
  }
  iv.basis = absl::StrCat(iv.basis, "; widened over what the knobs not given could be (",
                          absl::StrJoin(ends, ", "), " tokens/s/GPU)");
  iv.unmeasured.push_back(absl::StrCat("knobs not given (", absl::StrJoin(unset, " "), ")"));
  return p;
}

// The prediction's interval when a MoE request does not say how its router
// spreads tokens (routing_given false). The point stays the request's
// routing -- natural for the CLI and the API, real training, priced at the
// busiest expert-parallel rank (routing.h) -- but a run may just as well
// force the balance (--moe-router-force-load-balancing: the published
// benchmark tables, recipe-index and verification-card performance runs),
// which is faster by the imbalance the point carries. The interval becomes
// the union with the other routing's interval (with its own knob ends: the
// run's knobs are as unknown there), and the basis names that prediction.
// An explicit imbalance counts as given. An other routing the framework
// refuses is left out, and the basis says so.
absl::StatusOr<Prediction> WithRoutingNotGiven(const PlanRequest& request,
                                               absl::StatusOr<Prediction> p,
                                               const std::shared_ptr<const CostModel>& cost_model) {
  if (!p.ok() || request.routing_given || !request.model.IsMoe()) return p;
  PlanRequest other = request;
  other.routing_given = true;
  other.constraints.routing = request.constraints.routing == Routing::kNatural
                                  ? Routing::kBalanced
                                  : Routing::kNatural;
  absl::StatusOr<Prediction> e = PredictPinned(other, cost_model);  // routing given there
  PredictionInterval& iv = p->interval;
  const std::string other_name(RoutingName(other.constraints.routing));
  if (!e.ok()) {
    iv.basis = absl::StrCat(iv.basis, "; routing not given, ", other_name,
                            " routing refused: ", e.status().message());
  } else {
    WidenTo(e->interval, &iv);
    iv.basis = absl::StrFormat("%s; routing not given: widened over %s routing (%.1f "
                               "tokens/s/GPU, interval %.1f .. %.1f)",
                               iv.basis, other_name, e->tokens_per_sec_per_gpu,
                               e->interval.tokens_per_sec_per_gpu_low,
                               e->interval.tokens_per_sec_per_gpu_high);
  }
  iv.unmeasured.push_back("routing not given (--routing)");
  return p;
}

}  // namespace

absl::StatusOr<Prediction> PredictPinned(const PlanRequest& request,
                                         std::shared_ptr<const CostModel> cost_model) {
  absl::StatusOr<Prediction> p = PredictPinnedRun(request, cost_model);
  p = WithKnobsNotGiven(request, std::move(p), cost_model);
  return WithRoutingNotGiven(request, std::move(p), cost_model);
}

absl::StatusOr<std::optional<std::string>> ReadIfFile(std::string_view arg) {
  const std::string path(arg);
  if (path.empty() || ::access(path.c_str(), R_OK) != 0) return std::optional<std::string>();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::optional<std::string>(ss.str());
}

std::string ModelNameFromPath(std::string_view path) {
  // ".../Qwen2.5-7B/config.json" -> "Qwen2.5-7B"; ".../glm-4.5.json" -> "glm-4.5".
  const std::filesystem::path p(path);
  const std::string file = p.filename().string();
  const absl::string_view stem = absl::StripSuffix(file, ".json");
  const std::string dir = p.parent_path().filename().string();
  if (stem == "config" && !dir.empty() && dir != "." && dir != "..") return dir;
  return std::string(stem);
}

absl::StatusOr<ModelSpec> LoadModelArg(std::string_view arg) {
  absl::StatusOr<std::optional<std::string>> text = ReadIfFile(arg);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return LoadModelPreset(arg);
  absl::StatusOr<ModelSpec> m = ParseModelJson(**text);
  if (!m.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(arg), ": ", m.status().message()));
  }
  if (m->name.empty() || m->name == m->model_type) m->name = ModelNameFromPath(arg);
  return m;
}

absl::StatusOr<ClusterSpec> LoadClusterArg(std::string_view arg) {
  absl::StatusOr<std::optional<std::string>> text = ReadIfFile(arg);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return LoadClusterPreset(arg);
  absl::StatusOr<ClusterSpec> c = ParseClusterJson(**text);
  if (!c.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(arg), ": ", c.status().message()));
  }
  return c;
}

}  // namespace moetune::planner
