// absl::Status -> grpc::Status, keeping the code and the message.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace moetune::server {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())),
                      std::string(s.message()));
}

}  // namespace moetune::server
