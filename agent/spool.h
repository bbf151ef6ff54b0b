// ResultSpool: finished probe results kept on disk until the server has
// acknowledged them, so that neither a lost connection nor an agent restart
// loses a result. The file holds length-prefixed serialized ProbeResults and is
// replaced atomically (write to a temporary file, fsync, rename) on every
// change; it stays small because acknowledged results leave it at once. One
// process holds a spool at a time (a lock on `<spool>.lock`).
//
// A result the server refused for good (agent/delivery_policy.h) leaves the
// delivery queue for the dead-letter file next to the spool (`<spool>.dead`),
// never silently: one JSON object per line,
//   {"dead_lettered_unix_ms": ..., "reason": "...", "result": {ProbeResult as JSON}}
// appended and fsync'ed before the result leaves the spool (a crash between
// the two re-sends it, and it is dead-lettered again: a repeated line, never
// a lost result). ReadDeadLetters parses the file back, e.g. to re-send a
// result once the server's limit was raised.
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
  // Loads the results left by an earlier run and holds the spool for this
  // process (an exclusive lock on `<path>.lock`, released when the spool is
  // destroyed). DataLoss naming the file when it is corrupt; Unavailable
  // when it cannot be read; FailedPrecondition when another ResultSpool
  // holds it: two agents writing one spool would each replace the file with
  // only their own results.
  static absl::StatusOr<std::unique_ptr<ResultSpool>> Open(const std::string& path);
  // The unacknowledged results in the spool file at `path`, oldest first,
  // without taking it (e.g. to look into a running agent's spool); none when
  // it does not exist. Errors as Open's.
  static absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ReadPending(const std::string& path);
  ~ResultSpool();
  ResultSpool(const ResultSpool&) = delete;
  ResultSpool& operator=(const ResultSpool&) = delete;

  // Durable when it returns OK.
  absl::Status Add(const moetune::v1::ProbeResult& result);
  // Drops an acknowledged result (unknown ids are ignored).
  absl::Status Ack(const std::string& result_id);
  // Drops several acknowledged results with one rewrite of the file.
  absl::Status AckAll(const std::vector<std::string>& result_ids);
  // Appends `result` with `reason` to the dead-letter file (durably), then
  // drops it from the spool if it is there.
  absl::Status DeadLetter(const moetune::v1::ProbeResult& result, const std::string& reason);
  const std::string& dead_letter_path() const { return dead_letter_path_; }
  // Unacknowledged results, oldest first.
  std::vector<moetune::v1::ProbeResult> Pending() const;
  size_t size() const;

  struct DeadLetterRecord {
    moetune::v1::ProbeResult result;
    std::string reason;
    int64_t dead_lettered_unix_ms = 0;
  };
  // The records of a dead-letter file, oldest first (none when it does not
  // exist). DataLoss naming the file and line when a line does not parse.
  static absl::StatusOr<std::vector<DeadLetterRecord>> ReadDeadLetters(const std::string& path);

 private:
  explicit ResultSpool(std::string path) : path_(std::move(path)), dead_letter_path_(path_ + ".dead") {}
  // Parses a spool file's contents (DataLoss naming `path` when corrupt).
  static absl::StatusOr<std::vector<moetune::v1::ProbeResult>> Parse(const std::string& data,
                                                                    const std::string& path);
  absl::Status WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::string dead_letter_path_;
  int lock_fd_ = -1;  // holds the flock on <path>.lock
  mutable absl::Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, moetune::v1::ProbeResult> pending_ ABSL_GUARDED_BY(mu_);  // by arrival
};

}  // namespace moetune::agent
