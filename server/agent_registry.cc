#include "server/agent_registry.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;

absl::Status CheckName(const char* field, const std::string& value) {
  if (value.empty() || value.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must be 1 to 128 characters, got ", value.size(), " ('", value, "')"));
  }
  for (char c : value) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " may hold only [A-Za-z0-9._-], got '", value, "'"));
    }
  }
  return absl::OkStatus();
}

int64_t UnixMs(absl::Time t) { return absl::ToUnixMillis(t); }

}  // namespace

AgentRegistry::AgentRegistry(Store* store, Clock clock, Options options)
    : store_(store), clock_(std::move(clock)), options_(options) {}

absl::Status AgentRegistry::Recover() {
  absl::StatusOr<std::vector<v1::AgentInfo>> stored = store_->ListAgents();
  if (!stored.ok()) return stored.status();
  absl::MutexLock lock(&mu_);
  for (v1::AgentInfo& info : *stored) {
    info.set_state(v1::AGENT_STATE_LOST);
    info.clear_current_task_id();
    Entry& e = agents_[info.agent_id()];
    e.info = std::move(info);
  }
  return absl::OkStatus();
}

absl::StatusOr<AgentRegistry::Session> AgentRegistry::Register(const v1::AgentInfo& request) {
  if (absl::Status st = CheckName("agent.node", request.node()); !st.ok()) return st;
  if (absl::Status st = CheckName("agent.cluster", request.cluster()); !st.ok()) return st;
  if (request.devices_size() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("agent.devices has ", request.devices_size(), " entries, limit 1024"));
  }
  absl::Time now = clock_();
  v1::AgentInfo info = request;
  info.set_agent_id(absl::StrCat(request.cluster(), "/", request.node()));
  info.set_state(v1::AGENT_STATE_LIVE);
  info.set_registered_unix_ms(UnixMs(now));
  info.set_last_seen_unix_ms(UnixMs(now));
  info.clear_current_task_id();
  info.clear_stragglers();
  {
    absl::ReaderMutexLock lock(&mu_);
    if (absl::Status st = CheckNoOtherLiveInstance(info.agent_id(), info.instance_id(), now);
        !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = store_->PutAgent(info); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  // Again: another instance may have registered during the store write.
  if (absl::Status st = CheckNoOtherLiveInstance(info.agent_id(), info.instance_id(), now);
      !st.ok()) {
    return st;
  }
  Entry& e = agents_[info.agent_id()];
  // Keep straggler flags computed from stored results.
  *info.mutable_stragglers() = e.info.stragglers();
  e.info = std::move(info);
  e.session_id = absl::StrFormat("s%d-%016x", next_session_++, absl::Uniform<uint64_t>(absl::BitGen()));
  e.last_seen = now;
  return Session{e.info.agent_id(), e.session_id};
}

absl::Status AgentRegistry::CheckNoOtherLiveInstance(const std::string& id,
                                                     const std::string& instance_id,
                                                     absl::Time now) const {
  auto it = agents_.find(id);
  if (it == agents_.end() || instance_id.empty()) return absl::OkStatus();
  const Entry& e = it->second;
  const std::string& live_instance = e.info.instance_id();
  if (e.session_id.empty() || e.info.state() != v1::AGENT_STATE_LIVE || live_instance.empty() ||
      live_instance == instance_id || now - e.last_seen > options_.liveness_timeout) {
    return absl::OkStatus();
  }
  return absl::AlreadyExistsError(absl::StrCat(
      "agent '", id, "' is live as another process (instance ", live_instance, ", last seen ",
      absl::FormatDuration(now - e.last_seen),
      " ago): give each agent of a node its own --node name, or stop the other one; an agent "
      "that restarted registers once its predecessor's session expires (liveness timeout ",
      absl::FormatDuration(options_.liveness_timeout), ")"));
}

absl::StatusOr<std::string> AgentRegistry::Touch(const std::string& agent_id, const std::string& session_id,
                                  const std::string& current_task_id) {
  absl::MutexLock lock(&mu_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end() || it->second.session_id.empty() ||
      it->second.session_id != session_id) {
    return absl::NotFoundError(
        absl::StrCat("agent '", agent_id, "' has no session '", session_id, "'; register again"));
  }
  Entry& e = it->second;
  e.last_seen = clock_();
  e.info.set_last_seen_unix_ms(UnixMs(e.last_seen));
  e.info.set_state(v1::AGENT_STATE_LIVE);
  e.info.set_current_task_id(current_task_id);
  return e.info.cluster();
}

std::vector<std::string> AgentRegistry::ExpireLost() {
  absl::Time now = clock_();
  std::vector<std::string> lost;
  absl::MutexLock lock(&mu_);
  for (auto& [id, e] : agents_) {
    if (e.info.state() == v1::AGENT_STATE_LIVE && now - e.last_seen > options_.liveness_timeout) {
      e.info.set_state(v1::AGENT_STATE_LOST);
      e.session_id.clear();  // a late call must register again
      lost.push_back(id);
    }
  }
  return lost;
}

std::vector<v1::AgentInfo> AgentRegistry::List(const std::string& cluster) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::AgentInfo> out;
  for (const auto& [id, e] : agents_) {
    if (cluster.empty() || e.info.cluster() == cluster) out.push_back(e.info);
  }
  return out;
}

std::vector<v1::AgentInfo> AgentRegistry::Live(const std::string& cluster) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::AgentInfo> out;
  for (const auto& [id, e] : agents_) {
    if (e.info.state() == v1::AGENT_STATE_LIVE && (cluster.empty() || e.info.cluster() == cluster)) {
      out.push_back(e.info);
    }
  }
  return out;
}

bool AgentRegistry::IsLive(const std::string& agent_id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = agents_.find(agent_id);
  return it != agents_.end() && it->second.info.state() == v1::AGENT_STATE_LIVE;
}

}  // namespace moetune::server
