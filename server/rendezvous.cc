#include "server/rendezvous.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/limits.h"

namespace moetune::server {

void RendezvousTable::Open(const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  open_[prefix];
}

void RendezvousTable::Close(const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  open_.erase(prefix);  // waiters re-check on the mutex release
}

bool RendezvousTable::IsOpen(const std::string& prefix) const {
  absl::ReaderMutexLock lock(&mu_);
  return open_.count(prefix) > 0;
}

size_t RendezvousTable::open_prefixes() const {
  absl::ReaderMutexLock lock(&mu_);
  return open_.size();
}

const std::string* RendezvousTable::PrefixOf(const std::string& key) const {
  // Open prefixes are few (one per running multi-rank attempt): scan them.
  for (const auto& [prefix, keys] : open_) {
    if (key.size() >= prefix.size() && key.compare(0, prefix.size(), prefix) == 0) {
      return &prefix;
    }
  }
  return nullptr;
}

absl::Status RendezvousTable::Set(const std::string& key, std::string value) {
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous value for '", key, "' is ",
                                                   value.size(), " bytes, limit ",
                                                   kMaxValueBytes));
  }
  absl::MutexLock lock(&mu_);
  const std::string* prefix = PrefixOf(key);
  if (prefix == nullptr) {
    return absl::AbortedError(
        absl::StrCat("rendezvous key '", key, "' belongs to no scheduled probe attempt"));
  }
  auto& keys = open_[*prefix];
  if (keys.size() >= kMaxKeysPerPrefix && keys.count(key) == 0) {
    // Permanent for this attempt: its keys are never removed while it runs.
    return MessageLimitError(
        absl::StrCat("rendezvous prefix '", *prefix, "' holds ", keys.size(), " keys"),
        "max_rendezvous_keys_per_prefix", static_cast<int64_t>(kMaxKeysPerPrefix),
        static_cast<int64_t>(keys.size() + 1));
  }
  keys[key] = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<std::string> RendezvousTable::Get(const std::string& key, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string* prefix = PrefixOf(key);
    return prefix == nullptr || open_.at(*prefix).count(key) > 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
  const std::string* prefix = PrefixOf(key);
  if (prefix == nullptr) {
    return absl::AbortedError(
        absl::StrCat("rendezvous key '", key, "' belongs to no scheduled probe attempt"));
  }
  const auto& keys = open_.at(*prefix);
  auto it = keys.find(key);
  if (it == keys.end()) {
    return absl::DeadlineExceededError(absl::StrCat("rendezvous key '", key, "' not set within ",
                                                    absl::FormatDuration(wait)));
  }
  return it->second;
}

}  // namespace moetune::server
