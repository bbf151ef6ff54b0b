// RendezvousStore: the key-value service through which the ranks of a
// multi-process probe find each other (Gloo TCP addresses, the NCCL unique
// id). Std-only, so that the server can implement it over gRPC and the CUDA
// probes can use it without Abseil. kernels/cpu/gloo_store.h adapts it to
// gloo::rendezvous::Store.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kernels/probe_status.h"

namespace moetune::kernels {

class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  // Publishes `value` under `key` (keys are written once per probe run).
  virtual ProbeStatus Set(const std::string& key, const std::vector<char>& value) = 0;
  // Blocks until `key` exists or `timeout` passes; DeadlineExceeded naming the
  // key on timeout (and only then: callers poll on it). Any other error means
  // the key will never come (e.g. Aborted: the attempt was closed).
  virtual ProbeStatus Get(const std::string& key, std::chrono::milliseconds timeout,
                          std::vector<char>* value) = 0;
};

// A store over a directory shared by the ranks (one file per key, written to a
// temporary name and renamed so readers never see partial values; readers
// wait on inotify events, Linux only). For tests and single-host runs. The
// directory must exist.
std::shared_ptr<RendezvousStore> MakeFileRendezvousStore(const std::string& directory);

// A store in this process's memory (threads of one process; 1-rank groups).
std::shared_ptr<RendezvousStore> MakeInMemoryRendezvousStore();

}  // namespace moetune::kernels
