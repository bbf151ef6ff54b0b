#include "planner/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace moetune::planner {

int ResolveThreadCount(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void ParallelFor(int num_threads, std::size_t num_tasks,
                 const std::function<void(std::size_t task, int worker)>& fn) {
  if (num_tasks == 0) return;
  const int workers = static_cast<int>(std::min<std::size_t>(
      static_cast<std::size_t>(ResolveThreadCount(num_threads)), num_tasks));
  std::atomic<std::size_t> next{0};
  auto run = [&](int worker) {
    for (std::size_t task = next.fetch_add(1, std::memory_order_relaxed);
         task < num_tasks;
         task = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(task, worker);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (std::thread& t : threads) t.join();
}

}  // namespace moetune::planner
