// AgentService (proto/agent_service.proto): a thin gRPC layer over the
// AgentRegistry, the Scheduler and the RendezvousTable.
#pragma once

#include "proto/agent_service.grpc.pb.h"
#include "server/agent_registry.h"
#include "server/rendezvous.h"
#include "server/scheduler.h"

namespace moetune::server {

// Validates an agent's result before it is stored: ids and sizes bounded,
// timings finite and non-negative. InvalidArgument naming the field.
absl::Status ValidateResult(const moetune::v1::ProbeResult& result);

class AgentServiceImpl final : public moetune::v1::AgentService::Service {
 public:
  struct Options {
    absl::Duration max_pull_wait = absl::Seconds(30);
    absl::Duration max_rendezvous_wait = absl::Seconds(30);
  };
  AgentServiceImpl(AgentRegistry* registry, Scheduler* scheduler, RendezvousTable* rendezvous,
                   Options options)
      : registry_(registry), scheduler_(scheduler), rendezvous_(rendezvous), options_(options) {}

  grpc::Status Register(grpc::ServerContext* ctx, const moetune::v1::RegisterRequest* req,
                        moetune::v1::RegisterResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const moetune::v1::HeartbeatRequest* req,
                         moetune::v1::HeartbeatResponse* resp) override;
  grpc::Status PullTask(grpc::ServerContext* ctx, const moetune::v1::PullTaskRequest* req,
                        moetune::v1::PullTaskResponse* resp) override;
  grpc::Status ReportResult(grpc::ServerContext* ctx, const moetune::v1::ReportResultRequest* req,
                            moetune::v1::ReportResultResponse* resp) override;
  // A result that fails ValidateResult gets its own INVALID_ARGUMENT outcome;
  // the others are stored together (Scheduler::ReportAll). Any other failure
  // fails the whole call (nothing acknowledged).
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
  AgentRegistry* registry_;
  Scheduler* scheduler_;
  RendezvousTable* rendezvous_;
  Options options_;
};

}  // namespace moetune::server
