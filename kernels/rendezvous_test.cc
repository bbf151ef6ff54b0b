#include "kernels/rendezvous.h"

#include <cstdlib>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::kernels {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempDir() {
  std::string tmpl = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/rdzv.XXXXXX";
  return mkdtemp(tmpl.data());
}

TEST(FileRendezvousStore, SetThenGet) {
  auto store = MakeFileRendezvousStore(TempDir());
  ASSERT_TRUE(store->Set("run1/rank/0", {'a', 'b', '\0', 'c'}).ok());
  std::vector<char> v;
  ASSERT_TRUE(store->Get("run1/rank/0", std::chrono::milliseconds(1000), &v).ok());
  EXPECT_EQ(v, (std::vector<char>{'a', 'b', '\0', 'c'}));
}

TEST(FileRendezvousStore, GetWaitsForAWriterInAnotherThread) {
  auto store = MakeFileRendezvousStore(TempDir());
  std::vector<char> v;
  std::thread writer([&] { ASSERT_TRUE(store->Set("k", {'x'}).ok()); });
  ASSERT_TRUE(store->Get("k", std::chrono::milliseconds(10000), &v).ok());
  writer.join();
  EXPECT_EQ(v, std::vector<char>{'x'});
}

TEST(FileRendezvousStore, MissingKeyTimesOutNamingTheKey) {
  auto store = MakeFileRendezvousStore(TempDir());
  std::vector<char> v;
  EXPECT_THAT(store->Get("never/set", std::chrono::milliseconds(30), &v),
              StatusIs(ProbeCode::kDeadlineExceeded, HasSubstr("'never/set' not set within 30 ms")));
}

}  // namespace
}  // namespace moetune::kernels

namespace moetune::kernels {
namespace {

TEST(InMemoryRendezvousStore, GetWaitsForSetAndTimesOut) {
  auto store = MakeInMemoryRendezvousStore();
  std::vector<char> v;
  std::thread writer([&] { ASSERT_TRUE(store->Set("a", {'1', '2'}).ok()); });
  ASSERT_TRUE(store->Get("a", std::chrono::milliseconds(10000), &v).ok());
  writer.join();
  EXPECT_EQ(v, (std::vector<char>{'1', '2'}));
  EXPECT_THAT(store->Get("b", std::chrono::milliseconds(5), &v),
              StatusIs(ProbeCode::kDeadlineExceeded, ::testing::HasSubstr("'b'")));
}

}  // namespace
}  // namespace moetune::kernels
