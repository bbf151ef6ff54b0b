// Agent: the node daemon's control loop.
//
//   register (with backoff) -> deliver spooled results -> pull a task (long
//   poll) -> run it through kernels/ -> spool the result -> deliver it -> ...
// plus a heartbeat thread. A result is written to the spool (fsync'ed) before
// it is sent and leaves the spool only when the server acknowledges it, which
// it does after its store committed it; re-sends carry the same result_id, so
// the server stores each result once. When the server is unreachable the
// agent backs off exponentially (with jitter) up to max_backoff and keeps
// trying; when the server no longer knows its session (restart, liveness
// timeout) it registers again.
//
// Delivery sends every pending result, oldest first, in ReportResults
// batches (bounded by the count and bytes the server advertised at
// registration; ReportResult one by one against a server without it). A
// result the server refuses for good (agent/delivery_policy.h: malformed, or
// over a per-message limit) moves to the spool's dead-letter file, logged
// with the reason, and delivery goes on with the next; a transient failure
// stops the pass (back off, then the same results again).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/spool.h"
#include "kernels/probes.h"
#include "proto/agent_service.grpc.pb.h"

namespace moetune::agent {

struct AgentOptions {
  // From Discover(). The Agent sets info.instance_id (random per Agent) when
  // it is empty: the server refuses a second live process under one agent id.
  moetune::v1::AgentInfo info;
  moetune::kernels::Backend backend = moetune::kernels::Backend::kCpu;
  absl::Duration rpc_timeout = absl::Seconds(10);
  absl::Duration pull_wait = absl::Seconds(5);
  absl::Duration min_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
  // Address this node's ranks of multi-rank CPU probes listen on (Gloo over
  // TCP); peers on other nodes must reach it. See DefaultProbeBindAddress().
  std::string probe_bind_address = "127.0.0.1";
  // When set, every acknowledged result_id is appended here (an audit trail
  // that tests compare with the server's store).
  std::string ack_log_path;
  // Bounds of one ReportResults call, lowered to what the server advertises.
  // 4 MiB is gRPC's default receive limit, for a server that says nothing.
  int max_results_per_report = 256;
  int64_t max_report_bytes = 4 << 20;
};

using ProbeRunner = std::function<absl::StatusOr<moetune::kernels::ProbeResult>(
    const moetune::kernels::ProbeRequest&)>;

class Agent {
 public:
  Agent(AgentOptions options, std::shared_ptr<moetune::v1::AgentService::StubInterface> stub,
        std::unique_ptr<ResultSpool> spool, ProbeRunner runner);
  ~Agent();

  // Runs until *stop becomes true.
  void Run(const std::atomic<bool>* stop);

  // The result message of one task (also for failed probes), ready to spool.
  moetune::v1::ProbeResult RunTask(const moetune::v1::ProbeTask& task);

 private:
  bool Register();
  // Sends every spooled result (and any that could not be spooled); false on
  // the first transient failure.
  bool Deliver();
  // Sends `batch` (one ReportResults call); acknowledged results leave the
  // queue, refused ones go to the dead-letter file. False on a transient
  // failure (the rest stays queued).
  bool SendBatch(const std::vector<const moetune::v1::ProbeResult*>& batch);
  // One result with ReportResult (servers without ReportResults).
  bool SendOne(const moetune::v1::ProbeResult& r);
  // Moves a result the server will never take out of the delivery queue.
  void Refused(const moetune::v1::ProbeResult& r, const std::string& reason);
  void Acked(const std::vector<std::string>& result_ids);
  // Serialized size of a report request carrying these results.
  int64_t RequestBytes(const std::vector<const moetune::v1::ProbeResult*>& batch) const;
  void HeartbeatLoop(const std::atomic<bool>* stop);
  void Sleep(absl::Duration d, const std::atomic<bool>* stop);
  void Backoff(const std::atomic<bool>* stop);
  void SessionLost();
  std::string NewResultId();

  const AgentOptions options_;
  std::shared_ptr<moetune::v1::AgentService::StubInterface> stub_;
  std::unique_ptr<ResultSpool> spool_;
  ProbeRunner runner_;

  mutable absl::Mutex mu_;
  std::string agent_id_ ABSL_GUARDED_BY(mu_);
  std::string session_id_ ABSL_GUARDED_BY(mu_);
  std::string current_task_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(2);
  // Request limits advertised by the server (0: not advertised).
  int64_t server_max_message_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int server_max_results_ ABSL_GUARDED_BY(mu_) = 0;
  bool batch_rpc_ = true;  // false once the server answered UNIMPLEMENTED
  absl::Duration backoff_;
  // Results the spool could not take (disk failure): kept in memory and sent
  // like spooled ones, so they are at least not dropped while the agent runs.
  std::vector<moetune::v1::ProbeResult> unspooled_;
  uint64_t results_made_ = 0;
};

}  // namespace moetune::agent
