// Checks that a --config=tsan build reports what it should and nothing else:
//  * threads handing work over through absl::Mutex (Lock, LockWhen, Await,
//    CondVar) run clean: with Debian's uninstrumented Abseil this only holds
//    because tsan_absl_sync.cc annotates those calls (without it TSan reports
//    a race on the first shared counter);
//  * an unsynchronized counter is still reported: the same binary re-run with
//    --race must exit non-zero with a ThreadSanitizer data-race report.
// Run: bazel test --config=tsan //tools/sanitizers:tsan_self_test
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace {

constexpr int kItems = 2000;

// One producer, three consumers using each way of waiting; returns the sum
// of the consumed items (expected kItems * (kItems - 1) / 2).
long HandOverThroughAbslMutex() {
  absl::Mutex mu;
  absl::CondVar cv;
  std::vector<int> queue;
  bool done = false;
  long sum = 0;
  auto pop = [&] {  // requires mu held and queue non-empty
    sum += queue.back();
    queue.pop_back();
  };
  auto ready = [&] { return !queue.empty() || done; };
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      absl::MutexLock lock(&mu);
      queue.push_back(i);
      cv.Signal();
    }
    absl::MutexLock lock(&mu);
    done = true;
    cv.SignalAll();
  });
  std::thread with_condvar([&] {
    for (;;) {
      absl::MutexLock lock(&mu);
      while (!ready()) cv.WaitWithTimeout(&mu, absl::Milliseconds(5));
      if (queue.empty()) return;
      pop();
    }
  });
  std::thread with_lock_when([&] {
    for (;;) {
      mu.LockWhen(absl::Condition(&ready));
      const bool finished = queue.empty();
      if (!finished) pop();
      mu.Unlock();
      if (finished) return;
    }
  });
  std::thread with_await([&] {
    for (;;) {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&ready));
      if (queue.empty()) return;
      pop();
    }
  });
  producer.join();
  with_condvar.join();
  with_lock_when.join();
  with_await.join();
  return sum;
}

int UnsynchronizedCounter() {
  int counter = 0;
  auto bump = [&] {
    for (int i = 0; i < 10000; ++i) ++counter;
  };
  std::thread a(bump), b(bump);
  a.join();
  b.join();
  return counter;
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsanBuild = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kTsanBuild = true;
#else
constexpr bool kTsanBuild = false;
#endif
#else
constexpr bool kTsanBuild = false;
#endif

TEST(TsanSelfTest, BuiltWithThreadSanitizer) {
  ASSERT_TRUE(kTsanBuild) << "run with --config=tsan";
}

TEST(TsanSelfTest, AbslMutexHandOverIsNotReported) {
  // halt_on_error=1 (tsan_absl_sync.cc): a report would end the process here.
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(HandOverThroughAbslMutex(), long{kItems} * (kItems - 1) / 2);
  }
}

TEST(TsanSelfTest, UnsynchronizedCounterIsReported) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0) << std::strerror(errno);
  self[len] = '\0';
  const std::string cmd = std::string("'") + self + "' --race 2>&1";
  FILE* child = popen(cmd.c_str(), "r");
  ASSERT_NE(child, nullptr) << std::strerror(errno);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, child)) > 0) out.append(buf, n);
  const int status = pclose(child);
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("WARNING: ThreadSanitizer: data race"), std::string::npos) << out;
  EXPECT_NE(out.find("UnsynchronizedCounter"), std::string::npos) << out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--race") == 0) {
    return UnsynchronizedCounter() == 20000 ? 0 : 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
