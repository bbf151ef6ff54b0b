#include "server/limits.h"

#include "absl/strings/str_cat.h"

namespace moetune::server {

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
    return absl::ResourceExhaustedError(
        absl::StrCat("'", key, "' has ", n, " calls in flight; limit of ", what_, " is ", limit_));
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
    return absl::ResourceExhaustedError(
        absl::StrCat("user '", user, "' has ", n, " plan jobs queued or running; limit is ",
                     limit_, " (wait for one to finish)"));
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
