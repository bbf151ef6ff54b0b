// How moetune-server faces the network: bearer-token authentication with
// roles, TLS (and mutual TLS for agents), and per-caller limits. Its flags
// live here (server/security.cc), so the server's main only asks for the
// credentials and the wrapped services.
//
// Rules at start:
//  * no token files: authentication is off, which is allowed on a loopback
//    address only (127.0.0.0/8, ::1, localhost); another address is refused
//    unless --insecure is given (a trusted network, e.g. behind a mesh);
//  * --tls_cert and --tls_key go together; --tls_client_ca needs them and
//    makes agents present a client certificate signed by that CA.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "proto/agent_service.grpc.pb.h"
#include "proto/planner_service.grpc.pb.h"
#include "server/auth.h"
#include "server/guarded_services.h"
#include "server/limits.h"

namespace moetune::server {

struct SecurityConfig {
  std::string listen;  // HOST:PORT
  std::string agent_token_file;
  std::string user_token_file;
  bool insecure = false;
  std::string tls_cert;       // PEM certificate chain
  std::string tls_key;        // PEM private key
  std::string tls_client_ca;  // PEM CA bundle for client certificates
  ServiceLimits limits;
};

// The configuration given by the server's security flags.
SecurityConfig SecurityConfigFromFlags(const std::string& listen);

// True for 127.0.0.0/8, ::1 and "localhost" hosts of a HOST:PORT address.
bool IsLoopbackAddress(const std::string& listen);

class ServingSecurity {
 public:
  // FailedPrecondition when the rules above are broken; InvalidArgument or
  // NotFound naming a flag and file that cannot be used.
  static absl::StatusOr<std::unique_ptr<ServingSecurity>> Create(const SecurityConfig& config);

  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }
  const ServiceLimits& limits() const { return config_.limits; }
  // One line for the start message (never contains a token).
  std::string Describe() const;

  // The services to register, wrapping the real ones (owned here).
  grpc::Service* Agent(moetune::v1::AgentService::Service* inner);
  grpc::Service* Planner(moetune::v1::PlannerService::Service* inner,
                         std::function<bool(const std::string&)> job_finished);

 private:
  ServingSecurity() = default;
  GuardOptions Guard() const;

  SecurityConfig config_;
  TokenAuthenticator auth_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<GuardedAgentService> agent_;
  std::unique_ptr<GuardedPlannerService> planner_;
};

}  // namespace moetune::server
