// absl::Status -> grpc::Status, keeping the code and the message; a
// moetune.v1.Refusal payload (server/limits.h) travels as the gRPC error
// details: a serialized moetune.v1.RpcStatus (wire-compatible with
// google.rpc.Status) holding the Refusal in an Any.
#pragma once

#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "proto/common.pb.h"

namespace moetune::server {

// Same value as kRefusalTypeUrl (server/limits.h); repeated here so that
// this header needs no limits library.
inline constexpr char kRefusalPayloadUrl[] = "type.googleapis.com/moetune.v1.Refusal";

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(static_cast<int>(s.code()));
  auto refusal = s.GetPayload(kRefusalPayloadUrl);
  if (!refusal) return grpc::Status(code, std::string(s.message()));
  moetune::v1::RpcStatus details;
  details.set_code(static_cast<int>(s.code()));
  details.set_message(std::string(s.message()));
  google::protobuf::Any* any = details.add_details();
  any->set_type_url(kRefusalPayloadUrl);
  any->set_value(std::string(*refusal));
  return grpc::Status(code, std::string(s.message()), details.SerializeAsString());
}

}  // namespace moetune::server
