// GatedStore: a Store that forwards to a real one, for tests that need a
// result write to stay in progress while something else happens. Its
// PutResults records each batch's size and, while the gate is closed, blocks
// before (or, with kAfterWrite, after) the real write.
#pragma once

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/store.h"

namespace moetune::server::testing {

class GatedStore final : public Store {
 public:
  enum class Gate { kBeforeWrite, kAfterWrite };
  explicit GatedStore(Store* real, Gate gate = Gate::kBeforeWrite) : real_(real), gate_(gate) {}

  void OpenGate() {
    absl::MutexLock l(&mu_);
    open_ = true;
  }
  // True while a PutResults call waits at the closed gate.
  bool Blocked() {
    absl::MutexLock l(&mu_);
    return blocked_;
  }
  std::vector<int> batch_sizes() {
    absl::MutexLock l(&mu_);
    return sizes_;
  }

  absl::StatusOr<std::vector<absl::StatusOr<bool>>> PutResults(
      const std::vector<ResultWrite>& writes) override {
    {
      absl::MutexLock l(&mu_);
      sizes_.push_back(static_cast<int>(writes.size()));
    }
    if (gate_ == Gate::kBeforeWrite) Wait();
    auto out = real_->PutResults(writes);
    if (gate_ == Gate::kAfterWrite) Wait();
    return out;
  }

  absl::Status PutAgent(const moetune::v1::AgentInfo& a) override { return real_->PutAgent(a); }
  absl::StatusOr<std::vector<moetune::v1::AgentInfo>> ListAgents() override {
    return real_->ListAgents();
  }
  absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ListResults(
      const ResultFilter& f) override {
    return real_->ListResults(f);
  }
  absl::StatusOr<int64_t> CountResults(const ResultFilter& f) override {
    return real_->CountResults(f);
  }
  absl::Status CreateCampaign(const StoredCampaign& c) override { return real_->CreateCampaign(c); }
  absl::Status UpdateTask(const TaskUpdate& u) override { return real_->UpdateTask(u); }
  absl::Status SetCampaignState(const std::string& id, moetune::v1::CampaignState s) override {
    return real_->SetCampaignState(id, s);
  }
  absl::StatusOr<std::vector<StoredCampaign>> LoadCampaigns() override {
    return real_->LoadCampaigns();
  }
  absl::Status PutJob(const moetune::v1::Job& j) override { return real_->PutJob(j); }
  absl::Status FinishJob(const moetune::v1::Job& j, const JobConfigs& c) override {
    return real_->FinishJob(j, c);
  }
  absl::StatusOr<moetune::v1::Job> GetJob(const std::string& id) override {
    return real_->GetJob(id);
  }
  absl::StatusOr<std::vector<moetune::v1::Job>> ListJobs() override { return real_->ListJobs(); }
  absl::StatusOr<std::string> GetJobConfig(const std::string& id, int rank,
                                           moetune::v1::ConfigFormat f) override {
    return real_->GetJobConfig(id, rank, f);
  }

 private:
  void Wait() {
    absl::MutexLock l(&mu_);
    blocked_ = !open_;
    mu_.Await(absl::Condition(&open_));
    blocked_ = false;
  }

  Store* const real_;
  const Gate gate_;
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool blocked_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> sizes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace moetune::server::testing
