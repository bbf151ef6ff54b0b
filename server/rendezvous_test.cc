#include "server/rendezvous.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/test_util.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

TEST(RendezvousTableTest, GetWaitsForSetFromAnotherThread) {
  RendezvousTable table;
  table.Open("t1/e/a1/");
  std::thread setter([&] { ASSERT_TRUE(table.Set("t1/e/a1/rank0", "addr0").ok()); });
  absl::StatusOr<std::string> v = table.Get("t1/e/a1/rank0", absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "addr0");
}

TEST(RendezvousTableTest, KeysOutsideOpenPrefixesAreAborted) {
  RendezvousTable table;
  table.Open("t1/e/a1/");
  EXPECT_THAT(table.Set("t1/e/a2/rank0", "x"),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("t1/e/a2/rank0")));
  EXPECT_THAT(table.Get("t2/rank0", absl::ZeroDuration()),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("t2/rank0")));
}

TEST(RendezvousTableTest, MissingKeyTimesOutNamingIt) {
  RendezvousTable table;
  table.Open("p/");
  EXPECT_THAT(table.Get("p/k", absl::Milliseconds(10)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("'p/k'")));
}

TEST(RendezvousTableTest, CloseWakesWaitersWithAborted) {
  RendezvousTable table;
  table.Open("p/");
  std::thread closer([&] {
    absl::SleepFor(absl::Milliseconds(20));  // let Get start waiting; not needed for correctness
    table.Close("p/");
  });
  absl::Time start = absl::Now();
  EXPECT_THAT(table.Get("p/k", absl::Seconds(30)), StatusIs(absl::StatusCode::kAborted, HasSubstr("p/k")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  closer.join();
  EXPECT_EQ(table.open_prefixes(), 0u);
}

TEST(RendezvousTableTest, OversizedValueIsInvalid) {
  RendezvousTable table;
  table.Open("p/");
  EXPECT_THAT(table.Set("p/k", std::string(RendezvousTable::kMaxValueBytes + 1, 'x')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("p/k")));
}

}  // namespace
}  // namespace moetune::server
