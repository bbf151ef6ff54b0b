#include "planner/parallel_for.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::planner {
namespace {

TEST(ResolveThreadCountTest, ExplicitCountIsKept) {
  EXPECT_EQ(ResolveThreadCount(3), 3);
  EXPECT_GE(ResolveThreadCount(0), 1);
}

TEST(ParallelForTest, RunsEveryTaskExactlyOnce) {
  constexpr std::size_t kTasks = 1000;
  std::vector<std::atomic<int>> runs(kTasks);
  ParallelFor(4, kTasks, [&](std::size_t task, int) { runs[task].fetch_add(1); });
  for (std::size_t i = 0; i < kTasks; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
}

TEST(ParallelForTest, WorkerIndexIsInRangeAndUsesSeveralThreads) {
  std::mutex mu;
  std::condition_variable both_started;
  std::set<int> workers;
  std::set<std::thread::id> thread_ids;
  // Every task waits until both workers have taken one, so one worker
  // cannot run all the tasks before the other starts (however loaded the
  // machine); the shared deadline bounds the wait if a worker never comes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ParallelFor(2, 64, [&](std::size_t, int worker) {
    std::unique_lock<std::mutex> lock(mu);
    workers.insert(worker);
    thread_ids.insert(std::this_thread::get_id());
    both_started.notify_all();
    both_started.wait_until(lock, deadline, [&] { return workers.size() >= 2; });
  });
  EXPECT_THAT(workers, ::testing::ElementsAre(0, 1));
  EXPECT_EQ(thread_ids.size(), 2u);
}

TEST(ParallelForTest, NoTasksCallsNothing) {
  bool called = false;
  ParallelFor(2, 0, [&](std::size_t, int) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelForTest, NeverMoreWorkersThanTasks) {
  std::atomic<int> max_worker{-1};
  ParallelFor(8, 1, [&](std::size_t, int worker) { max_worker = worker; });
  EXPECT_EQ(max_worker.load(), 0);
}

}  // namespace
}  // namespace moetune::planner
