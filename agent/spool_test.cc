#include "agent/spool.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::agent {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::remove(path.c_str());
  return path;
}

moetune::v1::ProbeResult Result(const std::string& id) {
  moetune::v1::ProbeResult r;
  r.set_result_id(id);
  r.add_measurements()->add_samples_seconds(1.5);
  return r;
}

TEST(ResultSpoolTest, UnacknowledgedResultsSurviveReopenInOrder) {
  const std::string path = TempPath("a.spool");
  {
    auto spool = ResultSpool::Open(path);
    ASSERT_TRUE(spool.ok()) << spool.status();
    ASSERT_TRUE((*spool)->Add(Result("r1")).ok());
    ASSERT_TRUE((*spool)->Add(Result("r2")).ok());
    ASSERT_TRUE((*spool)->Add(Result("r3")).ok());
    ASSERT_TRUE((*spool)->Ack("r2").ok());
    ASSERT_TRUE((*spool)->Ack("unknown").ok());
  }
  auto spool = ResultSpool::Open(path);
  ASSERT_TRUE(spool.ok()) << spool.status();
  auto pending = (*spool)->Pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].result_id(), "r1");
  EXPECT_EQ(pending[1].result_id(), "r3");
  EXPECT_EQ(pending[1].measurements(0).samples_seconds(0), 1.5);
}

TEST(ResultSpoolTest, CorruptFileIsDataLossNamingIt) {
  const std::string path = TempPath("bad.spool");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\x10\x00\x00\x00garbage";  // claims 16 bytes, holds 7
  }
  auto spool = ResultSpool::Open(path);
  EXPECT_EQ(spool.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(spool.status().message()), ::testing::HasSubstr(path));
}

TEST(ResultSpoolTest, AckAllDropsSeveralAtOnce) {
  const std::string path = TempPath("all.spool");
  {
    auto spool = ResultSpool::Open(path);
    ASSERT_TRUE(spool.ok());
    for (const char* id : {"r1", "r2", "r3", "r4"}) ASSERT_TRUE((*spool)->Add(Result(id)).ok());
    ASSERT_TRUE((*spool)->AckAll({"r1", "r3", "unknown"}).ok());
  }
  auto spool = ResultSpool::Open(path);
  ASSERT_TRUE(spool.ok());
  auto pending = (*spool)->Pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].result_id(), "r2");
  EXPECT_EQ(pending[1].result_id(), "r4");
}

TEST(ResultSpoolTest, DeadLetteredResultLeavesTheQueueAndIsKeptWithItsReason) {
  const std::string path = TempPath("dl.spool");
  std::remove((path + ".dead").c_str());
  {
    auto spool = ResultSpool::Open(path);
    ASSERT_TRUE(spool.ok());
    EXPECT_EQ((*spool)->dead_letter_path(), path + ".dead");
    ASSERT_TRUE((*spool)->Add(Result("big")).ok());
    ASSERT_TRUE((*spool)->Add(Result("next")).ok());
    ASSERT_TRUE((*spool)->DeadLetter(Result("big"), "RESOURCE_EXHAUSTED: too many samples").ok());
    // A result that was never spooled (kept in memory) can be dead-lettered too.
    ASSERT_TRUE((*spool)->DeadLetter(Result("memory-only"), "INVALID_ARGUMENT: NaN").ok());
  }
  auto spool = ResultSpool::Open(path);
  ASSERT_TRUE(spool.ok());
  auto pending = (*spool)->Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].result_id(), "next");
  auto dead = ResultSpool::ReadDeadLetters(path + ".dead");
  ASSERT_TRUE(dead.ok()) << dead.status();
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_EQ((*dead)[0].result.result_id(), "big");
  EXPECT_EQ((*dead)[0].reason, "RESOURCE_EXHAUSTED: too many samples");
  EXPECT_EQ((*dead)[0].result.measurements(0).samples_seconds(0), 1.5);  // the whole result
  EXPECT_GT((*dead)[0].dead_lettered_unix_ms, 0);
  EXPECT_EQ((*dead)[1].result.result_id(), "memory-only");
}

TEST(ResultSpoolTest, CorruptDeadLetterLineIsDataLossNamingFileAndLine) {
  const std::string path = TempPath("bad.dead");
  {
    std::ofstream out(path);
    out << R"({"dead_lettered_unix_ms":1,"reason":"r","result":{"result_id":"a"}})" << "\n"
        << "not json\n";
  }
  auto dead = ResultSpool::ReadDeadLetters(path);
  EXPECT_EQ(dead.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(dead.status().message()), ::testing::HasSubstr(path + "' line 2"));
  EXPECT_TRUE(ResultSpool::ReadDeadLetters(TempPath("none.dead"))->empty());
}

TEST(ResultSpoolTest, OneSpoolOneHolder) {
  const std::string path = TempPath("held.spool");
  auto first = ResultSpool::Open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->Add(Result("r1")).ok());
  // A second holder (another agent given the same --spool) is refused, and
  // the holder's results stay as they were.
  auto second = ResultSpool::Open(path);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::AllOf(::testing::HasSubstr(path + ".lock is locked"),
                               ::testing::HasSubstr("its own --spool")));
  // Reading does not take it.
  auto read = ResultSpool::ReadPending(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].result_id(), "r1");
  // Once the holder is gone the spool opens again, with what it left.
  first->reset();
  auto again = ResultSpool::Open(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->size(), 1u);
  EXPECT_TRUE(ResultSpool::ReadPending(TempPath("none-read.spool"))->empty());
}

TEST(ResultSpoolTest, MissingFileIsAnEmptySpool) {
  auto spool = ResultSpool::Open(TempPath("none.spool"));
  ASSERT_TRUE(spool.ok());
  EXPECT_EQ((*spool)->size(), 0u);
}

}  // namespace
}  // namespace moetune::agent
