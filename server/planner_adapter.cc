#include "server/planner_adapter.h"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "planner/emitters.h"
#include "planner/prediction.h"
#include "planner/report/report.h"
#include "planner/report/what_if.h"
#include "planner/request.h"
#include "planner/search.h"
#include "planner/search_space.h"
#include "planner/software_stack.h"
#include "planner/step_model.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
namespace p = ::moetune::planner;

// The API field a resolution error belongs to, in front of the planner's
// own message (which names the JSON key).
absl::Status InField(const std::string& field, const absl::Status& s) {
  absl::StatusCode code = s.code() == absl::StatusCode::kNotFound
                              ? absl::StatusCode::kInvalidArgument
                              : s.code();
  return absl::Status(code, absl::StrCat(field, ": ", s.message()));
}

// framework: "megatron" (or empty) / "maxtext"; software_stack: that
// framework's container version or "latest"/empty (planner/software_stack.h).
absl::StatusOr<p::SoftwareStack> ResolveStack(const std::string& framework_text,
                                              const std::string& text) {
  if (framework_text.size() > 32) {
    return absl::InvalidArgumentError("framework is longer than 32 characters");
  }
  absl::StatusOr<p::Framework> framework =
      framework_text.empty() ? p::Framework::kMegatron : p::ParseFramework(framework_text);
  if (!framework.ok()) return InField("framework", framework.status());
  if (text.size() > 32) {
    return absl::InvalidArgumentError("software_stack is longer than 32 characters");
  }
  absl::StatusOr<p::SoftwareStack> s = p::ParseSoftwareStack(*framework, text);
  if (!s.ok()) return InField("software_stack", s.status());
  return s;
}

constexpr int kMaxTopK = 20;
constexpr int kDefaultTopK = 3;

absl::StatusOr<p::Precision> ToPrecision(v1::Precision prec, const char* field) {
  switch (prec) {
    case v1::PRECISION_BF16: return p::Precision::kBf16;
    case v1::PRECISION_FP8: return p::Precision::kFp8;
    case v1::PRECISION_MXFP8: return p::Precision::kMxfp8;
    case v1::PRECISION_NVFP4: return p::Precision::kNvfp4;
    default: break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has unknown value ", static_cast<int>(prec)));
}

absl::StatusOr<p::SearchOptions> ToSearchOptions(const v1::PlanConstraints& c,
                                                 const p::ClusterSpec& cluster) {
  p::SearchOptions o;
  if (c.top_k() < 0 || c.top_k() > kMaxTopK) {
    return absl::InvalidArgumentError(
        absl::StrCat("constraints.top_k must be 0..", kMaxTopK, ", got ", c.top_k()));
  }
  o.top_k = c.top_k() == 0 ? kDefaultTopK : c.top_k();
  if (c.fix().size() > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("constraints.fix is ", c.fix().size(), " characters, limit 4096"));
  }
  if (!c.fix().empty()) {
    absl::StatusOr<p::FixedKnobs> parsed = p::ParseFixSpec(c.fix());
    if (!parsed.ok()) return InField("constraints.fix", parsed.status());
    o.constraints.fixed = *parsed;
  }
  const v1::ParallelConfig& f = c.fixed();
  struct Pin {
    const char* name;
    int value;
    std::optional<int>* target;
  };
  for (const Pin& pin : {Pin{"tensor_parallel", f.tensor_parallel(), &o.constraints.fixed.tp},
                         Pin{"pipeline_parallel", f.pipeline_parallel(), &o.constraints.fixed.pp},
                         Pin{"virtual_pipeline_stages", f.virtual_pipeline_stages(), &o.constraints.fixed.vp},
                         Pin{"context_parallel", f.context_parallel(), &o.constraints.fixed.cp},
                         Pin{"expert_parallel", f.expert_parallel(), &o.constraints.fixed.ep},
                         Pin{"expert_tensor_parallel", f.expert_tensor_parallel(), &o.constraints.fixed.etp},
                         Pin{"data_parallel", f.data_parallel(), &o.constraints.fixed.dp},
                         Pin{"micro_batch_size", f.micro_batch_size(), &o.constraints.fixed.mbs}}) {
    if (pin.value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("constraints.fixed.", pin.name, " must be >= 0, got ", pin.value));
    }
    if (pin.value == 0) continue;
    if (pin.target->has_value() && **pin.target != pin.value) {
      return absl::InvalidArgumentError(absl::StrCat(
          "constraints.fixed.", pin.name, " = ", pin.value, " contradicts constraints.fix (",
          **pin.target, ")"));
    }
    *pin.target = pin.value;
  }
  if (f.data_parallel_outermost()) {
    if (o.constraints.fixed.dp_outermost == false) {
      return absl::InvalidArgumentError(
          "constraints.fixed.data_parallel_outermost = true contradicts constraints.fix "
          "(dp_outermost=false)");
    }
    o.constraints.fixed.dp_outermost = true;
  }
  if (c.precision() != v1::PRECISION_UNSPECIFIED) {
    absl::StatusOr<p::Precision> prec = ToPrecision(c.precision(), "constraints.precision");
    if (!prec.ok()) return prec.status();
    o.constraints.precisions = {*prec};
  }
  if (c.max_memory_bytes_per_gpu() > 0) {
    o.max_memory_fraction =
        std::min(1.0, static_cast<double>(c.max_memory_bytes_per_gpu()) / cluster.gpu.hbm_bytes);
  }
  if (c.moe_load_imbalance() != 0) {
    if (!(c.moe_load_imbalance() >= 1.0 && c.moe_load_imbalance() <= 100.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "constraints.moe_load_imbalance must be in [1, 100], got ", c.moe_load_imbalance()));
    }
    o.constraints.moe_load_imbalance = c.moe_load_imbalance();
  }
  switch (c.routing()) {
    case v1::ROUTING_UNSPECIFIED:
    case v1::ROUTING_NATURAL:
      o.constraints.routing = p::Routing::kNatural;  // real training
      break;
    case v1::ROUTING_BALANCED:
      o.constraints.routing = p::Routing::kBalanced;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("constraints.routing: unknown value ", static_cast<int>(c.routing())));
  }
  switch (c.optimizer_states()) {
    case v1::OPTIMIZER_STATES_UNSPECIFIED:
    case v1::OPTIMIZER_STATES_FP32:
      o.constraints.optimizer_states = p::OptimizerStates::kFp32;
      break;
    case v1::OPTIMIZER_STATES_BF16:
      o.constraints.optimizer_states = p::OptimizerStates::kBf16Moments;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("constraints.optimizer_states: unknown value ",
                                                     static_cast<int>(c.optimizer_states())));
  }
  if (!(c.optimizer_offload_fraction() >= 0.0 && c.optimizer_offload_fraction() <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("constraints.optimizer_offload_fraction must be in [0, 1], got ",
                     c.optimizer_offload_fraction()));
  }
  if (c.optimizer_offload_overlap() && c.optimizer_offload_fraction() <= 0) {
    return absl::InvalidArgumentError(
        "constraints.optimizer_offload_overlap needs constraints.optimizer_offload_fraction > 0");
  }
  o.constraints.optimizer_offload_fraction = c.optimizer_offload_fraction();
  o.constraints.optimizer_offload_overlap = c.optimizer_offload_overlap();
  return o;
}

// The request as the planner states it (planner/request.h): one translation
// for plan jobs and predictions.
p::PlanRequest ToPlanRequest(const p::ModelSpec& model,
                                             const p::ClusterSpec& cluster,
                                             const p::TrainingShape& shape,
                                             const p::SearchOptions& o) {
  p::PlanRequest r;
  r.model = model;
  r.cluster = cluster;
  r.shape = shape;
  r.constraints = o.constraints;
  r.max_memory_fraction = o.max_memory_fraction;
  r.top_k = o.top_k;
  r.exhaustive = o.exhaustive;
  return r;
}

v1::Prediction ToProto(const p::Prediction& pred) {
  v1::Prediction out;
  out.set_step_time_seconds(pred.step_time_s);
  out.set_tokens_per_sec_per_gpu(pred.tokens_per_sec_per_gpu);
  out.set_tflops_per_gpu(pred.model_tflops_per_gpu);
  out.set_mfu(pred.mfu);
  out.set_peak_memory_bytes_per_gpu(static_cast<uint64_t>(pred.peak_memory_bytes));
  for (const p::Term& t : pred.breakdown) {
    (*out.mutable_breakdown_seconds())[t.name] += t.seconds;
    (*out.mutable_term_sources())[t.name] = t.source == p::CostSource::kCalibrated
                                                ? v1::TERM_SOURCE_CALIBRATED
                                                : v1::TERM_SOURCE_DATASHEET;
  }
  if (pred.interval.coverage > 0) {
    v1::PredictionInterval* iv = out.mutable_interval();
    iv->set_coverage(pred.interval.coverage);
    iv->set_tokens_per_sec_per_gpu_low(pred.interval.tokens_per_sec_per_gpu_low);
    iv->set_tokens_per_sec_per_gpu_high(pred.interval.tokens_per_sec_per_gpu_high);
    iv->set_basis(pred.interval.basis);
    for (const std::string& u : pred.interval.unmeasured) iv->add_unmeasured(u);
  }
  out.set_planner_json(p::ToJson(pred).dump());
  return out;
}

v1::ParallelConfig ToProto(const p::ParallelConfig& pc) {
  v1::ParallelConfig out;
  out.set_tensor_parallel(pc.tp);
  out.set_pipeline_parallel(pc.pp);
  out.set_virtual_pipeline_stages(pc.vp);
  out.set_context_parallel(pc.cp);
  out.set_expert_parallel(pc.ep);
  out.set_expert_tensor_parallel(pc.etp);
  out.set_data_parallel(pc.dp);
  out.set_micro_batch_size(pc.mbs);
  out.set_sequence_parallel(pc.tp > 1);  // the planner pairs SP with TP
  out.set_data_parallel_outermost(pc.dp_outermost);
  return out;
}

std::string Rfc3339(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone()); }
std::string NowRfc3339() { return Rfc3339(absl::Now()); }

// ClusterFit::fitted_at: when the newest successful result arrived.
std::string NewestResultTime(const std::vector<v1::ProbeResult>& results) {
  int64_t newest_ms = 0;
  for (const v1::ProbeResult& r : results) {
    if (r.error_code() == 0) newest_ms = std::max(newest_ms, r.received_unix_ms());
  }
  return newest_ms > 0 ? Rfc3339(absl::FromUnixMillis(newest_ms)) : "";
}

}  // namespace

absl::StatusOr<p::ModelSpec> PlannerAdapter::ResolveModel(const v1::ModelSpec& m) {
  absl::StatusOr<p::ModelSpec> spec;
  switch (m.source_case()) {
    case v1::ModelSpec::kPreset:
      spec = p::LoadModelPreset(m.preset());
      if (!spec.ok()) return InField("model.preset", spec.status());
      return spec;
    case v1::ModelSpec::kHfConfigJson:
      spec = p::ParseHfConfig(m.hf_config_json());
      if (!spec.ok()) return InField("model.hf_config_json", spec.status());
      return spec;
    case v1::ModelSpec::kNativeJson:
      spec = p::ParseNativeModelJson(m.native_json());
      if (!spec.ok()) return InField("model.native_json", spec.status());
      return spec;
    case v1::ModelSpec::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "model: one of preset, hf_config_json or native_json is required");
}

absl::StatusOr<p::ClusterSpec> PlannerAdapter::ResolveCluster(const v1::ClusterSpec& c) {
  absl::StatusOr<p::ClusterSpec> spec;
  switch (c.hardware_case()) {
    case v1::ClusterSpec::kPreset:
      spec = p::LoadClusterPreset(c.preset());
      if (!spec.ok()) return InField("cluster.preset", spec.status());
      return spec;
    case v1::ClusterSpec::kClusterJson:
      spec = p::ParseClusterJson(c.cluster_json());
      if (!spec.ok()) return InField("cluster.cluster_json", spec.status());
      return spec;
    case v1::ClusterSpec::HARDWARE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("cluster: one of preset or cluster_json is required");
}

absl::StatusOr<p::TrainingShape> PlannerAdapter::ResolveShape(const v1::TrainingShape& s) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  struct Field {
    const char* name;
    int64_t value;
  };
  for (const Field& f : {Field{"shape.gpus", s.gpus()}, Field{"shape.seq_len", s.seq_len()},
                         Field{"shape.global_batch_size", s.global_batch_size()}}) {
    if (f.value <= 0 || f.value > kMax) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.name, " must be in 1..", kMax, ", got ", f.value));
    }
  }
  p::TrainingShape shape;
  shape.gpus = static_cast<int>(s.gpus());
  shape.seq_len = static_cast<int>(s.seq_len());
  shape.global_batch = static_cast<int>(s.global_batch_size());
  if (!s.objective().empty()) {
    absl::StatusOr<p::Objective> o = p::ParseObjective(s.objective());
    if (!o.ok()) return InField("shape.objective", o.status());
    shape.objective = *o;
  }
  return shape;
}

absl::Status PlannerAdapter::ValidatePlan(const v1::SubmitPlanRequest& r) const {
  absl::StatusOr<p::ModelSpec> model = ResolveModel(r.model());
  if (!model.ok()) return model.status();
  absl::StatusOr<p::ClusterSpec> cluster = ResolveCluster(r.cluster());
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<p::TrainingShape> shape = ResolveShape(r.shape());
  if (!shape.ok()) return shape.status();
  absl::StatusOr<p::SearchOptions> options = ToSearchOptions(r.constraints(), *cluster);
  if (!options.ok()) return options.status();
  if (r.cluster().calibration_cluster().size() > 128) {
    return absl::InvalidArgumentError("cluster.calibration_cluster is longer than 128 characters");
  }
  absl::StatusOr<p::SoftwareStack> stack = ResolveStack(r.framework(), r.software_stack());
  if (!stack.ok()) return stack.status();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const p::CostModel>> PlannerAdapter::CostModelFor(
    const p::ClusterSpec& hardware, const std::string& calibration_cluster, std::string* note,
    std::string* fitted_at) const {
  auto prior = std::make_shared<const p::DatasheetCostModel>(hardware);
  if (calibration_cluster.empty()) {
    *note = absl::StrCat("datasheet priors for ", hardware.name, " (no calibration cluster given)");
    return prior;
  }
  absl::StatusOr<std::shared_ptr<const ClusterFit>> fitted = FitOf(calibration_cluster);
  if (!fitted.ok()) return fitted.status();
  const ClusterFit& fit = **fitted;
  if (fitted_at != nullptr) *fitted_at = fit.fitted_at;
  std::vector<std::string> gpus;
  for (const p::CalibrationTables& t : fit.tables) {
    gpus.push_back(t.gpu_name);
    if (!SameGpuModel(t.gpu_name, hardware.gpu.name)) continue;
    const std::string gpu = t.gpu_name;
    auto calibrated = p::CalibratedCostModel::Create(t, prior);
    if (!calibrated.ok()) {
      *note = absl::StrCat("datasheet priors for ", hardware.name, ": calibration of '",
                           calibration_cluster, "' for ", gpu, " is unusable (",
                           calibrated.status().message(), ")");
      return prior;
    }
    *note = absl::StrCat("calibrated from ", fit.results_used, " results of cluster '",
                         calibration_cluster, "' on ", gpu,
                         "; datasheet priors for terms without measurements");
    return std::shared_ptr<const p::CostModel>(std::move(*calibrated));
  }
  *note = absl::StrCat("datasheet priors for ", hardware.name, ": cluster '", calibration_cluster,
                       "' has calibration for [", absl::StrJoin(gpus, ", "), "], not for ",
                       hardware.gpu.name);
  return prior;
}

absl::StatusOr<PlanOutput> PlannerAdapter::Plan(const v1::SubmitPlanRequest& r,
                                                const ProgressFn& progress) const {
  absl::StatusOr<p::ModelSpec> model = ResolveModel(r.model());
  if (!model.ok()) return model.status();
  absl::StatusOr<p::ClusterSpec> cluster = ResolveCluster(r.cluster());
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<p::TrainingShape> shape = ResolveShape(r.shape());
  if (!shape.ok()) return shape.status();
  absl::StatusOr<p::SearchOptions> options = ToSearchOptions(r.constraints(), *cluster);
  if (!options.ok()) return options.status();
  absl::StatusOr<p::SoftwareStack> stack = ResolveStack(r.framework(), r.software_stack());
  if (!stack.ok()) return stack.status();
  PlanOutput out;
  std::string fitted_at;
  auto cost =
      CostModelFor(*cluster, r.cluster().calibration_cluster(), &out.calibration_note, &fitted_at);
  if (!cost.ok()) return cost.status();

  options->threads = options_.search_threads;
  options->progress = [&progress](const p::SearchProgress& sp) {
    progress(static_cast<int64_t>(sp.candidates_done), static_cast<int64_t>(sp.candidates_total));
  };
  p::SearchProblem problem{*model, *cluster, *shape};
  absl::StatusOr<p::SearchResult> result =
      p::SearchForStack(problem, *cost, *options, *stack);
  if (!result.ok()) return result.status();
  out.method = absl::StrFormat(
      "planner search (%s): %d candidates, %d evaluated, %d feasible, %.2f s",
      result->exhaustive ? "exhaustive" : "branch-and-bound", result->candidates_total,
      result->candidates_evaluated, result->candidates_feasible, result->search_seconds);

  p::EmitContext ctx;
  ctx.generated_at = NowRfc3339();
  ctx.problem = p::ToString(problem) + ", software stack " + p::ToString(*stack);
  int rank = 0;
  for (const p::RankedPlan& rp : result->top) {
    ++rank;
    v1::Plan& plan = out.plans.emplace_back();
    plan.set_rank(rank);
    *plan.mutable_parallel() = ToProto(rp.prediction.parallel);
    *plan.mutable_prediction() = ToProto(rp.prediction);
    const nlohmann::json knobs = p::ToJson(rp.prediction.knobs);  // items() needs an lvalue
    for (const auto& [key, value] : knobs.items()) {
      (*plan.mutable_knobs())[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
    out.configs[{rank, v1::CONFIG_FORMAT_JSON}] = p::EmitCanonicalJson(rp.prediction, ctx);
    if (stack->framework == p::Framework::kMaxText) {
      absl::StatusOr<p::MaxTextConfig> mt = p::EmitMaxText(rp.prediction, *cluster, ctx);
      if (!mt.ok()) return mt.status();
      out.configs[{rank, v1::CONFIG_FORMAT_MAXTEXT}] = p::RenderMaxText(*mt);
    } else {
      out.configs[{rank, v1::CONFIG_FORMAT_MEGATRON}] = p::EmitMegatronArgs(rp.prediction, ctx);
    }
  }
  // The report page (best plan), what-ifs re-planned with this job's cost
  // model choice when enabled.
  p::ReportInput report;
  report.result = *result;
  report.generated_at = ctx.generated_at;
  report.calibration.cluster = r.cluster().calibration_cluster();
  report.calibration.note = out.calibration_note;
  report.calibration.fitted_at = fitted_at;
  if (options_.report_what_ifs) {
    p::SearchOptions what_if_options = *options;
    what_if_options.top_k = 1;
    what_if_options.progress = nullptr;
    report.what_ifs = p::RunWhatIfs(
        problem, p::DefaultWhatIfScenarios(),
        [&](const p::SearchProblem& q) -> absl::StatusOr<p::SearchResult> {
          std::string ignored;
          auto c = CostModelFor(q.cluster, r.cluster().calibration_cluster(), &ignored);
          if (!c.ok()) return c.status();
          // The job's framework (the what-ifs keep the latest generation, as
          // before the framework existed).
          p::SoftwareStack latest;
          latest.framework = stack->framework;
          return p::SearchForStack(q, *c, what_if_options, latest);
        });
  }
  absl::StatusOr<std::string> html = p::RenderPlanReport(report);
  if (!html.ok()) return html.status();
  out.configs[{1, v1::CONFIG_FORMAT_HTML}] = *std::move(html);
  return out;
}

absl::StatusOr<v1::Prediction> PlannerAdapter::Predict(const v1::PredictRequest& r) const {
  absl::StatusOr<p::ModelSpec> model = ResolveModel(r.model());
  if (!model.ok()) return model.status();
  absl::StatusOr<p::ClusterSpec> cluster = ResolveCluster(r.cluster());
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<p::TrainingShape> shape = ResolveShape(r.shape());
  if (!shape.ok()) return shape.status();
  // `parallel` and `precision` are pins like constraints.fixed / precision.
  v1::PlanConstraints constraints = r.constraints();
  const v1::ParallelConfig& in = r.parallel();
  v1::ParallelConfig* pins = constraints.mutable_fixed();
  for (auto [given, pin, set] :
       {std::tuple{in.tensor_parallel(), pins->tensor_parallel(),
                   &v1::ParallelConfig::set_tensor_parallel},
        std::tuple{in.pipeline_parallel(), pins->pipeline_parallel(),
                   &v1::ParallelConfig::set_pipeline_parallel},
        std::tuple{in.virtual_pipeline_stages(), pins->virtual_pipeline_stages(),
                   &v1::ParallelConfig::set_virtual_pipeline_stages},
        std::tuple{in.context_parallel(), pins->context_parallel(),
                   &v1::ParallelConfig::set_context_parallel},
        std::tuple{in.expert_parallel(), pins->expert_parallel(),
                   &v1::ParallelConfig::set_expert_parallel},
        std::tuple{in.expert_tensor_parallel(), pins->expert_tensor_parallel(),
                   &v1::ParallelConfig::set_expert_tensor_parallel},
        std::tuple{in.data_parallel(), pins->data_parallel(),
                   &v1::ParallelConfig::set_data_parallel},
        std::tuple{in.micro_batch_size(), pins->micro_batch_size(),
                   &v1::ParallelConfig::set_micro_batch_size}}) {
    if (given != 0 && pin != 0 && given != pin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parallel (", given, ") contradicts constraints.fixed (", pin, ")"));
    }
    if (given != 0) (pins->*set)(given);
  }
  // The rank order is a pin like the degrees (true: DP outermost).
  if (in.data_parallel_outermost()) pins->set_data_parallel_outermost(true);
  if (r.precision() != v1::PRECISION_UNSPECIFIED) {
    if (constraints.precision() != v1::PRECISION_UNSPECIFIED &&
        constraints.precision() != r.precision()) {
      return absl::InvalidArgumentError("precision contradicts constraints.precision");
    }
    constraints.set_precision(r.precision());
  }
  absl::StatusOr<p::SearchOptions> options = ToSearchOptions(constraints, *cluster);
  if (!options.ok()) return options.status();
  absl::StatusOr<p::SoftwareStack> stack = ResolveStack(r.framework(), r.software_stack());
  if (!stack.ok()) return stack.status();
  if (!r.cuda_graph_scope().empty()) {
    if (r.cuda_graph_scope().size() > 32) {
      return absl::InvalidArgumentError("cuda_graph_scope is longer than 32 characters");
    }
    absl::StatusOr<p::CudaGraphScope> scope = p::ParseCudaGraphScope(r.cuda_graph_scope());
    if (!scope.ok()) return InField("cuda_graph_scope", scope.status());
    stack->cuda_graph_scope = *scope;
  }
  p::PlanRequest request = ToPlanRequest(*model, *cluster, *shape, *options);
  request.threads = options_.search_threads;
  request.stack = *stack;
  request.unpinned_knobs = r.search_unpinned_knobs() ? p::UnpinnedKnobs::kSearch
                                                     : p::UnpinnedKnobs::kRunDefaults;
  request.cuda_graph_scope_given = !r.cuda_graph_scope().empty();
  request.routing_given = constraints.routing() != v1::ROUTING_UNSPECIFIED ||
                          constraints.moe_load_imbalance() != 0;
  std::string note;
  auto cost = CostModelFor(*cluster, r.cluster().calibration_cluster(), &note);
  if (!cost.ok()) return cost.status();
  absl::StatusOr<p::Prediction> pred = p::PredictPinned(request, *cost);
  if (!pred.ok()) return pred.status();
  return ToProto(*pred);
}

absl::StatusOr<std::shared_ptr<const ClusterFit>> PlannerAdapter::FitOf(
    const std::string& cluster) const {
  absl::StatusOr<int64_t> count = store_->CountResults({cluster, "", 0});
  if (!count.ok()) return count.status();
  {
    absl::MutexLock lock(&fit_mu_);
    auto it = fits_.find(cluster);
    if (it != fits_.end() && it->second.first == *count) return it->second.second;
  }
  absl::StatusOr<std::vector<v1::ProbeResult>> results = store_->ListResults({cluster, "", 0});
  if (!results.ok()) return results.status();
  ClusterFit fitted = FitCluster(cluster, *results, options_.fit);
  fitted.fitted_at = NewestResultTime(*results);
  auto fit = std::make_shared<const ClusterFit>(std::move(fitted));
  absl::MutexLock lock(&fit_mu_);
  // Results only ever grow, so the count identifies the set.
  fits_[cluster] = {static_cast<int64_t>(results->size()), fit};
  return fit;
}

std::string PlannerAdapter::CalibrationSummary(const std::string& cluster) const {
  absl::StatusOr<std::shared_ptr<const ClusterFit>> fit = FitOf(cluster);
  if (!fit.ok()) return nlohmann::json{{"error", fit.status().ToString()}}.dump();
  return ToJson(**fit).dump(2);
}

std::map<std::string, std::vector<v1::StragglerFlag>> PlannerAdapter::Stragglers(
    const std::string& cluster) const {
  absl::StatusOr<std::shared_ptr<const ClusterFit>> fit = FitOf(cluster);
  if (!fit.ok()) return {};
  return (*fit)->stragglers;
}

}  // namespace moetune::server
