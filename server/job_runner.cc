#include "server/job_runner.h"

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace moetune::server {
namespace {
namespace v1 = ::moetune::v1;
}  // namespace

JobRunner::JobRunner(Store* store, Clock clock, ValidateFn validate, PlanFn plan, int workers)
    : store_(store), clock_(std::move(clock)), validate_(std::move(validate)), plan_(std::move(plan)) {
  for (int i = 0; i < std::max(1, workers); ++i) workers_.emplace_back([this] { Work(); });
}

JobRunner::~JobRunner() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

absl::Status JobRunner::Recover() {
  absl::StatusOr<std::vector<v1::Job>> jobs = store_->ListJobs();
  if (!jobs.ok()) return jobs.status();
  absl::MutexLock lock(&mu_);
  for (v1::Job& job : *jobs) {
    const bool unfinished = !Finished(job);
    if (unfinished) {
      // Interrupted by a stop: run again from the start.
      job.set_state(v1::JOB_STATE_QUEUED);
      job.set_candidates_done(0);
      queue_.push_back(job.job_id());
    }
    jobs_[job.job_id()].job = std::move(job);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> JobRunner::Submit(const v1::SubmitPlanRequest& request) {
  if (absl::Status st = validate_(request); !st.ok()) return st;
  v1::Job job;
  const int64_t now_ms = absl::ToUnixMillis(clock_());
  {
    absl::MutexLock lock(&mu_);
    job.set_job_id(absl::StrFormat("job-%d-%d-%04x", now_ms, next_id_++,
                                   absl::Uniform<uint16_t>(absl::BitGen())));
  }
  job.set_state(v1::JOB_STATE_QUEUED);
  *job.mutable_request() = request;
  job.set_created_unix_ms(now_ms);
  job.set_updated_unix_ms(now_ms);
  if (absl::Status st = store_->PutJob(job); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  jobs_[job.job_id()].job = job;
  queue_.push_back(job.job_id());
  return job.job_id();
}

absl::StatusOr<v1::Job> JobRunner::Get(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  return it->second.job;
}

absl::StatusOr<std::pair<v1::Job, uint64_t>> JobRunner::Watch(const std::string& job_id,
                                                              uint64_t seen, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  const Entry* e = &it->second;  // map nodes are stable
  auto changed = [e, seen]() { return e->version != seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), wait);
  return std::make_pair(e->job, e->version);
}

absl::StatusOr<std::string> JobRunner::Config(const std::string& job_id, int plan_rank,
                                              v1::ConfigFormat format) {
  absl::StatusOr<v1::Job> job = Get(job_id);
  if (!job.ok()) return job.status();
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", job_id, "' is ", v1::JobState_Name(job->state()),
        job->state() == v1::JOB_STATE_FAILED ? absl::StrCat(": ", job->error_message()) : ""));
  }
  return store_->GetJobConfig(job_id, plan_rank, format);
}

void JobRunner::Update(const std::string& job_id, const std::function<void(v1::Job&)>& change) {
  absl::MutexLock lock(&mu_);
  Entry& e = jobs_[job_id];
  change(e.job);
  e.job.set_updated_unix_ms(absl::ToUnixMillis(clock_()));
  ++e.version;
}

void JobRunner::Work() {
  while (true) {
    std::string id;
    v1::SubmitPlanRequest request;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      id = queue_.front();
      queue_.pop_front();
      request = jobs_[id].job.request();
    }
    Update(id, [](v1::Job& j) { j.set_state(v1::JOB_STATE_RUNNING); });
    {
      absl::StatusOr<v1::Job> running = Get(id);
      // Durable RUNNING state is informative only (Recover re-queues it).
      if (running.ok()) (void)store_->PutJob(*running);
    }
    absl::StatusOr<PlanOutput> out = plan_(request, [this, &id](int64_t done, int64_t total) {
      Update(id, [&](v1::Job& j) {
        j.set_candidates_done(done);
        j.set_candidates_total(total);
      });
    });
    v1::Job finished = *Get(id);
    JobConfigs configs;
    if (out.ok()) {
      finished.set_state(v1::JOB_STATE_SUCCEEDED);
      finished.clear_plans();
      for (const v1::Plan& p : out->plans) *finished.add_plans() = p;
      finished.set_method(out->method);
      finished.set_calibration_note(out->calibration_note);
      configs = std::move(out->configs);
    } else {
      finished.set_state(v1::JOB_STATE_FAILED);
      finished.set_error_message(out.status().ToString());
    }
    finished.set_updated_unix_ms(absl::ToUnixMillis(clock_()));
    // Retry the commit for a while: the result must not be reported without
    // being stored.
    absl::Status st;
    for (int i = 0; i < 50; ++i) {
      st = store_->FinishJob(finished, configs);
      if (st.ok()) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (!st.ok()) {
      finished.set_state(v1::JOB_STATE_FAILED);
      finished.clear_plans();
      finished.set_error_message(absl::StrCat("could not store the result: ", st.ToString()));
    }
    Update(id, [&](v1::Job& j) { j = finished; });
  }
}

}  // namespace moetune::server
