// Helpers for server tests: a temp-dir SQLite path, a settable clock and
// status matchers.
#pragma once

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::server::testing {

// A fresh database path under TEST_TMPDIR (unique per test).
inline std::string TempDbPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir ? dir : "/tmp";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = base + "/" + info->test_suite_name() + "_" + info->name() + "_" + name;
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

class FakeClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

namespace internal_status {
inline absl::Status Get(const absl::Status& s) { return s; }
template <typename T>
absl::Status Get(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal_status

MATCHER_P2(StatusIs, code, message_matcher, "") {
  absl::Status st = ::moetune::server::testing::internal_status::Get(arg);
  if (st.code() != code) {
    *result_listener << "code is " << absl::StatusCodeToString(st.code()) << ": " << st.message();
    return false;
  }
  return ::testing::ExplainMatchResult(message_matcher, std::string(st.message()),
                                       result_listener);
}

#define MOETUNE_ASSERT_OK_AND_ASSIGN(lhs, expr)                 \
  auto MOETUNE_CONCAT(_st_, __LINE__) = (expr);                 \
  ASSERT_TRUE(MOETUNE_CONCAT(_st_, __LINE__).ok())              \
      << MOETUNE_CONCAT(_st_, __LINE__).status();               \
  lhs = std::move(*MOETUNE_CONCAT(_st_, __LINE__))
#define MOETUNE_CONCAT_INNER(a, b) a##b
#define MOETUNE_CONCAT(a, b) MOETUNE_CONCAT_INNER(a, b)

}  // namespace moetune::server::testing
