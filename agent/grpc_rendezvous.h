// GrpcRendezvousStore: kernels::RendezvousStore over the server's
// AgentService.RendezvousSet/Get, for the ranks of one multi-rank probe.
// Transient failures (server restarting) are retried until the caller's
// timeout; Aborted (the server abandoned the attempt) ends the wait at once.
#pragma once

#include <memory>
#include <string>

#include "kernels/rendezvous.h"
#include "proto/agent_service.grpc.pb.h"

namespace moetune::agent {

class GrpcRendezvousStore final : public moetune::kernels::RendezvousStore {
 public:
  GrpcRendezvousStore(moetune::v1::AgentService::StubInterface* stub, std::string agent_id,
                      std::chrono::milliseconds rpc_timeout)
      : stub_(stub), agent_id_(std::move(agent_id)), rpc_timeout_(rpc_timeout) {}

  moetune::kernels::ProbeStatus Set(const std::string& key,
                                    const std::vector<char>& value) override;
  moetune::kernels::ProbeStatus Get(const std::string& key, std::chrono::milliseconds timeout,
                                    std::vector<char>* value) override;

 private:
  moetune::v1::AgentService::StubInterface* stub_;
  const std::string agent_id_;
  const std::chrono::milliseconds rpc_timeout_;
};

}  // namespace moetune::agent
