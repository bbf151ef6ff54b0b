// The gRPC services as the network sees them: each RPC is authenticated and
// authorized (server/auth.h), held to the per-caller limits
// (server/limits.h), and agent payloads are validated
// (server/measurement_validator.h) before the call reaches the real service
// implementation it wraps. A method added to the proto but not here answers
// UNIMPLEMENTED (closed by default).
#pragma once

#include <functional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "proto/agent_service.grpc.pb.h"
#include "proto/planner_service.grpc.pb.h"
#include "server/auth.h"
#include "server/limits.h"

namespace moetune::server {

struct GuardOptions {
  const TokenAuthenticator* auth = nullptr;  // required
  ServiceLimits limits;
  // Agent calls must come over TLS with a client certificate verified against
  // the server's --tls_client_ca (mutual TLS for agents).
  bool require_agent_client_cert = false;
};

// The `authorization` metadata value of a call ("" when absent).
std::string AuthorizationOf(const grpc::ServerContext& ctx);

class GuardedAgentService final : public moetune::v1::AgentService::Service {
 public:
  GuardedAgentService(moetune::v1::AgentService::Service* inner, GuardOptions options);

  grpc::Status Register(grpc::ServerContext* ctx, const moetune::v1::RegisterRequest* req,
                        moetune::v1::RegisterResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const moetune::v1::HeartbeatRequest* req,
                         moetune::v1::HeartbeatResponse* resp) override;
  grpc::Status PullTask(grpc::ServerContext* ctx, const moetune::v1::PullTaskRequest* req,
                        moetune::v1::PullTaskResponse* resp) override;
  grpc::Status ReportResult(grpc::ServerContext* ctx, const moetune::v1::ReportResultRequest* req,
                            moetune::v1::ReportResultResponse* resp) override;
  // Each result is validated on its own: a refused one gets its outcome here
  // (with its Refusal), the others go to the inner service together.
  grpc::Status ReportResults(grpc::ServerContext* ctx,
                             const moetune::v1::ReportResultsRequest* req,
                             moetune::v1::ReportResultsResponse* resp) override;
  grpc::Status RendezvousSet(grpc::ServerContext* ctx,
                             const moetune::v1::RendezvousSetRequest* req,
                             moetune::v1::RendezvousSetResponse* resp) override;
  grpc::Status RendezvousGet(grpc::ServerContext* ctx,
                             const moetune::v1::RendezvousGetRequest* req,
                             moetune::v1::RendezvousGetResponse* resp) override;

 private:
  // Authenticates the call and takes a concurrency lease for `agent_id`.
  grpc::Status Admit(grpc::ServerContext* ctx, const char* method, const std::string& agent_id,
                     ConcurrencyLimiter::Lease* lease);

  moetune::v1::AgentService::Service* const inner_;
  const GuardOptions options_;
  ConcurrencyLimiter per_agent_;
};

class GuardedPlannerService final : public moetune::v1::PlannerService::Service {
 public:
  // `job_finished(job_id)`: true once the job succeeded or failed (feeds the
  // per-user in-flight job limit).
  GuardedPlannerService(moetune::v1::PlannerService::Service* inner, GuardOptions options,
                        std::function<bool(const std::string&)> job_finished);

  grpc::Status Predict(grpc::ServerContext* ctx, const moetune::v1::PredictRequest* req,
                       moetune::v1::PredictResponse* resp) override;
  grpc::Status SubmitPlan(grpc::ServerContext* ctx, const moetune::v1::SubmitPlanRequest* req,
                          moetune::v1::SubmitPlanResponse* resp) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const moetune::v1::GetJobRequest* req,
                      moetune::v1::Job* resp) override;
  grpc::Status WatchJob(grpc::ServerContext* ctx, const moetune::v1::WatchJobRequest* req,
                        grpc::ServerWriter<moetune::v1::Job>* writer) override;
  grpc::Status GetTunedConfig(grpc::ServerContext* ctx,
                              const moetune::v1::GetTunedConfigRequest* req,
                              moetune::v1::GetTunedConfigResponse* resp) override;
  grpc::Status ListAgents(grpc::ServerContext* ctx, const moetune::v1::ListAgentsRequest* req,
                          moetune::v1::ListAgentsResponse* resp) override;
  grpc::Status StartCalibration(grpc::ServerContext* ctx,
                                const moetune::v1::StartCalibrationRequest* req,
                                moetune::v1::StartCalibrationResponse* resp) override;
  grpc::Status GetCalibration(grpc::ServerContext* ctx,
                              const moetune::v1::GetCalibrationRequest* req,
                              moetune::v1::GetCalibrationResponse* resp) override;
  grpc::Status ImportMeasurements(grpc::ServerContext* ctx,
                                  const moetune::v1::ImportMeasurementsRequest* req,
                                  moetune::v1::ImportMeasurementsResponse* resp) override;
  grpc::Status ListMeasurements(grpc::ServerContext* ctx,
                                const moetune::v1::ListMeasurementsRequest* req,
                                moetune::v1::ListMeasurementsResponse* resp) override;

 private:
  grpc::Status Admit(grpc::ServerContext* ctx, const char* method, Principal* who);

  moetune::v1::PlannerService::Service* const inner_;
  const GuardOptions options_;
  ConcurrencyLimiter watches_;
  JobQuota jobs_;
};

}  // namespace moetune::server
