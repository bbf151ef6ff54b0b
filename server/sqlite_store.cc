#include "server/sqlite_store.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;

// Schema version 1. Protobuf blobs carry each row's full content; the other
// columns exist for lookups.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS agents (
  agent_id TEXT PRIMARY KEY,
  cluster TEXT NOT NULL,
  data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  result_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  cluster TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  received_unix_ms INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS results_by_cluster ON results(cluster, seq);
CREATE INDEX IF NOT EXISTS results_by_campaign ON results(campaign_id, seq);
-- PutResult's MAX(seq): without it every insert scans the table (O(n)).
CREATE INDEX IF NOT EXISTS results_by_seq ON results(seq);
CREATE TABLE IF NOT EXISTS campaigns (
  campaign_id TEXT PRIMARY KEY,
  cluster TEXT NOT NULL,
  profile INTEGER NOT NULL,
  state INTEGER NOT NULL,
  created_unix_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
  campaign_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  last_error TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (campaign_id, task_id));
CREATE TABLE IF NOT EXISTS jobs (
  job_id TEXT PRIMARY KEY,
  created_unix_ms INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS job_configs (
  job_id TEXT NOT NULL,
  plan_rank INTEGER NOT NULL,
  format INTEGER NOT NULL,
  content TEXT NOT NULL,
  PRIMARY KEY (job_id, plan_rank, format));
)sql";

// A prepared statement: either prepared here and finalized on every path, or
// a statement the store keeps prepared (borrowed), reset and unbound on every
// path so that its next user starts clean.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db), owned_(true) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  Stmt(sqlite3* db, sqlite3_stmt* cached) : db_(db), stmt_(cached), owned_(false), rc_(SQLITE_OK) {}
  ~Stmt() {
    if (owned_) {
      sqlite3_finalize(stmt_);
    } else {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  absl::Status status(const char* what) const {
    if (rc_ == SQLITE_OK || rc_ == SQLITE_ROW || rc_ == SQLITE_DONE) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat("sqlite ", what, ": ", sqlite3_errmsg(db_), " (code ", rc_, ")"));
  }
  Stmt& Bind(int i, const std::string& s) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_text(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindBlob(int i, const std::string& s) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_blob(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW (true), SQLITE_DONE (false); errors land in status().
  bool Step() {
    if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW) return false;
    rc_ = sqlite3_step(stmt_);
    return rc_ == SQLITE_ROW;
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(static_cast<const char*>(p), n) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_;
  int rc_;
};

// The ingest path's statements, prepared once per connection (PutResults
// runs them for every result).
constexpr const char* kFindResultSql = "SELECT 1 FROM results WHERE result_id = ?";
constexpr const char* kInsertResultSql =
    "INSERT INTO results(result_id, seq, cluster, campaign_id, task_id, received_unix_ms, data) "
    "VALUES(?, (SELECT IFNULL(MAX(seq), 0) + 1 FROM results), ?, ?, ?, ?, ?)";
constexpr const char* kUpdateTaskSql =
    "UPDATE tasks SET state = ?, attempts = ?, last_error = ? WHERE campaign_id = ? AND task_id = ?";

absl::Status ParseBlob(const std::string& blob, google::protobuf::Message* m, const char* what) {
  if (!m->ParseFromString(blob)) {
    return absl::DataLossError(absl::StrCat("stored ", what, " does not parse"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskState> ParseTaskState(const std::string& s) {
  if (s == "pending") return TaskState::kPending;
  if (s == "done") return TaskState::kDone;
  if (s == "failed") return TaskState::kFailed;
  return absl::DataLossError(absl::StrCat("stored task state '", s, "' is unknown"));
}

// Rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {
    rc_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  }
  ~Transaction() {
    if (rc_ == SQLITE_OK && !committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  absl::Status begun() const {
    if (rc_ == SQLITE_OK) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("sqlite BEGIN: ", sqlite3_errmsg(db_)));
  }
  absl::Status Commit() {
    int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      return absl::UnavailableError(absl::StrCat("sqlite COMMIT: ", sqlite3_errmsg(db_)));
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  int rc_;
  bool committed_ = false;
};

#define MOETUNE_RETURN_IF_ERROR(expr)        \
  do {                                       \
    ::absl::Status _st = (expr);             \
    if (!_st.ok()) return _st;               \
  } while (false)

}  // namespace

const char* TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kPending: return "pending";
    case TaskState::kDone: return "done";
    case TaskState::kFailed: return "failed";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("cannot open database '", path, "': ", msg));
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(db, path));
  absl::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, 5000);
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                             "PRAGMA foreign_keys=ON"}) {
    absl::Status st = store->Exec(pragma);
    if (!st.ok()) {
      return absl::UnavailableError(absl::StrCat("database '", path, "': ", st.message()));
    }
  }
  absl::Status st = store->Exec(kSchema);
  if (!st.ok()) {
    return absl::UnavailableError(absl::StrCat("database '", path, "': ", st.message()));
  }
  for (auto [stmt, sql] : {std::pair<sqlite3_stmt**, const char*>{&store->find_result_, kFindResultSql},
                           {&store->insert_result_, kInsertResultSql},
                           {&store->update_task_, kUpdateTaskSql}}) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) != SQLITE_OK) {
      return absl::UnavailableError(
          absl::StrCat("database '", path, "': preparing '", sql, "': ", sqlite3_errmsg(db)));
    }
  }
  return store;
}

SqliteStore::~SqliteStore() {
  absl::MutexLock lock(&mu_);
  for (sqlite3_stmt* stmt : {find_result_, insert_result_, update_task_}) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

absl::Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return absl::UnavailableError(absl::StrCat("sqlite: ", msg));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::PutAgent(const v1::AgentInfo& agent) {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "INSERT OR REPLACE INTO agents(agent_id, cluster, data) VALUES(?,?,?)");
  s.Bind(1, agent.agent_id()).Bind(2, agent.cluster()).BindBlob(3, agent.SerializeAsString());
  s.Step();
  return s.status("put agent");
}

absl::StatusOr<std::vector<v1::AgentInfo>> SqliteStore::ListAgents() {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT data FROM agents ORDER BY agent_id");
  std::vector<v1::AgentInfo> out;
  while (s.Step()) {
    MOETUNE_RETURN_IF_ERROR(ParseBlob(s.Text(0), &out.emplace_back(), "agent"));
  }
  MOETUNE_RETURN_IF_ERROR(s.status("list agents"));
  return out;
}

absl::StatusOr<bool> SqliteStore::PutOneResultLocked(const v1::ProbeResult& result,
                                                     const std::optional<TaskUpdate>& task_update) {
  if (result.result_id().empty()) {
    return absl::InvalidArgumentError("result.result_id is empty");
  }
  {
    Stmt exists(db_, find_result_);
    exists.Bind(1, result.result_id());
    bool dup = exists.Step();
    MOETUNE_RETURN_IF_ERROR(exists.status("find result"));
    if (dup) return false;  // nothing is written
  }
  // A task update can fail on its own (NotFound): the savepoint undoes this
  // write's insert then, and only it.
  if (task_update) MOETUNE_RETURN_IF_ERROR(Exec("SAVEPOINT put_result"));
  {
    Stmt s(db_, insert_result_);
    s.Bind(1, result.result_id())
        .Bind(2, result.provenance().cluster())
        .Bind(3, result.campaign_id())
        .Bind(4, result.task_id())
        .Bind(5, static_cast<int64_t>(result.received_unix_ms()))
        .BindBlob(6, result.SerializeAsString());
    s.Step();
    MOETUNE_RETURN_IF_ERROR(s.status("insert result"));
  }
  if (task_update) {
    absl::Status st = UpdateTaskLocked(*task_update);
    if (!st.ok() && st.code() != absl::StatusCode::kUnavailable) {
      MOETUNE_RETURN_IF_ERROR(Exec("ROLLBACK TO put_result"));
      MOETUNE_RETURN_IF_ERROR(Exec("RELEASE put_result"));
      return st;
    }
    MOETUNE_RETURN_IF_ERROR(st);
    MOETUNE_RETURN_IF_ERROR(Exec("RELEASE put_result"));
  }
  return true;
}

absl::StatusOr<std::vector<absl::StatusOr<bool>>> SqliteStore::PutResults(
    const std::vector<ResultWrite>& writes) {
  std::vector<absl::StatusOr<bool>> out;
  out.reserve(writes.size());
  absl::MutexLock lock(&mu_);
  Transaction tx(db_);
  MOETUNE_RETURN_IF_ERROR(tx.begun());
  for (const ResultWrite& w : writes) {
    absl::StatusOr<bool> one = PutOneResultLocked(*w.result, w.task_update);
    // A database error ends the whole transaction (rolled back by `tx`).
    if (!one.ok() && one.status().code() == absl::StatusCode::kUnavailable) return one.status();
    out.push_back(std::move(one));
  }
  MOETUNE_RETURN_IF_ERROR(tx.Commit());
  return out;
}

namespace {
// WHERE clause and its bindings for a ResultFilter.
std::string ResultWhere(const ResultFilter& f) {
  std::string where = " WHERE 1=1";
  if (!f.cluster.empty()) where += " AND cluster = ?1";
  if (!f.campaign_id.empty()) where += " AND campaign_id = ?2";
  return where;
}
void BindResultFilter(Stmt& s, const ResultFilter& f) {
  if (!f.cluster.empty()) s.Bind(1, f.cluster);
  if (!f.campaign_id.empty()) s.Bind(2, f.campaign_id);
}
}  // namespace

absl::StatusOr<std::vector<v1::ProbeResult>> SqliteStore::ListResults(const ResultFilter& filter) {
  absl::MutexLock lock(&mu_);
  std::string sql = "SELECT data FROM (SELECT data, seq FROM results" + ResultWhere(filter) +
                    " ORDER BY seq DESC" +
                    (filter.limit > 0 ? absl::StrCat(" LIMIT ", filter.limit) : "") +
                    ") ORDER BY seq ASC";
  Stmt s(db_, sql.c_str());
  BindResultFilter(s, filter);
  std::vector<v1::ProbeResult> out;
  while (s.Step()) {
    MOETUNE_RETURN_IF_ERROR(ParseBlob(s.Text(0), &out.emplace_back(), "result"));
  }
  MOETUNE_RETURN_IF_ERROR(s.status("list results"));
  return out;
}

absl::StatusOr<int64_t> SqliteStore::CountResults(const ResultFilter& filter) {
  absl::MutexLock lock(&mu_);
  std::string sql = "SELECT COUNT(*) FROM results" + ResultWhere(filter);
  Stmt s(db_, sql.c_str());
  BindResultFilter(s, filter);
  int64_t n = s.Step() ? s.Int(0) : 0;
  MOETUNE_RETURN_IF_ERROR(s.status("count results"));
  return n;
}

absl::Status SqliteStore::CreateCampaign(const StoredCampaign& c) {
  absl::MutexLock lock(&mu_);
  Transaction tx(db_);
  MOETUNE_RETURN_IF_ERROR(tx.begun());
  Stmt s(db_,
         "INSERT INTO campaigns(campaign_id, cluster, profile, state, created_unix_ms) "
         "VALUES(?,?,?,?,?)");
  s.Bind(1, c.campaign_id)
      .Bind(2, c.cluster)
      .Bind(3, static_cast<int64_t>(c.profile))
      .Bind(4, static_cast<int64_t>(c.state))
      .Bind(5, c.created_unix_ms);
  s.Step();
  MOETUNE_RETURN_IF_ERROR(s.status("insert campaign"));
  int64_t seq = 0;
  for (const StoredTask& t : c.tasks) {
    Stmt ts(db_,
            "INSERT INTO tasks(campaign_id, task_id, seq, state, attempts, last_error, data) "
            "VALUES(?,?,?,?,?,?,?)");
    ts.Bind(1, c.campaign_id)
        .Bind(2, t.task.task_id())
        .Bind(3, seq++)
        .Bind(4, std::string(TaskStateName(t.state)))
        .Bind(5, static_cast<int64_t>(t.attempts))
        .Bind(6, t.last_error)
        .BindBlob(7, t.task.SerializeAsString());
    ts.Step();
    MOETUNE_RETURN_IF_ERROR(ts.status("insert task"));
  }
  return tx.Commit();
}

absl::Status SqliteStore::UpdateTaskLocked(const TaskUpdate& u) {
  Stmt s(db_, update_task_);
  s.Bind(1, std::string(TaskStateName(u.state)))
      .Bind(2, static_cast<int64_t>(u.attempts))
      .Bind(3, u.last_error)
      .Bind(4, u.campaign_id)
      .Bind(5, u.task_id);
  s.Step();
  MOETUNE_RETURN_IF_ERROR(s.status("update task"));
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(
        absl::StrCat("task '", u.task_id, "' of campaign '", u.campaign_id, "' is not stored"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::UpdateTask(const TaskUpdate& update) {
  absl::MutexLock lock(&mu_);
  return UpdateTaskLocked(update);
}

absl::Status SqliteStore::SetCampaignState(const std::string& campaign_id,
                                           v1::CampaignState state) {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "UPDATE campaigns SET state = ? WHERE campaign_id = ?");
  s.Bind(1, static_cast<int64_t>(state)).Bind(2, campaign_id);
  s.Step();
  MOETUNE_RETURN_IF_ERROR(s.status("update campaign"));
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrCat("campaign '", campaign_id, "' is not stored"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredCampaign>> SqliteStore::LoadCampaigns() {
  absl::MutexLock lock(&mu_);
  std::vector<StoredCampaign> out;
  std::map<std::string, size_t> index;
  {
    Stmt s(db_,
           "SELECT campaign_id, cluster, profile, state, created_unix_ms FROM campaigns "
           "ORDER BY created_unix_ms, campaign_id");
    while (s.Step()) {
      StoredCampaign& c = out.emplace_back();
      c.campaign_id = s.Text(0);
      c.cluster = s.Text(1);
      c.profile = static_cast<v1::CampaignProfile>(s.Int(2));
      c.state = static_cast<v1::CampaignState>(s.Int(3));
      c.created_unix_ms = s.Int(4);
      index[c.campaign_id] = out.size() - 1;
    }
    MOETUNE_RETURN_IF_ERROR(s.status("load campaigns"));
  }
  Stmt s(db_,
         "SELECT campaign_id, state, attempts, last_error, data FROM tasks "
         "ORDER BY campaign_id, seq");
  while (s.Step()) {
    auto it = index.find(s.Text(0));
    if (it == index.end()) continue;
    StoredTask& t = out[it->second].tasks.emplace_back();
    absl::StatusOr<TaskState> state = ParseTaskState(s.Text(1));
    if (!state.ok()) return state.status();
    t.state = *state;
    t.attempts = static_cast<int>(s.Int(2));
    t.last_error = s.Text(3);
    MOETUNE_RETURN_IF_ERROR(ParseBlob(s.Text(4), &t.task, "task"));
  }
  MOETUNE_RETURN_IF_ERROR(s.status("load tasks"));
  return out;
}

absl::Status SqliteStore::PutJobLocked(const v1::Job& job) {
  Stmt s(db_, "INSERT OR REPLACE INTO jobs(job_id, created_unix_ms, data) VALUES(?,?,?)");
  s.Bind(1, job.job_id())
      .Bind(2, static_cast<int64_t>(job.created_unix_ms()))
      .BindBlob(3, job.SerializeAsString());
  s.Step();
  return s.status("put job");
}

absl::Status SqliteStore::PutJob(const v1::Job& job) {
  absl::MutexLock lock(&mu_);
  return PutJobLocked(job);
}

absl::Status SqliteStore::FinishJob(const v1::Job& job, const JobConfigs& configs) {
  absl::MutexLock lock(&mu_);
  Transaction tx(db_);
  MOETUNE_RETURN_IF_ERROR(tx.begun());
  MOETUNE_RETURN_IF_ERROR(PutJobLocked(job));
  for (const auto& [key, content] : configs) {
    Stmt s(db_,
           "INSERT OR REPLACE INTO job_configs(job_id, plan_rank, format, content) "
           "VALUES(?,?,?,?)");
    s.Bind(1, job.job_id())
        .Bind(2, static_cast<int64_t>(key.first))
        .Bind(3, static_cast<int64_t>(key.second))
        .Bind(4, content);
    s.Step();
    MOETUNE_RETURN_IF_ERROR(s.status("put job config"));
  }
  return tx.Commit();
}

absl::StatusOr<v1::Job> SqliteStore::GetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT data FROM jobs WHERE job_id = ?");
  s.Bind(1, job_id);
  if (!s.Step()) {
    MOETUNE_RETURN_IF_ERROR(s.status("get job"));
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  v1::Job job;
  MOETUNE_RETURN_IF_ERROR(ParseBlob(s.Text(0), &job, "job"));
  return job;
}

absl::StatusOr<std::vector<v1::Job>> SqliteStore::ListJobs() {
  absl::MutexLock lock(&mu_);
  Stmt s(db_, "SELECT data FROM jobs ORDER BY created_unix_ms, job_id");
  std::vector<v1::Job> out;
  while (s.Step()) MOETUNE_RETURN_IF_ERROR(ParseBlob(s.Text(0), &out.emplace_back(), "job"));
  MOETUNE_RETURN_IF_ERROR(s.status("list jobs"));
  return out;
}

absl::StatusOr<std::string> SqliteStore::GetJobConfig(const std::string& job_id, int plan_rank,
                                                      v1::ConfigFormat format) {
  absl::MutexLock lock(&mu_);
  Stmt s(db_,
         "SELECT content FROM job_configs WHERE job_id = ? AND plan_rank = ? AND format = ?");
  s.Bind(1, job_id).Bind(2, static_cast<int64_t>(plan_rank)).Bind(3, static_cast<int64_t>(format));
  if (!s.Step()) {
    MOETUNE_RETURN_IF_ERROR(s.status("get job config"));
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' has no ",
                                            v1::ConfigFormat_Name(format), " config for plan ",
                                            plan_rank));
  }
  return s.Text(0);
}

}  // namespace moetune::server
