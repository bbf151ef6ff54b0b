#include "server/planner_service.h"

#include "server/measurement_validator.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/grpc_status.h"

namespace moetune::server {
namespace {
namespace v1 = ::moetune::v1;
constexpr int kMaxListedResults = 100000;
}  // namespace

grpc::Status PlannerServiceImpl::Predict(grpc::ServerContext*, const v1::PredictRequest* req,
                                         v1::PredictResponse* resp) {
  absl::StatusOr<v1::Prediction> p = predict_(*req);
  if (!p.ok()) return ToGrpc(p.status());
  *resp->mutable_prediction() = std::move(*p);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::SubmitPlan(grpc::ServerContext*, const v1::SubmitPlanRequest* req,
                                            v1::SubmitPlanResponse* resp) {
  absl::StatusOr<std::string> id = jobs_->Submit(*req);
  if (!id.ok()) return ToGrpc(id.status());
  resp->set_job_id(*id);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetJob(grpc::ServerContext*, const v1::GetJobRequest* req,
                                        v1::Job* resp) {
  absl::StatusOr<v1::Job> job = jobs_->Get(req->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  *resp = std::move(*job);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                                          grpc::ServerWriter<v1::Job>* writer) {
  uint64_t version = 0;
  while (!ctx->IsCancelled()) {
    // Short slices so that a cancelled or expired call ends promptly.
    auto w = jobs_->Watch(req->job_id(), version, absl::Milliseconds(500));
    if (!w.ok()) return ToGrpc(w.status());
    if (w->second != version) {
      version = w->second;
      if (!writer->Write(w->first)) return grpc::Status::OK;  // client gone
      if (JobRunner::Finished(w->first)) return grpc::Status::OK;
    }
    if (absl::FromChrono(ctx->deadline()) < absl::Now()) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "watch deadline reached");
    }
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled by the client");
}

grpc::Status PlannerServiceImpl::GetTunedConfig(grpc::ServerContext*,
                                                const v1::GetTunedConfigRequest* req,
                                                v1::GetTunedConfigResponse* resp) {
  v1::ConfigFormat format = req->format();
  if (format == v1::CONFIG_FORMAT_UNSPECIFIED) format = v1::CONFIG_FORMAT_JSON;
  if (!v1::ConfigFormat_IsValid(format)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("format has unknown value ", static_cast<int>(format)));
  }
  const int rank = req->plan_rank() <= 0 ? 1 : req->plan_rank();
  absl::StatusOr<std::string> content = jobs_->Config(req->job_id(), rank, format);
  if (!content.ok()) return ToGrpc(content.status());
  absl::StatusOr<v1::Job> job = jobs_->Get(req->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  if (rank > job->plans_size()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("job '", req->job_id(), "' has ", job->plans_size(),
                                     " plans, not ", rank));
  }
  resp->set_format(format);
  resp->set_content(std::move(*content));
  *resp->mutable_plan() = job->plans(rank - 1);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest* req,
                                            v1::ListAgentsResponse* resp) {
  std::map<std::string, std::map<std::string, std::vector<v1::StragglerFlag>>> flags;
  for (v1::AgentInfo& a : registry_->List(req->cluster())) {
    if (stragglers_ && !flags.count(a.cluster())) flags[a.cluster()] = stragglers_(a.cluster());
    auto& by_agent = flags[a.cluster()];
    auto it = by_agent.find(a.agent_id());
    a.clear_stragglers();
    if (it != by_agent.end()) {
      for (const v1::StragglerFlag& f : it->second) *a.add_stragglers() = f;
    }
    *resp->add_agents() = std::move(a);
  }
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::StartCalibration(grpc::ServerContext*,
                                                  const v1::StartCalibrationRequest* req,
                                                  v1::StartCalibrationResponse* resp) {
  if (req->cluster().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cluster is empty");
  }
  absl::StatusOr<v1::Campaign> c =
      scheduler_->StartCampaign(req->cluster(), req->profile(), registry_->Live(req->cluster()));
  if (!c.ok()) return ToGrpc(c.status());
  *resp->mutable_campaign() = std::move(*c);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::GetCalibration(grpc::ServerContext*,
                                                const v1::GetCalibrationRequest* req,
                                                v1::GetCalibrationResponse* resp) {
  absl::StatusOr<v1::Campaign> c = scheduler_->GetCampaign(req->campaign_id(), true);
  if (!c.ok()) return ToGrpc(c.status());
  if (c->state() != v1::CAMPAIGN_STATE_RUNNING && calibration_) {
    resp->set_calibration_json(calibration_(c->cluster()));
  }
  *resp->mutable_campaign() = std::move(*c);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::ListMeasurements(grpc::ServerContext*,
                                                  const v1::ListMeasurementsRequest* req,
                                                  v1::ListMeasurementsResponse* resp) {
  if (req->cluster().empty() && req->campaign_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cluster or campaign_id is required");
  }
  if (req->limit() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("limit must be >= 0, got ", req->limit()));
  }
  ResultFilter f{req->cluster(), req->campaign_id(),
                 req->limit() == 0 ? kMaxListedResults : std::min(req->limit(), kMaxListedResults)};
  absl::StatusOr<std::vector<v1::ProbeResult>> results = store_->ListResults(f);
  if (!results.ok()) return ToGrpc(results.status());
  for (v1::ProbeResult& r : *results) *resp->add_results() = std::move(r);
  return grpc::Status::OK;
}

grpc::Status PlannerServiceImpl::ImportMeasurements(grpc::ServerContext*,
                                                    const v1::ImportMeasurementsRequest* req,
                                                    v1::ImportMeasurementsResponse* resp) {
  if (req->cluster().empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cluster is empty");
  if (req->results().empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no results to import");
  std::vector<v1::ProbeResult> results(req->results().begin(), req->results().end());
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (size_t i = 0; i < results.size(); ++i) {
    v1::ProbeResult& r = results[i];
    if (r.result_id().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat("result ", i, ": result_id is empty"));
    }
    if (r.kind() != v1::PROBE_KIND_COLLECTIVE) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("result ", i, " (", r.result_id(), "): only collective results can be "
                                       "imported, got ", v1::ProbeKind_Name(r.kind())));
    }
    if (absl::Status st = ValidateProbeResult(r, ServiceLimits{}); !st.ok()) {
      return ToGrpc(absl::Status(st.code(), absl::StrCat("result ", i, " (", r.result_id(), "): ", st.message())));
    }
    r.mutable_provenance()->set_cluster(req->cluster());
    r.set_received_unix_ms(now);
  }
  std::vector<ResultWrite> writes;
  for (const v1::ProbeResult& r : results) writes.push_back({&r, std::nullopt});
  absl::StatusOr<std::vector<absl::StatusOr<bool>>> stored = store_->PutResults(writes);
  if (!stored.ok()) return ToGrpc(stored.status());
  for (size_t i = 0; i < stored->size(); ++i) {
    const absl::StatusOr<bool>& one = (*stored)[i];
    if (!one.ok()) {
      return ToGrpc(absl::Status(one.status().code(), absl::StrCat("result ", i, ": ", one.status().message())));
    }
    if (*one) {
      resp->set_stored(resp->stored() + 1);
    } else {
      resp->set_duplicates(resp->duplicates() + 1);
    }
  }
  return grpc::Status::OK;
}

}  // namespace moetune::server
