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

TEST(ResultSpoolTest, MissingFileIsAnEmptySpool) {
  auto spool = ResultSpool::Open(TempPath("none.spool"));
  ASSERT_TRUE(spool.ok());
  EXPECT_EQ((*spool)->size(), 0u);
}

}  // namespace
}  // namespace moetune::agent
