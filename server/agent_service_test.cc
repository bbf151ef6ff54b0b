// AgentService over a real gRPC server on 127.0.0.1 (port picked by the OS),
// backed by a SQLite store in TEST_TMPDIR.
#include "server/agent_service.h"

#include <cmath>
#include <limits>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;

class AgentServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(TempDbPath("svc.db"));
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    registry_ = std::make_unique<AgentRegistry>(store_.get(), [] { return absl::Now(); },
                                                AgentRegistry::Options{});
    scheduler_ = std::make_unique<Scheduler>(
        store_.get(), &rendezvous_, [] { return absl::Now(); },
        [this](const std::string& c) {
          std::vector<std::string> ids;
          for (const auto& a : registry_->Live(c)) ids.push_back(a.agent_id());
          return ids;
        },
        Scheduler::Options{}, "e1");
    service_ = std::make_unique<AgentServiceImpl>(registry_.get(), scheduler_.get(), &rendezvous_,
                                                  AgentServiceImpl::Options{});
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = v1::AgentService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  }

  v1::RegisterResponse Register(const std::string& node) {
    v1::RegisterRequest req;
    req.mutable_agent()->set_node(node);
    req.mutable_agent()->set_cluster("ci");
    req.mutable_agent()->add_devices()->set_name("cpu");
    v1::RegisterResponse resp;
    EXPECT_TRUE(stub_->Register(Ctx().get(), req, &resp).ok());
    return resp;
  }

  std::unique_ptr<SqliteStore> store_;
  RendezvousTable rendezvous_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<AgentServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
};

TEST_F(AgentServiceTest, TaskFlowAcknowledgesOnceStoredAndResendsAreDuplicates) {
  v1::RegisterResponse reg = Register("n1");
  EXPECT_EQ(reg.agent_id(), "ci/n1");
  ASSERT_TRUE(scheduler_->StartCampaign("ci", v1::CAMPAIGN_PROFILE_QUICK, registry_->Live("ci")).ok());
  v1::PullTaskRequest pull;
  pull.set_agent_id(reg.agent_id());
  pull.set_session_id(reg.session_id());
  pull.set_wait_ms(1000);
  v1::PullTaskResponse task;
  ASSERT_TRUE(stub_->PullTask(Ctx().get(), pull, &task).ok());
  ASSERT_TRUE(task.has_task());
  EXPECT_EQ(task.task().pinned_agent_id(), "ci/n1");

  v1::ReportResultRequest report;
  report.set_agent_id(reg.agent_id());
  report.set_session_id(reg.session_id());
  v1::ProbeResult* r = report.mutable_result();
  r->set_result_id("ci/n1/1");
  r->set_task_id(task.task().task_id());
  r->set_campaign_id(task.task().campaign_id());
  r->set_attempt(task.task().attempt());
  r->mutable_provenance()->set_cluster("spoofed");  // the server's view wins
  r->add_measurements()->add_samples_seconds(0.5);
  v1::ReportResultResponse ack;
  ASSERT_TRUE(stub_->ReportResult(Ctx().get(), report, &ack).ok());
  EXPECT_FALSE(ack.duplicate());
  ASSERT_TRUE(stub_->ReportResult(Ctx().get(), report, &ack).ok());
  EXPECT_TRUE(ack.duplicate());
  auto stored = store_->ListResults({"ci", "", 0});
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].provenance().agent_id(), "ci/n1");
}

TEST_F(AgentServiceTest, NonFiniteTimingIsRefusedNamingTheField) {
  v1::RegisterResponse reg = Register("n1");
  v1::ReportResultRequest report;
  report.set_agent_id(reg.agent_id());
  report.set_session_id(reg.session_id());
  report.mutable_result()->set_result_id("x");
  report.mutable_result()->add_measurements()->add_samples_seconds(
      std::numeric_limits<double>::quiet_NaN());
  v1::ReportResultResponse ack;
  grpc::Status s = stub_->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("result.measurements[0].samples_seconds[0]"));
  EXPECT_EQ(*store_->CountResults({}), 0);
}

TEST_F(AgentServiceTest, BatchReportStoresTheGoodResultsAndRefusesTheBadOneAlone) {
  v1::RegisterResponse reg = Register("n1");
  v1::ReportResultsRequest batch;
  batch.set_agent_id(reg.agent_id());
  batch.set_session_id(reg.session_id());
  for (const char* id : {"b1", "bad", "b2", "b1"}) {
    v1::ProbeResult* r = batch.add_results();
    r->set_result_id(id);
    r->mutable_provenance()->set_cluster("spoofed");
    r->add_measurements()->add_samples_seconds(0.5);
  }
  batch.mutable_results(1)->mutable_measurements(0)->set_median_seconds(-1);
  v1::ReportResultsResponse resp;
  grpc::Status s = stub_->ReportResults(Ctx().get(), batch, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.outcomes_size(), 4);
  EXPECT_EQ(resp.outcomes(0).result_id(), "b1");
  EXPECT_EQ(resp.outcomes(0).code(), 0);
  EXPECT_FALSE(resp.outcomes(0).duplicate());
  EXPECT_EQ(resp.outcomes(1).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(resp.outcomes(1).message(), HasSubstr("result.measurements[0].median_seconds"));
  EXPECT_EQ(resp.outcomes(2).code(), 0);
  // The same id twice in one call: stored once, the second is a duplicate.
  EXPECT_EQ(resp.outcomes(3).code(), 0);
  EXPECT_TRUE(resp.outcomes(3).duplicate());
  auto stored = store_->ListResults({});
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 2u);
  for (const auto& r : *stored) EXPECT_EQ(r.provenance().cluster(), "ci");  // server's view
  // Re-sending the whole batch acknowledges nothing new.
  ASSERT_TRUE(stub_->ReportResults(Ctx().get(), batch, &resp).ok());
  EXPECT_TRUE(resp.outcomes(0).duplicate());
  EXPECT_TRUE(resp.outcomes(2).duplicate());
  EXPECT_EQ(*store_->CountResults({}), 2);
}

TEST_F(AgentServiceTest, UnknownSessionMustRegisterAgain) {
  v1::HeartbeatRequest hb;
  hb.set_agent_id("ci/n1");
  hb.set_session_id("stale");
  v1::HeartbeatResponse resp;
  grpc::Status s = stub_->Heartbeat(Ctx().get(), hb, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("register again"));
}

TEST_F(AgentServiceTest, RendezvousOutsideAScheduledAttemptIsAborted) {
  v1::RendezvousGetRequest get;
  get.set_key("no-such-task/e1/a1/rank0");
  get.set_wait_ms(100);
  v1::RendezvousGetResponse resp;
  grpc::Status s = stub_->RendezvousGet(Ctx().get(), get, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED);
  rendezvous_.Open("t/e1/a1/");
  v1::RendezvousSetRequest set;
  set.set_key("t/e1/a1/rank0");
  set.set_value("10.0.0.1:4000");
  v1::RendezvousSetResponse sresp;
  ASSERT_TRUE(stub_->RendezvousSet(Ctx().get(), set, &sresp).ok());
  get.set_key("t/e1/a1/rank0");
  ASSERT_TRUE(stub_->RendezvousGet(Ctx().get(), get, &resp).ok());
  EXPECT_EQ(resp.value(), "10.0.0.1:4000");
}

}  // namespace
}  // namespace moetune::server
