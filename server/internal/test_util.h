// Helpers for server tests: a temp-dir SQLite path and a settable clock
// (status matchers: testing/status_matchers.h).
#pragma once

#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
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

}  // namespace moetune::server::testing
