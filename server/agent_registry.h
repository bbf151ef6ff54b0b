// AgentRegistry: which agents exist, which are live, and their sessions.
//
// An agent is live while its heartbeats (or any call) arrive within the
// liveness timeout. Registration starts a new session; calls quoting an
// unknown session get NotFound so that the agent registers again (e.g. after
// a server restart). Agent descriptions are mirrored to the Store, so that
// ListAgents shows agents from before a restart (as LOST until they return).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/common.pb.h"
#include "server/store.h"

namespace moetune::server {

using Clock = std::function<absl::Time()>;

class AgentRegistry {
 public:
  struct Options {
    absl::Duration liveness_timeout = absl::Seconds(10);
    absl::Duration heartbeat_interval = absl::Seconds(2);
  };
  AgentRegistry(Store* store, Clock clock, Options options);

  // Loads agents known from earlier runs (all LOST).
  absl::Status Recover();

  struct Session {
    std::string agent_id;
    std::string session_id;
  };
  // InvalidArgument naming the field when node or cluster is empty or not a
  // plain name ([A-Za-z0-9._-], at most 128 characters). AlreadyExists when
  // the agent id has a live session (seen within the liveness timeout) of
  // another instance (AgentInfo.instance_id): a second process with the
  // same node name, or a restarted one before its predecessor's session
  // expired -- it may register once that session is lost. The same instance
  // registers again at any time (a new session).
  absl::StatusOr<Session> Register(const moetune::v1::AgentInfo& info);
  // Marks the agent seen and returns its cluster. NotFound when the session
  // is unknown.
  absl::StatusOr<std::string> Touch(const std::string& agent_id, const std::string& session_id,
                     const std::string& current_task_id = "");

  // Agents whose last call is older than the liveness timeout become LOST;
  // returns their ids (each reported once per loss).
  std::vector<std::string> ExpireLost();

  std::vector<moetune::v1::AgentInfo> List(const std::string& cluster) const;
  // Live agents of a cluster, ordered by id.
  std::vector<moetune::v1::AgentInfo> Live(const std::string& cluster) const;
  bool IsLive(const std::string& agent_id) const;

  const Options& options() const { return options_; }

 private:
  Store* store_;
  Clock clock_;
  Options options_;
  mutable absl::Mutex mu_;
  struct Entry {
    moetune::v1::AgentInfo info;
    std::string session_id;  // empty: not connected since the last restart
    absl::Time last_seen = absl::InfinitePast();
  };
  // AlreadyExists when `id`'s live session belongs to an instance other
  // than `instance_id` (see Register).
  absl::Status CheckNoOtherLiveInstance(const std::string& id, const std::string& instance_id,
                                        absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::map<std::string, Entry> agents_ ABSL_GUARDED_BY(mu_);
  uint64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace moetune::server
