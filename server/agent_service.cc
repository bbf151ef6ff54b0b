#include "server/agent_service.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;

constexpr size_t kMaxIdBytes = 256;
constexpr int kMaxMeasurements = 4096;
constexpr int kMaxSamples = 100000;

absl::Status CheckSeconds(const std::string& field, double v) {
  if (!std::isfinite(v) || v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must be finite and >= 0, got ", v));
  }
  return absl::OkStatus();
}

// Remaining time of the caller, capped.
absl::Duration Budget(const grpc::ServerContext* ctx, absl::Duration requested, absl::Duration cap) {
  absl::Duration left = absl::FromChrono(ctx->deadline()) - absl::Now() - absl::Milliseconds(200);
  return std::max(absl::ZeroDuration(), std::min({requested, cap, left}));
}

}  // namespace

absl::Status ValidateResult(const v1::ProbeResult& r) {
  if (r.result_id().empty() || r.result_id().size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("result.result_id must be 1 to ", kMaxIdBytes, " bytes, got ",
                     r.result_id().size()));
  }
  if (r.task_id().size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("result.task_id is ", r.task_id().size(),
                                                   " bytes, limit ", kMaxIdBytes));
  }
  if (r.measurements_size() > kMaxMeasurements) {
    return absl::InvalidArgumentError(absl::StrCat("result.measurements has ",
                                                   r.measurements_size(), " entries, limit ",
                                                   kMaxMeasurements));
  }
  for (int i = 0; i < r.measurements_size(); ++i) {
    const v1::Measurement& m = r.measurements(i);
    const std::string f = absl::StrCat("result.measurements[", i, "]");
    if (m.samples_seconds_size() > kMaxSamples) {
      return absl::InvalidArgumentError(absl::StrCat(f, ".samples_seconds has ",
                                                     m.samples_seconds_size(), " entries, limit ",
                                                     kMaxSamples));
    }
    for (int j = 0; j < m.samples_seconds_size(); ++j) {
      if (auto st = CheckSeconds(absl::StrCat(f, ".samples_seconds[", j, "]"), m.samples_seconds(j));
          !st.ok()) {
        return st;
      }
    }
    for (auto [name, v] : {std::pair<const char*, double>{"min_seconds", m.min_seconds()},
                           {"median_seconds", m.median_seconds()},
                           {"max_seconds", m.max_seconds()}}) {
      if (auto st = CheckSeconds(absl::StrCat(f, ".", name), v); !st.ok()) return st;
    }
    if (!std::isfinite(m.flops()) || !std::isfinite(m.bytes()) || m.flops() < 0 || m.bytes() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".flops/bytes must be finite and >= 0, got ", m.flops(), "/", m.bytes()));
    }
  }
  return absl::OkStatus();
}

grpc::Status AgentServiceImpl::Register(grpc::ServerContext*, const v1::RegisterRequest* req,
                                        v1::RegisterResponse* resp) {
  absl::StatusOr<AgentRegistry::Session> s = registry_->Register(req->agent());
  if (!s.ok()) return ToGrpc(s.status());
  resp->set_agent_id(s->agent_id);
  resp->set_session_id(s->session_id);
  resp->set_heartbeat_interval_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(registry_->options().heartbeat_interval)));
  resp->set_liveness_timeout_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(registry_->options().liveness_timeout)));
  scheduler_->Notify();  // more agents may let a multi-rank task start
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest* req,
                                         v1::HeartbeatResponse*) {
  return ToGrpc(registry_->Touch(req->agent_id(), req->session_id(), req->current_task_id()).status());
}

grpc::Status AgentServiceImpl::PullTask(grpc::ServerContext* ctx, const v1::PullTaskRequest* req,
                                        v1::PullTaskResponse* resp) {
  absl::StatusOr<std::string> cluster = registry_->Touch(req->agent_id(), req->session_id());
  if (!cluster.ok()) return ToGrpc(cluster.status());
  absl::Duration wait =
      Budget(ctx, absl::Milliseconds(std::max(0, req->wait_ms())), options_.max_pull_wait);
  std::optional<v1::ProbeTask> task = scheduler_->NextTask(req->agent_id(), *cluster, wait);
  if (task && ctx->IsCancelled()) {
    // The caller is gone (deadline, disconnect): it will never run this.
    scheduler_->Unassign(req->agent_id());
    return grpc::Status(grpc::StatusCode::CANCELLED, "caller went away before the task was sent");
  }
  if (task) *resp->mutable_task() = std::move(*task);
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::ReportResult(grpc::ServerContext*,
                                            const v1::ReportResultRequest* req,
                                            v1::ReportResultResponse* resp) {
  absl::StatusOr<std::string> cluster = registry_->Touch(req->agent_id(), req->session_id());
  if (!cluster.ok()) return ToGrpc(cluster.status());
  if (absl::Status st = ValidateResult(req->result()); !st.ok()) return ToGrpc(st);
  v1::ProbeResult result = req->result();
  // The server's view of who sent it wins over what the message claims.
  result.mutable_provenance()->set_agent_id(req->agent_id());
  result.mutable_provenance()->set_cluster(*cluster);
  result.set_received_unix_ms(absl::ToUnixMillis(absl::Now()));
  absl::StatusOr<bool> stored = scheduler_->Report(req->agent_id(), result);
  if (!stored.ok()) return ToGrpc(stored.status());
  resp->set_result_id(result.result_id());
  resp->set_duplicate(!*stored);
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::ReportResults(grpc::ServerContext*,
                                             const v1::ReportResultsRequest* req,
                                             v1::ReportResultsResponse* resp) {
  absl::StatusOr<std::string> cluster = registry_->Touch(req->agent_id(), req->session_id());
  if (!cluster.ok()) return ToGrpc(cluster.status());
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  std::vector<v1::ProbeResult> accepted;
  std::vector<int> outcome_of;  // accepted[k] -> its outcome's index
  accepted.reserve(req->results_size());
  for (int i = 0; i < req->results_size(); ++i) {
    const v1::ProbeResult& r = req->results(i);
    v1::ResultOutcome* o = resp->add_outcomes();
    o->set_result_id(r.result_id());
    if (absl::Status st = ValidateResult(r); !st.ok()) {
      o->set_code(static_cast<int>(st.code()));
      o->set_message(std::string(st.message()));
      continue;
    }
    v1::ProbeResult& copy = accepted.emplace_back(r);
    copy.mutable_provenance()->set_agent_id(req->agent_id());
    copy.mutable_provenance()->set_cluster(*cluster);
    copy.set_received_unix_ms(now_ms);
    outcome_of.push_back(i);
  }
  std::vector<absl::StatusOr<bool>> stored = scheduler_->ReportAll(req->agent_id(), accepted);
  for (size_t k = 0; k < stored.size(); ++k) {
    if (!stored[k].ok()) return ToGrpc(stored[k].status());
    resp->mutable_outcomes(outcome_of[k])->set_duplicate(!*stored[k]);
  }
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::RendezvousSet(grpc::ServerContext*,
                                             const v1::RendezvousSetRequest* req,
                                             v1::RendezvousSetResponse*) {
  return ToGrpc(rendezvous_->Set(req->key(), req->value()));
}

grpc::Status AgentServiceImpl::RendezvousGet(grpc::ServerContext* ctx,
                                             const v1::RendezvousGetRequest* req,
                                             v1::RendezvousGetResponse* resp) {
  absl::Duration wait =
      Budget(ctx, absl::Milliseconds(std::max(0, req->wait_ms())), options_.max_rendezvous_wait);
  absl::StatusOr<std::string> v = rendezvous_->Get(req->key(), wait);
  if (!v.ok()) return ToGrpc(v.status());
  resp->set_value(std::move(*v));
  return grpc::Status::OK;
}

}  // namespace moetune::server
