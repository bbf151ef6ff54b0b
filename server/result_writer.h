// ResultWriter: group commit of probe results.
//
// Agents report concurrently, one RPC per result. Committing each result in a
// transaction of its own costs one fsync per result (3.5 ms median on the
// development VM: at most ~280 results/s however fast the CPU). The writer
// instead queues the writes that arrive and one thread commits everything
// queued in ONE transaction (Store::PutResults: one commit, one fsync), then
// wakes each caller with its own outcome. While a transaction commits, the
// next batch forms by itself: there is no timer and no added delay (a lone
// write is committed at once) and batches grow with the load, as in the
// write queues of LevelDB/RocksDB or a database's WAL group commit.
//
// Contract: Write returns only after the transaction holding its writes has
// committed (an RPC acknowledged on that return is durable: see
// server/sqlite_store.h for the fsync), or with that transaction's error
// (Unavailable: nothing of the whole batch is stored, and no caller in it may
// acknowledge anything). The writes of one Write call are never split across
// transactions.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/common.pb.h"
#include "server/store.h"

namespace moetune::server {

class ResultWriter {
 public:
  struct Options {
    // A transaction takes queued Write calls while it holds at most this many
    // writes and serialized result bytes (one call larger than that goes
    // alone). Bounds the time one commit holds the store.
    int max_batch_writes = 1024;
    int64_t max_batch_bytes = 32 << 20;
  };
  struct Stats {
    int64_t transactions = 0;         // PutResults calls made
    int64_t failed_transactions = 0;  // of which failed as a whole
    int64_t writes = 0;               // results written (stored or duplicate)
    int largest_batch = 0;            // writes in the largest transaction
  };

  ResultWriter(Store* store, Options options);
  // Commits what is queued, then stops the writer thread.
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Blocks until the writes are committed. Per write, in order: true when
  // stored, false when its result_id was already stored, or that write's own
  // error (see Store::PutResults); every write gets the transaction's error
  // when it failed as a whole. The results must outlive the call.
  std::vector<absl::StatusOr<bool>> Write(const std::vector<ResultWrite>& writes);
  absl::StatusOr<bool> Write(const moetune::v1::ProbeResult& result,
                             const std::optional<TaskUpdate>& task_update);

  Stats stats() const;
  // Writes queued for the next transaction (not yet handed to the store).
  int queued() const;

 private:
  struct Request {
    const std::vector<ResultWrite>* writes;
    int64_t bytes = 0;
    std::vector<absl::StatusOr<bool>> outcomes;
    bool done = false;
  };
  void Loop();

  Store* const store_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::deque<Request*> queue_ ABSL_GUARDED_BY(mu_);
  int queued_writes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace moetune::server
