#include "agent/agent.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include <google/protobuf/io/coded_stream.h>

#include <grpcpp/grpcpp.h>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/delivery_policy.h"
#include "agent/grpc_rendezvous.h"
#include "agent/task_convert.h"

namespace moetune::agent {
namespace {

namespace v1 = ::moetune::v1;
namespace k = ::moetune::kernels;

void Log(const std::string& line) { std::cerr << "moetune-agent: " << line << std::endl; }

void SetDeadline(grpc::ClientContext* ctx, absl::Duration d) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + d));
}

std::string Describe(const grpc::Status& s) {
  return absl::StrCat(s.error_code(), " ", s.error_message());
}

}  // namespace

namespace {

// The options with AgentInfo.instance_id set (random per Agent, unless the
// caller chose one): the server tells two live processes with one agent id
// apart by it.
AgentOptions WithInstanceId(AgentOptions options) {
  if (options.info.instance_id().empty()) {
    absl::BitGen gen;
    options.info.set_instance_id(absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen)));
  }
  return options;
}

}  // namespace

Agent::Agent(AgentOptions options, std::shared_ptr<v1::AgentService::StubInterface> stub,
             std::unique_ptr<ResultSpool> spool, ProbeRunner runner)
    : options_(WithInstanceId(std::move(options))),
      stub_(std::move(stub)),
      spool_(std::move(spool)),
      runner_(std::move(runner)),
      backoff_(options_.min_backoff) {}

Agent::~Agent() = default;

void Agent::Sleep(absl::Duration d, const std::atomic<bool>* stop) {
  const absl::Time until = absl::Now() + d;
  while (!stop->load() && absl::Now() < until) {
    absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
  }
}

void Agent::Backoff(const std::atomic<bool>* stop) {
  // Full jitter in [backoff/2, backoff], then double up to max_backoff.
  absl::BitGen gen;
  double f = absl::Uniform(gen, 0.5, 1.0);
  Sleep(backoff_ * f, stop);
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

void Agent::SessionLost() {
  absl::MutexLock lock(&mu_);
  session_id_.clear();
}

bool Agent::Register() {
  v1::RegisterRequest req;
  *req.mutable_agent() = options_.info;
  v1::RegisterResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc_timeout);
  grpc::Status s = stub_->Register(&ctx, req, &resp);
  if (!s.ok()) {
    Log(absl::StrCat("register failed: ", Describe(s)));
    return false;
  }
  absl::MutexLock lock(&mu_);
  agent_id_ = resp.agent_id();
  session_id_ = resp.session_id();
  if (resp.heartbeat_interval_ms() > 0) {
    heartbeat_interval_ = absl::Milliseconds(resp.heartbeat_interval_ms());
  }
  server_max_message_bytes_ = resp.max_message_bytes();
  server_max_results_ = resp.max_results_per_report();
  Log(absl::StrCat("registered as ", agent_id_, " (session ", session_id_, ", ",
                   spool_->size(), " results waiting in the spool)"));
  return true;
}

void Agent::Acked(const std::vector<std::string>& result_ids) {
  if (result_ids.empty()) return;
  if (!options_.ack_log_path.empty()) {
    std::ofstream out(options_.ack_log_path, std::ios::app);
    for (const std::string& id : result_ids) out << id << "\n";
    out.flush();
  }
  if (absl::Status st = spool_->AckAll(result_ids); !st.ok()) {
    // Still in the spool file: sent again after a restart, and the server
    // answers "duplicate". Nothing is lost.
    Log(absl::StrCat("spool: ", st.ToString()));
  }
  const std::set<std::string> ids(result_ids.begin(), result_ids.end());
  unspooled_.erase(std::remove_if(unspooled_.begin(), unspooled_.end(),
                                  [&](const v1::ProbeResult& r) { return ids.count(r.result_id()); }),
                   unspooled_.end());
}

void Agent::Refused(const v1::ProbeResult& r, const std::string& reason) {
  absl::Status st = spool_->DeadLetter(r, reason);
  if (!st.ok()) {
    // Not written anywhere else: keep it queued (it blocks nothing behind it
    // only once the dead-letter file is writable again).
    Log(absl::StrCat("server refused result ", r.result_id(), " for good (", reason,
                     ") but the dead-letter file cannot take it: ", st.ToString()));
    return;
  }
  Log(absl::StrCat("server refused result ", r.result_id(), " for good: ", reason,
                   "; moved to dead-letter file ", spool_->dead_letter_path()));
  unspooled_.erase(std::remove_if(unspooled_.begin(), unspooled_.end(),
                                  [&](const v1::ProbeResult& u) {
                                    return u.result_id() == r.result_id();
                                  }),
                   unspooled_.end());
}

namespace {
// Bytes a length-delimited field of `len` bytes takes in a message: its tag
// (1 byte for field numbers 1-15), the length as a varint, the bytes.
int64_t FieldBytes(size_t len) {
  return static_cast<int64_t>(1 + google::protobuf::io::CodedOutputStream::VarintSize64(len) + len);
}
}  // namespace

int64_t Agent::RequestBytes(const std::vector<const v1::ProbeResult*>& batch) const {
  absl::MutexLock lock(&mu_);
  int64_t n = FieldBytes(agent_id_.size()) + FieldBytes(session_id_.size());
  for (const v1::ProbeResult* r : batch) n += FieldBytes(r->ByteSizeLong());
  return n;
}

bool Agent::SendOne(const v1::ProbeResult& r) {
  v1::ReportResultRequest req;
  {
    absl::MutexLock lock(&mu_);
    req.set_agent_id(agent_id_);
    req.set_session_id(session_id_);
  }
  *req.mutable_result() = r;
  v1::ReportResultResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc_timeout);
  grpc::Status s = stub_->ReportResult(&ctx, req, &resp);
  if (s.ok()) {
    Acked({r.result_id()});
    return true;
  }
  int64_t server_max;
  {
    absl::MutexLock lock(&mu_);
    server_max = server_max_message_bytes_;
  }
  Verdict v = ClassifyCallFailure(static_cast<absl::StatusCode>(s.error_code()), s.error_message(),
                                  s.error_details(), static_cast<int64_t>(req.ByteSizeLong()),
                                  server_max);
  if (v.permanent) {
    Refused(r, v.reason);
    return true;
  }
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) SessionLost();
  Log(absl::StrCat("report of ", r.result_id(), " failed (kept for a re-send): ", Describe(s)));
  return false;
}

bool Agent::SendBatch(const std::vector<const v1::ProbeResult*>& batch) {
  if (!batch_rpc_) {
    for (const v1::ProbeResult* r : batch) {
      if (!SendOne(*r)) return false;
    }
    return true;
  }
  v1::ReportResultsRequest req;
  int64_t server_max;
  {
    absl::MutexLock lock(&mu_);
    req.set_agent_id(agent_id_);
    req.set_session_id(session_id_);
    server_max = server_max_message_bytes_;
  }
  for (const v1::ProbeResult* r : batch) *req.add_results() = *r;
  v1::ReportResultsResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc_timeout);
  grpc::Status s = stub_->ReportResults(&ctx, req, &resp);
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    Log("server has no ReportResults; reporting one result per call");
    batch_rpc_ = false;
    return SendBatch(batch);
  }
  if (!s.ok()) {
    Verdict v = ClassifyCallFailure(static_cast<absl::StatusCode>(s.error_code()),
                                    s.error_message(), s.error_details(),
                                    static_cast<int64_t>(req.ByteSizeLong()), server_max);
    if (v.permanent && batch.size() > 1) {
      // Refused as a whole (e.g. larger than the server takes): each result
      // on its own decides which of them, if any, is refused for good.
      for (const v1::ProbeResult* r : batch) {
        if (!SendBatch({r})) return false;
      }
      return true;
    }
    if (v.permanent) {
      Refused(*batch[0], v.reason);
      return true;
    }
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) SessionLost();
    Log(absl::StrCat("report of ", batch.size(), " result(s) from ", batch[0]->result_id(),
                     " failed (kept for a re-send): ", Describe(s)));
    return false;
  }
  if (resp.outcomes_size() != static_cast<int>(batch.size())) {
    Log(absl::StrCat("server answered ", resp.outcomes_size(), " outcomes for ", batch.size(),
                     " results (kept for a re-send)"));
    return false;
  }
  std::vector<std::string> acked;
  bool all_done = true;
  for (int i = 0; i < resp.outcomes_size(); ++i) {
    const v1::ResultOutcome& o = resp.outcomes(i);
    if (o.code() == 0) {
      acked.push_back(batch[i]->result_id());
      continue;
    }
    Verdict v = ClassifyOutcome(o);
    if (v.permanent) {
      Refused(*batch[i], v.reason);
    } else {
      all_done = false;
      Log(absl::StrCat("report of ", batch[i]->result_id(), " failed (kept for a re-send): ",
                       v.reason));
    }
  }
  Acked(acked);
  return all_done;
}

bool Agent::Deliver() {
  std::vector<v1::ProbeResult> queue = spool_->Pending();
  queue.insert(queue.end(), unspooled_.begin(), unspooled_.end());
  int max_results = options_.max_results_per_report;
  int64_t server_max_bytes;
  {
    absl::MutexLock lock(&mu_);
    if (server_max_results_ > 0) max_results = std::min(max_results, server_max_results_);
    server_max_bytes = server_max_message_bytes_;
  }
  max_results = std::max(1, max_results);
  const int64_t batch_bytes = server_max_bytes > 0
                                  ? std::min(options_.max_report_bytes, server_max_bytes)
                                  : options_.max_report_bytes;
  size_t next = 0;
  while (next < queue.size()) {
    std::vector<const v1::ProbeResult*> batch = {&queue[next++]};
    int64_t bytes = RequestBytes(batch);
    if (server_max_bytes > 0 && bytes > server_max_bytes) {
      // Larger than the server accepts even alone: never deliverable as it is.
      Refused(*batch[0], absl::StrCat("result is ", bytes, " bytes in a report; the server "
                                      "accepts at most ", server_max_bytes,
                                      " bytes per message (max_message_bytes)"));
      continue;
    }
    // Add the next results while the call stays within both bounds (a result
    // over this agent's own byte bound alone still goes, alone).
    while (next < queue.size() && static_cast<int>(batch.size()) < max_results) {
      const int64_t more = FieldBytes(queue[next].ByteSizeLong());
      if (bytes + more > batch_bytes) break;
      bytes += more;
      batch.push_back(&queue[next++]);
    }
    if (!SendBatch(batch)) return false;
  }
  return true;
}

void Agent::HeartbeatLoop(const std::atomic<bool>* stop) {
  while (!stop->load()) {
    v1::HeartbeatRequest req;
    absl::Duration interval;
    {
      absl::MutexLock lock(&mu_);
      req.set_agent_id(agent_id_);
      req.set_session_id(session_id_);
      req.set_current_task_id(current_task_);
      interval = heartbeat_interval_;
    }
    if (!req.session_id().empty()) {
      v1::HeartbeatResponse resp;
      grpc::ClientContext ctx;
      SetDeadline(&ctx, std::min(options_.rpc_timeout, interval * 2));
      grpc::Status s = stub_->Heartbeat(&ctx, req, &resp);
      if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
        Log("server forgot this session; registering again");
        SessionLost();
      }
    }
    Sleep(interval, stop);
  }
}

std::string Agent::NewResultId() {
  absl::BitGen gen;
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("%s/%d-%d-%016x", agent_id_, absl::ToUnixNanos(absl::Now()),
                         ++results_made_, absl::Uniform<uint64_t>(gen));
}

v1::ProbeResult Agent::RunTask(const v1::ProbeTask& task) {
  v1::ProbeResult out;
  absl::StatusOr<k::ProbeParams> params = ToProbeParams(task);
  absl::Status status = params.status();
  std::string agent_id;
  {
    absl::MutexLock lock(&mu_);
    agent_id = agent_id_;
  }
  if (params.ok()) {
    k::ProbeRequest req;
    req.backend = options_.backend;
    req.params = *params;
    if (task.local_devices() > 1) {
      req.group.world_size = task.local_devices();  // one process, local GPUs
    } else if (task.world_size() > 1) {
      req.group.rank = task.rank();
      req.group.world_size = task.world_size();
      req.group.ranks_per_node = 1;  // one rank per agent (node)
      req.group.store = std::make_shared<GrpcRendezvousStore>(
          stub_.get(), agent_id, absl::ToChronoMilliseconds(options_.rpc_timeout));
      req.group.key_prefix = task.rendezvous_prefix();
      req.group.bind_address = options_.probe_bind_address;
      if (task.rendezvous_timeout_ms() > 0) {
        req.group.timeout = std::chrono::milliseconds(task.rendezvous_timeout_ms());
      }
    }
    req.group.device_ordinal = task.device_ordinal();
    absl::StatusOr<k::ProbeResult> r = runner_(req);
    status = r.status();
    if (r.ok()) out = ToResultProto(*r);
  }
  if (!status.ok()) {
    out.set_kind(task.kind());
    out.set_error_code(static_cast<int>(status.code()));
    out.set_error_message(std::string(status.message()));
    out.mutable_provenance()->set_backend(options_.info.backend());
    *out.mutable_provenance()->mutable_versions() = options_.info.versions();
  }
  out.set_result_id(NewResultId());
  out.set_task_id(task.task_id());
  out.set_campaign_id(task.campaign_id());
  out.set_attempt(task.attempt());
  out.set_rendezvous_prefix(task.rendezvous_prefix());
  out.set_rank(task.rank());
  v1::Provenance* p = out.mutable_provenance();
  p->set_agent_id(agent_id);
  p->set_node(options_.info.node());
  p->set_cluster(options_.info.cluster());
  p->mutable_versions()->set_agent(options_.info.versions().agent());
  return out;
}

void Agent::Run(const std::atomic<bool>* stop) {
  std::thread heartbeat([this, stop] { HeartbeatLoop(stop); });
  while (!stop->load()) {
    bool registered;
    {
      absl::MutexLock lock(&mu_);
      registered = !session_id_.empty();
    }
    if (!registered && !Register()) {
      Backoff(stop);
      continue;
    }
    if (!Deliver()) {
      Backoff(stop);
      continue;
    }
    backoff_ = options_.min_backoff;

    v1::PullTaskRequest req;
    {
      absl::MutexLock lock(&mu_);
      req.set_agent_id(agent_id_);
      req.set_session_id(session_id_);
    }
    req.set_wait_ms(static_cast<int32_t>(absl::ToInt64Milliseconds(options_.pull_wait)));
    v1::PullTaskResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, options_.pull_wait + options_.rpc_timeout);
    grpc::Status s = stub_->PullTask(&ctx, req, &resp);
    if (!s.ok()) {
      if (s.error_code() == grpc::StatusCode::NOT_FOUND) SessionLost();
      Log(absl::StrCat("pull failed: ", Describe(s)));
      Backoff(stop);
      continue;
    }
    if (!resp.has_task()) continue;
    const v1::ProbeTask& task = resp.task();
    {
      absl::MutexLock lock(&mu_);
      current_task_ = task.task_id();
    }
    absl::Time start = absl::Now();
    v1::ProbeResult result = RunTask(task);
    {
      absl::MutexLock lock(&mu_);
      current_task_.clear();
    }
    Log(absl::StrFormat("task %s rank %d/%d attempt %d: %s in %.3f s", task.task_id(), task.rank(),
                        std::max(1, task.world_size()), task.attempt(),
                        result.error_code() == 0 ? "ok" : result.error_message(),
                        absl::ToDoubleSeconds(absl::Now() - start)));
    if (absl::Status st = spool_->Add(result); !st.ok()) {
      Log(absl::StrCat("spool: ", st.ToString(), "; keeping result ", result.result_id(),
                       " in memory only"));
      unspooled_.push_back(std::move(result));
    }
    if (!Deliver()) Backoff(stop);
  }
  heartbeat.join();
}

}  // namespace moetune::agent
