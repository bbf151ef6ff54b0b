#include "server/sqlite_store.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/test_util.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::ProbeResult Result(const std::string& id, const std::string& cluster,
                       const std::string& campaign, const std::string& task) {
  v1::ProbeResult r;
  r.set_result_id(id);
  r.set_task_id(task);
  r.set_campaign_id(campaign);
  r.mutable_provenance()->set_cluster(cluster);
  r.set_received_unix_ms(1000);
  v1::Measurement* m = r.add_measurements();
  m->set_name("fwd/grouped");
  m->add_samples_seconds(0.5);
  m->set_median_seconds(0.5);
  return r;
}

StoredCampaign Campaign(const std::string& id, int tasks) {
  StoredCampaign c;
  c.campaign_id = id;
  c.cluster = "ci";
  c.profile = v1::CAMPAIGN_PROFILE_QUICK;
  c.created_unix_ms = 42;
  for (int i = 0; i < tasks; ++i) {
    StoredTask& t = c.tasks.emplace_back();
    t.task.set_task_id(id + "/t" + std::to_string(i));
    t.task.set_campaign_id(id);
    t.task.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  }
  return c;
}

TEST(SqliteStoreTest, ResultsSurviveReopenAndAreStoredOncePerId) {
  const std::string path = TempDbPath("results.db");
  {
    MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(path));
    absl::StatusOr<bool> first = store->PutResult(Result("r1", "ci", "c1", "t1"), std::nullopt);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(*first);
    absl::StatusOr<bool> again = store->PutResult(Result("r1", "ci", "c1", "t1"), std::nullopt);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_FALSE(*again);  // idempotent re-send
    ASSERT_TRUE(store->PutResult(Result("r2", "other", "c2", "t2"), std::nullopt).ok());
  }
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(path));
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto all, store->ListResults({}));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].result_id(), "r1");
  EXPECT_EQ(all[0].measurements(0).median_seconds(), 0.5);
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto ci, store->ListResults({"ci", "", 0}));
  ASSERT_EQ(ci.size(), 1u);
  MOETUNE_ASSERT_OK_AND_ASSIGN(int64_t n, store->CountResults({"", "c2", 0}));
  EXPECT_EQ(n, 1);
}

TEST(SqliteStoreTest, ListResultsLimitKeepsTheNewestInOrder) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(TempDbPath("limit.db")));
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(store->PutResult(Result(id, "ci", "c", "t"), std::nullopt).ok());
  }
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto last2, store->ListResults({"ci", "", 2}));
  ASSERT_EQ(last2.size(), 2u);
  EXPECT_EQ(last2[0].result_id(), "b");
  EXPECT_EQ(last2[1].result_id(), "c");
}

TEST(SqliteStoreTest, ResultAndTaskUpdateCommitTogether) {
  const std::string path = TempDbPath("tasks.db");
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(path));
  ASSERT_TRUE(store->CreateCampaign(Campaign("c1", 2)).ok());
  TaskUpdate done{"c1", "c1/t1", TaskState::kDone, 1, ""};
  ASSERT_TRUE(store->PutResult(Result("r1", "ci", "c1", "c1/t1"), done).ok());
  // An update of a task that does not exist rolls the result back too.
  TaskUpdate bad{"c1", "c1/t9", TaskState::kDone, 1, ""};
  EXPECT_THAT(store->PutResult(Result("r2", "ci", "c1", "c1/t9"), bad),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("c1/t9")));
  MOETUNE_ASSERT_OK_AND_ASSIGN(int64_t n, store->CountResults({}));
  EXPECT_EQ(n, 1);

  MOETUNE_ASSERT_OK_AND_ASSIGN(auto campaigns, store->LoadCampaigns());
  ASSERT_EQ(campaigns.size(), 1u);
  ASSERT_EQ(campaigns[0].tasks.size(), 2u);
  EXPECT_EQ(campaigns[0].tasks[0].state, TaskState::kPending);
  EXPECT_EQ(campaigns[0].tasks[1].state, TaskState::kDone);
  EXPECT_EQ(campaigns[0].tasks[1].attempts, 1);
  EXPECT_EQ(campaigns[0].profile, v1::CAMPAIGN_PROFILE_QUICK);
  ASSERT_TRUE(store->SetCampaignState("c1", v1::CAMPAIGN_STATE_SUCCEEDED).ok());
  EXPECT_THAT(store->SetCampaignState("nope", v1::CAMPAIGN_STATE_SUCCEEDED),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

TEST(SqliteStoreTest, JobsAndConfigsSurviveReopen) {
  const std::string path = TempDbPath("jobs.db");
  {
    MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(path));
    v1::Job job;
    job.set_job_id("j1");
    job.set_state(v1::JOB_STATE_QUEUED);
    ASSERT_TRUE(store->PutJob(job).ok());
    job.set_state(v1::JOB_STATE_SUCCEEDED);
    job.add_plans()->set_rank(1);
    JobConfigs configs;
    configs[{1, v1::CONFIG_FORMAT_JSON}] = "{\"tp\": 1}";
    ASSERT_TRUE(store->FinishJob(job, configs).ok());
  }
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(path));
  MOETUNE_ASSERT_OK_AND_ASSIGN(v1::Job job, store->GetJob("j1"));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.plans_size(), 1);
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string json, store->GetJobConfig("j1", 1, v1::CONFIG_FORMAT_JSON));
  EXPECT_EQ(json, "{\"tp\": 1}");
  EXPECT_THAT(store->GetJobConfig("j1", 1, v1::CONFIG_FORMAT_MAXTEXT),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("CONFIG_FORMAT_MAXTEXT")));
  EXPECT_THAT(store->GetJob("j2"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("'j2'")));
}

TEST(SqliteStoreTest, AgentsAreUpserted) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto store, SqliteStore::Open(TempDbPath("agents.db")));
  v1::AgentInfo a;
  a.set_agent_id("ci/n1");
  a.set_cluster("ci");
  ASSERT_TRUE(store->PutAgent(a).ok());
  a.set_node("n1");
  ASSERT_TRUE(store->PutAgent(a).ok());
  MOETUNE_ASSERT_OK_AND_ASSIGN(auto agents, store->ListAgents());
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].node(), "n1");
}

TEST(SqliteStoreTest, OpenFailureIsUnavailableNamingThePath) {
  EXPECT_THAT(SqliteStore::Open("/nonexistent-dir/x.db"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("/nonexistent-dir/x.db")));
}

}  // namespace
}  // namespace moetune::server
