#include "server/limits.h"

#include "absl/strings/str_cat.h"

namespace moetune::server {
namespace {

absl::Status LimitError(moetune::v1::Refusal::Scope scope, absl::string_view message,
                        absl::string_view limit, int64_t limit_value, int64_t actual) {
  moetune::v1::Refusal r;
  r.set_scope(scope);
  r.set_limit(std::string(limit));
  r.set_limit_value(limit_value);
  r.set_actual(actual);
  absl::Status st = absl::ResourceExhaustedError(message);
  st.SetPayload(kRefusalTypeUrl, absl::Cord(r.SerializeAsString()));
  return st;
}

}  // namespace

absl::Status MessageLimitError(absl::string_view message, absl::string_view limit,
                               int64_t limit_value, int64_t actual) {
  return LimitError(moetune::v1::Refusal::REFUSAL_SCOPE_MESSAGE, message, limit, limit_value,
                    actual);
}

absl::Status CallerLimitError(absl::string_view message, absl::string_view limit,
                              int64_t limit_value, int64_t actual) {
  return LimitError(moetune::v1::Refusal::REFUSAL_SCOPE_CALLER, message, limit, limit_value,
                    actual);
}

std::optional<moetune::v1::Refusal> RefusalOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRefusalTypeUrl);
  if (!payload) return std::nullopt;
  moetune::v1::Refusal r;
  if (!r.ParseFromString(std::string(*payload))) return std::nullopt;
  return r;
}

ConcurrencyLimiter::Lease& ConcurrencyLimiter::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (owner_) owner_->Release(key_);
    owner_ = o.owner_;
    key_ = std::move(o.key_);
    o.owner_ = nullptr;
  }
  return *this;
}

ConcurrencyLimiter::Lease::~Lease() {
  if (owner_) owner_->Release(key_);
}

absl::StatusOr<ConcurrencyLimiter::Lease> ConcurrencyLimiter::Acquire(const std::string& key) {
  absl::MutexLock lock(&mu_);
  int& n = in_flight_[key];
  if (limit_ > 0 && n >= limit_) {
    return CallerLimitError(
        absl::StrCat("'", key, "' has ", n, " calls in flight; limit of ", what_, " is ", limit_),
        what_, limit_, n + 1);
  }
  ++n;
  return Lease(this, key);
}

int ConcurrencyLimiter::InFlight(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = in_flight_.find(key);
  return it == in_flight_.end() ? 0 : it->second;
}

void ConcurrencyLimiter::Release(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = in_flight_.find(key);
  if (it == in_flight_.end()) return;
  if (--it->second <= 0) in_flight_.erase(it);
}

int JobQuota::PruneLocked(const std::string& user) {
  PerUser& u = users_[user];
  for (auto it = u.jobs.begin(); it != u.jobs.end();) {
    it = finished_(*it) ? u.jobs.erase(it) : std::next(it);
  }
  return static_cast<int>(u.jobs.size()) + u.reserved;
}

absl::Status JobQuota::Reserve(const std::string& user) {
  absl::MutexLock lock(&mu_);
  const int n = PruneLocked(user);
  if (limit_ > 0 && n >= limit_) {
    return CallerLimitError(
        absl::StrCat("user '", user, "' has ", n, " plan jobs queued or running; limit is ",
                     limit_, " (wait for one to finish)"),
        "plan jobs in flight per user", limit_, n + 1);
  }
  ++users_[user].reserved;
  return absl::OkStatus();
}

void JobQuota::Commit(const std::string& user, const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  PerUser& u = users_[user];
  if (u.reserved > 0) --u.reserved;
  u.jobs.insert(job_id);
}

void JobQuota::Cancel(const std::string& user) {
  absl::MutexLock lock(&mu_);
  PerUser& u = users_[user];
  if (u.reserved > 0) --u.reserved;
}

int JobQuota::InFlight(const std::string& user) {
  absl::MutexLock lock(&mu_);
  return PruneLocked(user);
}

}  // namespace moetune::server
