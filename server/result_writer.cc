#include "server/result_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace moetune::server {

ResultWriter::ResultWriter(Store* store, Options options)
    : store_(store), options_(options), thread_([this] { Loop(); }) {}

ResultWriter::~ResultWriter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

std::vector<absl::StatusOr<bool>> ResultWriter::Write(const std::vector<ResultWrite>& writes) {
  if (writes.empty()) return {};
  Request req;
  req.writes = &writes;
  for (const ResultWrite& w : writes) req.bytes += static_cast<int64_t>(w.result->ByteSizeLong());
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return std::vector<absl::StatusOr<bool>>(
        writes.size(), absl::UnavailableError("result not stored: the server is stopping"));
  }
  queue_.push_back(&req);
  queued_writes_ += static_cast<int>(writes.size());
  mu_.Await(absl::Condition(&req.done));
  return std::move(req.outcomes);
}

absl::StatusOr<bool> ResultWriter::Write(const moetune::v1::ProbeResult& result,
                                         const std::optional<TaskUpdate>& task_update) {
  std::vector<absl::StatusOr<bool>> out = Write({ResultWrite{&result, task_update}});
  return std::move(out[0]);
}

void ResultWriter::Loop() {
  while (true) {
    std::vector<Request*> batch;
    std::vector<ResultWrite> writes;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, nothing left
      int64_t bytes = 0;
      while (!queue_.empty()) {
        Request* next = queue_.front();
        const bool fits =
            static_cast<int>(writes.size() + next->writes->size()) <= options_.max_batch_writes &&
            bytes + next->bytes <= options_.max_batch_bytes;
        if (!batch.empty() && !fits) break;
        queue_.pop_front();
        batch.push_back(next);
        bytes += next->bytes;
        writes.insert(writes.end(), next->writes->begin(), next->writes->end());
      }
      queued_writes_ -= static_cast<int>(writes.size());
    }

    // The disk I/O, outside every lock: callers keep queueing meanwhile.
    absl::StatusOr<std::vector<absl::StatusOr<bool>>> stored = store_->PutResults(writes);
    if (stored.ok() && stored->size() != writes.size()) {
      stored = absl::InternalError(absl::StrCat("store answered ", stored->size(),
                                                " outcomes for ", writes.size(), " writes"));
    }

    absl::MutexLock lock(&mu_);
    ++stats_.transactions;
    stats_.writes += static_cast<int64_t>(writes.size());
    stats_.largest_batch = std::max(stats_.largest_batch, static_cast<int>(writes.size()));
    if (!stored.ok()) ++stats_.failed_transactions;
    size_t k = 0;
    for (Request* r : batch) {
      r->outcomes.reserve(r->writes->size());
      for (size_t i = 0; i < r->writes->size(); ++i, ++k) {
        if (stored.ok()) {
          r->outcomes.push_back(std::move((*stored)[k]));
        } else {
          r->outcomes.push_back(stored.status());
        }
      }
      r->done = true;  // the caller wakes when this lock is released
    }
  }
}

ResultWriter::Stats ResultWriter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

int ResultWriter::queued() const {
  absl::MutexLock lock(&mu_);
  return queued_writes_;
}

}  // namespace moetune::server
