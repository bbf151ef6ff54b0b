// The group-commit writer over a real SQLite store. A gate in front of the
// store holds the first transaction open, so that the writes arriving
// meanwhile queue up and form the next batch: batch composition is then
// deterministic (no timing involved).
#include "server/result_writer.h"

#include <sqlite3.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/gated_store.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::server::testing::GatedStore;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::ProbeResult Result(const std::string& id) {
  v1::ProbeResult r;
  r.set_result_id(id);
  r.mutable_provenance()->set_cluster("ci");
  r.set_received_unix_ms(1000);
  v1::Measurement* m = r.add_measurements();
  m->set_name("gemm");
  m->add_samples_seconds(0.5);
  return r;
}

class ResultWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempDbPath("writer.db");
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    real_ = std::move(*store);
    gated_ = std::make_unique<GatedStore>(real_.get());
    writer_ = std::make_unique<ResultWriter>(gated_.get(), ResultWriter::Options{});
  }

  // Starts one write that the closed gate holds inside its transaction;
  // returns once it is held there.
  void HoldFirstTransaction() {
    first_ = Result("first");
    first_thread_ = std::thread([this] { first_outcome_ = writer_->Write(first_, std::nullopt); });
    while (!gated_->Blocked()) std::this_thread::yield();
  }

  // Makes every insert of `result_id` fail inside the transaction (a
  // database error such as a full disk would do the same).
  void PoisonResultId(const std::string& result_id) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    const std::string sql = absl::StrCat(
        "CREATE TRIGGER poison BEFORE INSERT ON results WHEN NEW.result_id = '", result_id,
        "' BEGIN SELECT RAISE(ABORT, 'injected write failure'); END");
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  int64_t Stored() { return *real_->CountResults({}); }

  void TearDown() override {
    if (first_thread_.joinable()) {
      gated_->OpenGate();
      first_thread_.join();
    }
    writer_.reset();
  }

  std::string path_;
  std::unique_ptr<SqliteStore> real_;
  std::unique_ptr<GatedStore> gated_;
  std::unique_ptr<ResultWriter> writer_;
  v1::ProbeResult first_;
  std::thread first_thread_;
  absl::StatusOr<bool> first_outcome_ = absl::UnknownError("not run");
};

TEST_F(ResultWriterTest, ConcurrentWritersShareOneTransactionAndAreAllAcked) {
  HoldFirstTransaction();
  constexpr int kWriters = 32;
  std::vector<v1::ProbeResult> results;
  for (int i = 0; i < kWriters; ++i) results.push_back(Result(absl::StrCat("r", i)));
  std::vector<absl::StatusOr<bool>> outcomes(kWriters, absl::UnknownError("not run"));
  std::atomic<int> returned{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      outcomes[i] = writer_->Write(results[i], std::nullopt);
      ++returned;
    });
  }
  while (writer_->queued() < kWriters) std::this_thread::yield();
  // Queued behind the held transaction: none is acknowledged before it commits.
  EXPECT_EQ(returned.load(), 0);
  EXPECT_EQ(Stored(), 0);

  gated_->OpenGate();
  for (auto& t : threads) t.join();
  first_thread_.join();
  ASSERT_TRUE(first_outcome_.ok()) << first_outcome_.status();
  EXPECT_TRUE(*first_outcome_);
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].status();
    EXPECT_TRUE(*outcomes[i]) << i;
  }
  // 1 + 32 results in two transactions: the held one, then all 32 together.
  EXPECT_THAT(gated_->batch_sizes(), ElementsAre(1, kWriters));
  EXPECT_EQ(Stored(), kWriters + 1);
  ResultWriter::Stats stats = writer_->stats();
  EXPECT_EQ(stats.transactions, 2);
  EXPECT_EQ(stats.writes, kWriters + 1);
  EXPECT_EQ(stats.largest_batch, kWriters);
  EXPECT_EQ(stats.failed_transactions, 0);
}

TEST_F(ResultWriterTest, FailedTransactionFailsEveryWriteOfItsBatchAndStoresNone) {
  ASSERT_NO_FATAL_FAILURE(PoisonResultId("r3"));
  HoldFirstTransaction();
  constexpr int kWriters = 8;
  std::vector<v1::ProbeResult> results;
  for (int i = 0; i < kWriters; ++i) results.push_back(Result(absl::StrCat("r", i)));
  std::vector<absl::StatusOr<bool>> outcomes(kWriters, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] { outcomes[i] = writer_->Write(results[i], std::nullopt); });
  }
  while (writer_->queued() < kWriters) std::this_thread::yield();
  gated_->OpenGate();
  for (auto& t : threads) t.join();
  first_thread_.join();

  EXPECT_THAT(gated_->batch_sizes(), ElementsAre(1, kWriters));
  ASSERT_TRUE(first_outcome_.ok());  // its own transaction committed
  for (int i = 0; i < kWriters; ++i) {
    // r3 broke the transaction: every write in it is refused, none acked.
    EXPECT_THAT(outcomes[i],
                StatusIs(absl::StatusCode::kUnavailable, HasSubstr("injected write failure")))
        << i;
  }
  EXPECT_EQ(Stored(), 1);
  EXPECT_EQ(writer_->stats().failed_transactions, 1);

  // The writer recovers: the other results, re-sent, are stored; a second
  // re-send is a duplicate (idempotent).
  for (int i = 0; i < kWriters; ++i) {
    if (i == 3) continue;
    absl::StatusOr<bool> again = writer_->Write(results[i], std::nullopt);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(*again) << i;
    absl::StatusOr<bool> dup = writer_->Write(results[i], std::nullopt);
    ASSERT_TRUE(dup.ok()) << dup.status();
    EXPECT_FALSE(*dup) << i;
  }
  EXPECT_EQ(Stored(), 1 + kWriters - 1);
}

TEST_F(ResultWriterTest, SameIdTwiceInOneBatchIsStoredOnceAndReportedAsDuplicate) {
  HoldFirstTransaction();
  v1::ProbeResult r = Result("same");
  absl::StatusOr<bool> a = absl::UnknownError("not run"), b = absl::UnknownError("not run");
  std::thread ta([&] { a = writer_->Write(r, std::nullopt); });
  while (writer_->queued() < 1) std::this_thread::yield();
  std::thread tb([&] { b = writer_->Write(r, std::nullopt); });
  while (writer_->queued() < 2) std::this_thread::yield();
  gated_->OpenGate();
  ta.join();
  tb.join();
  first_thread_.join();
  EXPECT_THAT(gated_->batch_sizes(), ElementsAre(1, 2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a);   // first in the queue: stored
  EXPECT_FALSE(*b);  // same id later in the same transaction: duplicate
  EXPECT_EQ(Stored(), 2);  // "first" and "same"
}

TEST_F(ResultWriterTest, OneWritesOwnErrorLeavesTheOthersOfItsBatchStored) {
  StoredCampaign c;
  c.campaign_id = "c1";
  c.cluster = "ci";
  c.tasks.emplace_back().task.set_task_id("c1/t0");
  ASSERT_TRUE(real_->CreateCampaign(c).ok());
  gated_->OpenGate();
  v1::ProbeResult ok1 = Result("ok1"), bad = Result("bad"), ok2 = Result("ok2");
  std::vector<ResultWrite> writes = {
      {&ok1, TaskUpdate{"c1", "c1/t0", TaskState::kDone, 1, ""}},
      {&bad, TaskUpdate{"c1", "c1/t9", TaskState::kDone, 1, ""}},  // no such task
      {&ok2, std::nullopt}};
  std::vector<absl::StatusOr<bool>> out = writer_->Write(writes);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out[0], StatusIs(absl::StatusCode::kOk, ""));
  EXPECT_THAT(out[1], StatusIs(absl::StatusCode::kNotFound, HasSubstr("c1/t9")));
  EXPECT_THAT(out[2], StatusIs(absl::StatusCode::kOk, ""));
  EXPECT_EQ(Stored(), 2);  // ok1 and ok2; bad's insert was undone with its update
  auto campaigns = real_->LoadCampaigns();
  ASSERT_TRUE(campaigns.ok());
  EXPECT_EQ((*campaigns)[0].tasks[0].state, TaskState::kDone);
  EXPECT_THAT(gated_->batch_sizes(), ElementsAre(3));  // one call: one transaction
}

}  // namespace
}  // namespace moetune::server
