// Scaling properties of the SQLite store that functional tests do not see:
// the statements on the ingest path must use an index, never scan the table
// (a scan per insert makes ingest O(n) in the number of stored results).
#include <sqlite3.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"

namespace moetune::server {
namespace {

using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;
using ::testing::Not;

std::string QueryPlan(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  std::string plan;
  while (sqlite3_step(st) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
    plan += "\n";
  }
  sqlite3_finalize(st);
  return plan;
}

TEST(StoreScalingTest, IngestPathUsesIndexes) {
  const std::string path = TempDbPath("scaling.db");
  {
    auto store = SqliteStore::Open(path);  // creates the schema
    ASSERT_TRUE(store.ok()) << store.status();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // The next sequence number of PutResult.
  EXPECT_THAT(QueryPlan(db, "SELECT IFNULL(MAX(seq), 0) + 1 FROM results"),
              HasSubstr("USING COVERING INDEX results_by_seq"));
  // The duplicate check of PutResult.
  const std::string dup = QueryPlan(db, "SELECT 1 FROM results WHERE result_id = 'x'");
  EXPECT_THAT(dup, HasSubstr("USING"));
  EXPECT_THAT(dup, Not(HasSubstr("SCAN")));
  sqlite3_close(db);
}

}  // namespace
}  // namespace moetune::server
