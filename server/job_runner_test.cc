#include "server/job_runner.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::server::testing::FakeClock;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;

absl::Status Validate(const v1::SubmitPlanRequest& r) {
  if (r.shape().gpus() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("shape.gpus must be > 0, got ", r.shape().gpus()));
  }
  return absl::OkStatus();
}

// A plan function with hand-checkable output: tp = gpus / 8, one JSON config.
absl::StatusOr<PlanOutput> Plan(const v1::SubmitPlanRequest& r, const ProgressFn& progress) {
  progress(1, 2);
  progress(2, 2);
  PlanOutput out;
  v1::Plan& p = out.plans.emplace_back();
  p.set_rank(1);
  p.mutable_parallel()->set_tensor_parallel(static_cast<int>(r.shape().gpus() / 8));
  out.configs[{1, v1::CONFIG_FORMAT_JSON}] = absl::StrCat("{\"tp\":", r.shape().gpus() / 8, "}");
  out.method = "test";
  return out;
}

v1::Job WaitDone(JobRunner& runner, const std::string& id) {
  uint64_t version = 0;
  for (int i = 0; i < 600; ++i) {
    auto w = runner.Watch(id, version, absl::Milliseconds(100));
    EXPECT_TRUE(w.ok());
    if (JobRunner::Finished(w->first)) return w->first;
    version = w->second;
  }
  ADD_FAILURE() << "job " << id << " did not finish within 60 s";
  return {};
}

TEST(JobRunnerTest, SubmittedJobRunsAndItsConfigIsStored) {
  const std::string path = TempDbPath("jobs.db");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok());
  FakeClock clock;
  JobRunner runner(store->get(), [&] { return clock.Now(); }, Validate, Plan, 2);
  v1::SubmitPlanRequest req;
  req.mutable_shape()->set_gpus(64);
  auto id = runner.Submit(req);
  ASSERT_TRUE(id.ok()) << id.status();
  v1::Job job = WaitDone(runner, *id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.candidates_done(), 2);
  ASSERT_EQ(job.plans_size(), 1);
  EXPECT_EQ(job.plans(0).parallel().tensor_parallel(), 8);  // 64 / 8
  auto json = runner.Config(*id, 1, v1::CONFIG_FORMAT_JSON);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, "{\"tp\":8}");
  EXPECT_THAT(runner.Config(*id, 1, v1::CONFIG_FORMAT_MEGATRON),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("CONFIG_FORMAT_MEGATRON")));
  // Durable: a fresh store on the same file has the finished job.
  auto again = SqliteStore::Open(path);
  auto stored = (*again)->GetJob(*id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST(JobRunnerTest, InvalidRequestIsRefusedAndNothingIsStored) {
  auto store = SqliteStore::Open(TempDbPath("jobs.db"));
  FakeClock clock;
  JobRunner runner(store->get(), [&] { return clock.Now(); }, Validate, Plan, 1);
  v1::SubmitPlanRequest req;
  req.mutable_shape()->set_gpus(-3);
  EXPECT_THAT(runner.Submit(req),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape.gpus must be > 0, got -3")));
  auto jobs = (*store)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST(JobRunnerTest, JobInterruptedByAStopRunsAgainAfterRecover) {
  const std::string path = TempDbPath("jobs.db");
  auto store = SqliteStore::Open(path);
  v1::Job interrupted;
  interrupted.set_job_id("job-1");
  interrupted.set_state(v1::JOB_STATE_RUNNING);
  interrupted.mutable_request()->mutable_shape()->set_gpus(16);
  ASSERT_TRUE((*store)->PutJob(interrupted).ok());
  FakeClock clock;
  JobRunner runner(store->get(), [&] { return clock.Now(); }, Validate, Plan, 1);
  ASSERT_TRUE(runner.Recover().ok());
  v1::Job job = WaitDone(runner, "job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.plans(0).parallel().tensor_parallel(), 2);
}

TEST(JobRunnerTest, FailedPlanIsReportedWithItsReason) {
  auto store = SqliteStore::Open(TempDbPath("jobs.db"));
  FakeClock clock;
  JobRunner runner(
      store->get(), [&] { return clock.Now(); }, Validate,
      [](const v1::SubmitPlanRequest&, const ProgressFn&) -> absl::StatusOr<PlanOutput> {
        return absl::FailedPreconditionError("no plan fits in memory");
      },
      1);
  v1::SubmitPlanRequest req;
  req.mutable_shape()->set_gpus(8);
  auto id = runner.Submit(req);
  ASSERT_TRUE(id.ok());
  v1::Job job = WaitDone(runner, *id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.error_message(), HasSubstr("no plan fits in memory"));
  EXPECT_THAT(runner.Config(*id, 1, v1::CONFIG_FORMAT_JSON),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no plan fits")));
}

}  // namespace
}  // namespace moetune::server
