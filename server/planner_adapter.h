// PlannerAdapter: the server's bridge to the planner library.
//
//  * resolves API messages into planner inputs (model preset or JSON, cluster
//    preset or JSON, training shape, constraints), with InvalidArgument naming
//    the API field (e.g. "model.hf_config_json: ... num_hidden_layers ...");
//  * picks the cost model: the calibration tables fitted from the store for
//    the request's calibration_cluster when one matches the GPU model, else
//    datasheet priors; the job says which;
//  * runs the planner search (planner/search.h) for plan jobs and renders the
//    top plans with the planner's emitters (canonical JSON, Megatron-LM
//    arguments, MaxText YAML);
//  * computes calibration summaries and straggler flags (server/fitting.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/training_config.h"
#include "proto/planner_service.pb.h"
#include "server/fitting.h"
#include "server/job_runner.h"
#include "server/store.h"

namespace moetune::server {

struct PlannerAdapterOptions {
  int search_threads = 1;  // per job
  FitOptions fit;
  // Re-plan the report's what-if scenarios (planner/report/what_if.h) for
  // the HTML page of each plan job: 8 more searches per job. Off: the page
  // says none were computed.
  bool report_what_ifs = false;
};

class PlannerAdapter {
 public:
  PlannerAdapter(Store* store, PlannerAdapterOptions options)
      : store_(store), options_(options) {}

  absl::Status ValidatePlan(const moetune::v1::SubmitPlanRequest& request) const;
  absl::StatusOr<PlanOutput> Plan(const moetune::v1::SubmitPlanRequest& request,
                                  const ProgressFn& progress) const;
  absl::StatusOr<moetune::v1::Prediction> Predict(const moetune::v1::PredictRequest& request) const;

  // Fitted tables of a cluster, as JSON (GetCalibration).
  std::string CalibrationSummary(const std::string& cluster) const;
  // agent_id -> flags, from the cluster's stored results.
  std::map<std::string, std::vector<moetune::v1::StragglerFlag>> Stragglers(
      const std::string& cluster) const;

  // Resolution helpers, public for tests.
  static absl::StatusOr<moetune::planner::ModelSpec> ResolveModel(const moetune::v1::ModelSpec& m);
  static absl::StatusOr<moetune::planner::ClusterSpec> ResolveCluster(
      const moetune::v1::ClusterSpec& c);
  static absl::StatusOr<moetune::planner::TrainingShape> ResolveShape(
      const moetune::v1::TrainingShape& s);

 private:
  // The cost model for `hardware`, calibrated from `calibration_cluster` when
  // its tables hold this GPU model. *note says which was used; *fitted_at
  // (when given) is set to the calibration cluster's ClusterFit::fitted_at.
  absl::StatusOr<std::shared_ptr<const moetune::planner::CostModel>> CostModelFor(
      const moetune::planner::ClusterSpec& hardware, const std::string& calibration_cluster,
      std::string* note, std::string* fitted_at = nullptr) const;

  // The cluster's fit, recomputed only when its stored result count changed
  // (ListAgents asks for stragglers on every call).
  absl::StatusOr<std::shared_ptr<const ClusterFit>> FitOf(const std::string& cluster) const;

  Store* store_;
  PlannerAdapterOptions options_;
  mutable absl::Mutex fit_mu_;
  mutable std::map<std::string, std::pair<int64_t, std::shared_ptr<const ClusterFit>>> fits_
      ABSL_GUARDED_BY(fit_mu_);
};

}  // namespace moetune::server
