// SqliteStore: the Store in one SQLite file. One connection guarded by a
// mutex: writes are serialized by SQLite anyway.
//
// Durability, chosen deliberately: journal_mode=WAL with synchronous=FULL.
// Every COMMIT appends the transaction to the WAL and fsyncs it before it
// returns, so a transaction whose commit returned survives a SIGKILL of the
// server and also an OS crash or power loss. synchronous=NORMAL would
// survive a SIGKILL (the WAL sits in the OS page cache) but could lose the
// last commits on power loss: results the server had acknowledged and the
// agents had therefore dropped from their spools. The price is one fsync per
// transaction (3.5 ms median on the development VM); the group commit
// (server/result_writer.h) pays it once per batch of concurrently arriving
// results instead of once per result. Checkpoints (WAL -> database file)
// stay automatic (every 1,000 pages), in the committing thread.
//
// The ingest path's statements (duplicate check, insert, task update) are
// prepared once at Open and reused.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace moetune::server {

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) the database at `path` and its schema.
  // Unavailable naming the path and SQLite's message when it cannot.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  absl::Status PutAgent(const moetune::v1::AgentInfo& agent) override;
  absl::StatusOr<std::vector<moetune::v1::AgentInfo>> ListAgents() override;
  absl::StatusOr<std::vector<absl::StatusOr<bool>>> PutResults(
      const std::vector<ResultWrite>& writes) override;
  absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ListResults(
      const ResultFilter& filter) override;
  absl::StatusOr<int64_t> CountResults(const ResultFilter& filter) override;
  absl::Status CreateCampaign(const StoredCampaign& campaign) override;
  absl::Status UpdateTask(const TaskUpdate& update) override;
  absl::Status SetCampaignState(const std::string& campaign_id,
                                moetune::v1::CampaignState state) override;
  absl::StatusOr<std::vector<StoredCampaign>> LoadCampaigns() override;
  absl::Status PutJob(const moetune::v1::Job& job) override;
  absl::Status FinishJob(const moetune::v1::Job& job, const JobConfigs& configs) override;
  absl::StatusOr<moetune::v1::Job> GetJob(const std::string& job_id) override;
  absl::StatusOr<std::vector<moetune::v1::Job>> ListJobs() override;
  absl::StatusOr<std::string> GetJobConfig(const std::string& job_id, int plan_rank,
                                           moetune::v1::ConfigFormat format) override;

 private:
  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PutJobLocked(const moetune::v1::Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UpdateTaskLocked(const TaskUpdate& update) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> PutOneResultLocked(const moetune::v1::ProbeResult& result,
                                          const std::optional<TaskUpdate>& task_update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  // The ingest path's statements, prepared once (see sqlite_store.cc).
  sqlite3_stmt* find_result_ ABSL_GUARDED_BY(mu_) = nullptr;
  sqlite3_stmt* insert_result_ ABSL_GUARDED_BY(mu_) = nullptr;
  sqlite3_stmt* update_task_ ABSL_GUARDED_BY(mu_) = nullptr;
  const std::string path_;
};

}  // namespace moetune::server
