// RendezvousTable: the key-value store through which the ranks of one
// multi-rank probe meet (Gloo TCP addresses on CPU, the NCCL unique id on
// GPU). Keys live under a prefix that the scheduler opens when it assigns a
// probe attempt and closes when the attempt ends: a key outside every open
// prefix is refused with Aborted, and waiters of a closed prefix wake with
// Aborted, so ranks of an abandoned attempt give up at once instead of
// waiting out their timeout. In memory only: after a server restart every
// attempt is abandoned and re-run under a new prefix.
#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace moetune::server {

class RendezvousTable {
 public:
  // Limits against a misbehaving agent (per prefix).
  static constexpr size_t kMaxKeysPerPrefix = 4096;
  static constexpr size_t kMaxValueBytes = 1 << 20;

  void Open(const std::string& prefix);
  // Drops the prefix's keys and wakes its waiters (they get Aborted).
  void Close(const std::string& prefix);
  bool IsOpen(const std::string& prefix) const;

  // Aborted when no open prefix covers `key`; InvalidArgument when the value
  // is too large; ResourceExhausted past kMaxKeysPerPrefix.
  absl::Status Set(const std::string& key, std::string value);
  // Waits up to `wait` for the key. DeadlineExceeded naming the key on
  // timeout; Aborted when its prefix is (or becomes) closed.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration wait);

  size_t open_prefixes() const;

 private:
  // The open prefix covering key, or nullptr.
  const std::string* PrefixOf(const std::string& key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace moetune::server
