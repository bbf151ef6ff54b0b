#include "agent/grpc_rendezvous.h"

#include <algorithm>
#include <thread>

#include <grpcpp/grpcpp.h>

namespace moetune::agent {
namespace {

namespace k = ::moetune::kernels;
using Clock = std::chrono::steady_clock;

k::ProbeStatus FromGrpc(const grpc::Status& s, const std::string& what) {
  return k::ProbeStatus(static_cast<k::ProbeCode>(static_cast<int>(s.error_code())),
                        what + ": " + s.error_message());
}

bool Transient(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::NOT_FOUND;  // agent re-registering
}

}  // namespace

k::ProbeStatus GrpcRendezvousStore::Set(const std::string& key, const std::vector<char>& value) {
  const auto give_up = Clock::now() + std::max(rpc_timeout_, std::chrono::milliseconds(30000));
  moetune::v1::RendezvousSetRequest req;
  req.set_agent_id(agent_id_);
  req.set_key(key);
  req.set_value(std::string(value.begin(), value.end()));
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
    moetune::v1::RendezvousSetResponse resp;
    grpc::Status s = stub_->RendezvousSet(&ctx, req, &resp);
    if (s.ok()) return k::ProbeStatus::Ok();
    if (!Transient(s) || Clock::now() > give_up) return FromGrpc(s, "rendezvous set '" + key + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

k::ProbeStatus GrpcRendezvousStore::Get(const std::string& key, std::chrono::milliseconds timeout,
                                        std::vector<char>* value) {
  const auto deadline = Clock::now() + timeout;
  grpc::Status last;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    // Long poll in slices so that a restarted server is noticed.
    auto wait = std::min(left, std::chrono::milliseconds(5000));
    moetune::v1::RendezvousGetRequest req;
    req.set_agent_id(agent_id_);
    req.set_key(key);
    req.set_wait_ms(static_cast<int32_t>(wait.count()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + wait + rpc_timeout_);
    moetune::v1::RendezvousGetResponse resp;
    last = stub_->RendezvousGet(&ctx, req, &resp);
    if (last.ok()) {
      value->assign(resp.value().begin(), resp.value().end());
      return k::ProbeStatus::Ok();
    }
    if (last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) continue;  // not set yet
    if (!Transient(last)) return FromGrpc(last, "rendezvous get '" + key + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return k::DeadlineExceeded("rendezvous key '" + key + "' not set within " +
                             std::to_string(timeout.count()) + " ms" +
                             (last.ok() ? "" : " (last error: " + last.error_message() + ")"));
}

}  // namespace moetune::agent
