#include "planner/parallel_for.h"

#include <atomic>
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
  std::set<int> workers;
  std::set<std::thread::id> thread_ids;
  ParallelFor(2, 64, [&](std::size_t, int worker) {
    // Long enough that the second worker gets a task before the first ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mu);
    workers.insert(worker);
    thread_ids.insert(std::this_thread::get_id());
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
