// ResultSpool: finished probe results kept on disk until the server has
// acknowledged them, so that neither a lost connection nor an agent restart
// loses a result. The file holds length-prefixed serialized ProbeResults and is
// replaced atomically (write to a temporary file, fsync, rename) on every
// change; it stays small because acknowledged results leave it at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/common.pb.h"

namespace moetune::agent {

class ResultSpool {
 public:
  // Loads the results left by an earlier run. DataLoss naming the file when it
  // is corrupt; Unavailable when it cannot be read.
  static absl::StatusOr<std::unique_ptr<ResultSpool>> Open(const std::string& path);

  // Durable when it returns OK.
  absl::Status Add(const moetune::v1::ProbeResult& result);
  // Drops an acknowledged result (unknown ids are ignored).
  absl::Status Ack(const std::string& result_id);
  // Unacknowledged results, oldest first.
  std::vector<moetune::v1::ProbeResult> Pending() const;
  size_t size() const;

 private:
  explicit ResultSpool(std::string path) : path_(std::move(path)) {}
  absl::Status WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, moetune::v1::ProbeResult> pending_ ABSL_GUARDED_BY(mu_);  // by arrival
};

}  // namespace moetune::agent
