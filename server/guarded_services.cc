#include "server/guarded_services.h"

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "server/measurement_validator.h"

namespace moetune::server {
namespace {
namespace v1 = ::moetune::v1;
}  // namespace

std::string AuthorizationOf(const grpc::ServerContext& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

GuardedAgentService::GuardedAgentService(v1::AgentService::Service* inner, GuardOptions options)
    : inner_(inner),
      options_(options),
      per_agent_(options.limits.max_concurrent_calls_per_agent, "concurrent calls per agent") {}

grpc::Status GuardedAgentService::Admit(grpc::ServerContext* ctx, const char* method,
                                        const std::string& agent_id,
                                        ConcurrencyLimiter::Lease* lease) {
  if (options_.require_agent_client_cert) {
    std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
    if (!auth || !auth->IsPeerAuthenticated()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          absl::StrCat(method, " needs a client certificate signed by the "
                                               "server's --tls_client_ca (mutual TLS)"));
    }
  }
  absl::StatusOr<Principal> who =
      options_.auth->Authorize(AuthorizationOf(*ctx), Role::kAgent, method);
  if (!who.ok()) return ToGrpc(who.status());
  if (!agent_id.empty()) {
    absl::StatusOr<ConcurrencyLimiter::Lease> l = per_agent_.Acquire(absl::StrCat("agent ", agent_id));
    if (!l.ok()) return ToGrpc(l.status());
    *lease = std::move(*l);
  }
  return grpc::Status::OK;
}

#define ADMIT_AGENT(method, agent_id)                                     \
  ConcurrencyLimiter::Lease lease;                                        \
  if (grpc::Status st = Admit(ctx, method, agent_id, &lease); !st.ok()) { \
    return st;                                                            \
  }

grpc::Status GuardedAgentService::Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                                           v1::RegisterResponse* resp) {
  ADMIT_AGENT("AgentService/Register", "");
  grpc::Status s = inner_->Register(ctx, req, resp);
  if (s.ok()) {
    // What the agent needs to never send a request that cannot be taken.
    resp->set_max_message_bytes(options_.limits.max_message_bytes);
    resp->set_max_results_per_report(options_.limits.max_results_per_report);
  }
  return s;
}

grpc::Status GuardedAgentService::Heartbeat(grpc::ServerContext* ctx,
                                            const v1::HeartbeatRequest* req,
                                            v1::HeartbeatResponse* resp) {
  ADMIT_AGENT("AgentService/Heartbeat", req->agent_id());
  return inner_->Heartbeat(ctx, req, resp);
}

grpc::Status GuardedAgentService::PullTask(grpc::ServerContext* ctx, const v1::PullTaskRequest* req,
                                           v1::PullTaskResponse* resp) {
  ADMIT_AGENT("AgentService/PullTask", req->agent_id());
  return inner_->PullTask(ctx, req, resp);
}

grpc::Status GuardedAgentService::ReportResult(grpc::ServerContext* ctx,
                                               const v1::ReportResultRequest* req,
                                               v1::ReportResultResponse* resp) {
  ADMIT_AGENT("AgentService/ReportResult", req->agent_id());
  if (absl::Status st = ValidateProbeResult(req->result(), options_.limits); !st.ok()) {
    return ToGrpc(st);
  }
  return inner_->ReportResult(ctx, req, resp);
}

grpc::Status GuardedAgentService::ReportResults(grpc::ServerContext* ctx,
                                                const v1::ReportResultsRequest* req,
                                                v1::ReportResultsResponse* resp) {
  ADMIT_AGENT("AgentService/ReportResults", req->agent_id());
  const int limit = options_.limits.max_results_per_report;
  if (limit > 0 && req->results_size() > limit) {
    return ToGrpc(MessageLimitError(absl::StrCat("ReportResults carries ", req->results_size(),
                                                 " results, limit ", limit),
                                    "max_results_per_report", limit, req->results_size()));
  }
  std::vector<std::optional<v1::ResultOutcome>> refused(req->results_size());
  int n_refused = 0;
  for (int i = 0; i < req->results_size(); ++i) {
    const v1::ProbeResult& r = req->results(i);
    absl::Status st = ValidateProbeResult(r, options_.limits);
    if (st.ok()) continue;
    v1::ResultOutcome& o = refused[i].emplace();
    o.set_result_id(r.result_id());
    o.set_code(static_cast<int>(st.code()));
    o.set_message(std::string(st.message()));
    if (std::optional<v1::Refusal> why = RefusalOf(st)) *o.mutable_refusal() = std::move(*why);
    ++n_refused;
  }
  if (n_refused == 0) return inner_->ReportResults(ctx, req, resp);
  v1::ReportResultsRequest valid;
  valid.set_agent_id(req->agent_id());
  valid.set_session_id(req->session_id());
  for (int i = 0; i < req->results_size(); ++i) {
    if (!refused[i]) *valid.add_results() = req->results(i);
  }
  v1::ReportResultsResponse stored;
  if (valid.results_size() > 0) {
    grpc::Status s = inner_->ReportResults(ctx, &valid, &stored);
    if (!s.ok()) return s;
  }
  int k = 0;
  for (int i = 0; i < req->results_size(); ++i) {
    *resp->add_outcomes() = refused[i] ? std::move(*refused[i]) : stored.outcomes(k++);
  }
  return grpc::Status::OK;
}

grpc::Status GuardedAgentService::RendezvousSet(grpc::ServerContext* ctx,
                                                const v1::RendezvousSetRequest* req,
                                                v1::RendezvousSetResponse* resp) {
  ADMIT_AGENT("AgentService/RendezvousSet", req->agent_id());
  return inner_->RendezvousSet(ctx, req, resp);
}

grpc::Status GuardedAgentService::RendezvousGet(grpc::ServerContext* ctx,
                                                const v1::RendezvousGetRequest* req,
                                                v1::RendezvousGetResponse* resp) {
  ADMIT_AGENT("AgentService/RendezvousGet", req->agent_id());
  return inner_->RendezvousGet(ctx, req, resp);
}

#undef ADMIT_AGENT

GuardedPlannerService::GuardedPlannerService(v1::PlannerService::Service* inner,
                                             GuardOptions options,
                                             std::function<bool(const std::string&)> job_finished)
    : inner_(inner),
      options_(options),
      watches_(options.limits.max_watch_streams_per_user, "WatchJob streams per user"),
      jobs_(options.limits.max_jobs_in_flight_per_user, std::move(job_finished)) {}

grpc::Status GuardedPlannerService::Admit(grpc::ServerContext* ctx, const char* method,
                                          Principal* who) {
  absl::StatusOr<Principal> p = options_.auth->Authorize(AuthorizationOf(*ctx), Role::kUser, method);
  if (!p.ok()) return ToGrpc(p.status());
  if (who) *who = std::move(*p);
  return grpc::Status::OK;
}

#define ADMIT_USER(method, who)                                         \
  if (grpc::Status st = Admit(ctx, method, who); !st.ok()) return st;

grpc::Status GuardedPlannerService::Predict(grpc::ServerContext* ctx, const v1::PredictRequest* req,
                                            v1::PredictResponse* resp) {
  ADMIT_USER("PlannerService/Predict", nullptr);
  return inner_->Predict(ctx, req, resp);
}

grpc::Status GuardedPlannerService::SubmitPlan(grpc::ServerContext* ctx,
                                               const v1::SubmitPlanRequest* req,
                                               v1::SubmitPlanResponse* resp) {
  Principal who;
  ADMIT_USER("PlannerService/SubmitPlan", &who);
  if (absl::Status st = jobs_.Reserve(who.name); !st.ok()) return ToGrpc(st);
  grpc::Status s = inner_->SubmitPlan(ctx, req, resp);
  if (s.ok()) {
    jobs_.Commit(who.name, resp->job_id());
  } else {
    jobs_.Cancel(who.name);
  }
  return s;
}

grpc::Status GuardedPlannerService::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                                           v1::Job* resp) {
  ADMIT_USER("PlannerService/GetJob", nullptr);
  return inner_->GetJob(ctx, req, resp);
}

grpc::Status GuardedPlannerService::WatchJob(grpc::ServerContext* ctx,
                                             const v1::WatchJobRequest* req,
                                             grpc::ServerWriter<v1::Job>* writer) {
  Principal who;
  ADMIT_USER("PlannerService/WatchJob", &who);
  absl::StatusOr<ConcurrencyLimiter::Lease> lease = watches_.Acquire(absl::StrCat("user ", who.name));
  if (!lease.ok()) return ToGrpc(lease.status());
  return inner_->WatchJob(ctx, req, writer);
}

grpc::Status GuardedPlannerService::GetTunedConfig(grpc::ServerContext* ctx,
                                                   const v1::GetTunedConfigRequest* req,
                                                   v1::GetTunedConfigResponse* resp) {
  ADMIT_USER("PlannerService/GetTunedConfig", nullptr);
  return inner_->GetTunedConfig(ctx, req, resp);
}

grpc::Status GuardedPlannerService::ListAgents(grpc::ServerContext* ctx,
                                               const v1::ListAgentsRequest* req,
                                               v1::ListAgentsResponse* resp) {
  ADMIT_USER("PlannerService/ListAgents", nullptr);
  return inner_->ListAgents(ctx, req, resp);
}

grpc::Status GuardedPlannerService::StartCalibration(grpc::ServerContext* ctx,
                                                     const v1::StartCalibrationRequest* req,
                                                     v1::StartCalibrationResponse* resp) {
  ADMIT_USER("PlannerService/StartCalibration", nullptr);
  return inner_->StartCalibration(ctx, req, resp);
}

grpc::Status GuardedPlannerService::GetCalibration(grpc::ServerContext* ctx,
                                                   const v1::GetCalibrationRequest* req,
                                                   v1::GetCalibrationResponse* resp) {
  ADMIT_USER("PlannerService/GetCalibration", nullptr);
  return inner_->GetCalibration(ctx, req, resp);
}

grpc::Status GuardedPlannerService::ImportMeasurements(grpc::ServerContext* ctx,
                                                       const v1::ImportMeasurementsRequest* req,
                                                       v1::ImportMeasurementsResponse* resp) {
  ADMIT_USER("PlannerService/ImportMeasurements", nullptr);
  return inner_->ImportMeasurements(ctx, req, resp);
}

grpc::Status GuardedPlannerService::ListMeasurements(grpc::ServerContext* ctx,
                                                     const v1::ListMeasurementsRequest* req,
                                                     v1::ListMeasurementsResponse* resp) {
  ADMIT_USER("PlannerService/ListMeasurements", nullptr);
  return inner_->ListMeasurements(ctx, req, resp);
}

#undef ADMIT_USER

}  // namespace moetune::server
