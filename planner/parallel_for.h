// A minimal parallel loop over independent tasks on std::threads, for the
// search. Tasks are handed out one index at a time from a shared atomic
// counter, so uneven task costs balance across workers without a queue.
#pragma once

#include <cstddef>
#include <functional>

namespace moetune::planner {

// The number of workers ParallelFor uses for `requested` (0 = one per
// hardware thread as reported by std::thread::hardware_concurrency, at least 1).
int ResolveThreadCount(int requested);

// Calls fn(task, worker) for every task in [0, num_tasks), on `num_threads`
// workers (resolved as above); worker is in [0, resolved count) and is stable
// within one call of fn, so callers can keep per-worker state without locks.
// The calling thread is worker 0. Returns when every task has run. fn must not
// throw.
void ParallelFor(int num_threads, std::size_t num_tasks,
                 const std::function<void(std::size_t task, int worker)>& fn);

}  // namespace moetune::planner
