// A result the server will never take does not block the agent's delivery:
// the real moetune-server (small limits: 1,000 samples per measurement,
// 256 KiB per message) and a real moetune-agent (CPU backend) on 127.0.0.1.
// The agent starts with four results left in its spool, in this order:
//   ok-1                a normal result;
//   too-many-samples    1,001 samples in one measurement: the server refuses
//                       it with RESOURCE_EXHAUSTED and a per-message Refusal;
//   too-big             ~540 KB serialized, within every count limit but over
//                       the 256 KiB the server advertised at registration;
//   ok-2                a normal result behind both.
// Both oversized results must end in the dead-letter file (whole, with the
// reason naming the limit), never in the store; ok-1 and ok-2 are stored and
// acknowledged; the spool empties; and a calibration campaign started
// afterwards completes (later results are delivered too). An agent that
// re-sends refused results forever never gets past too-many-samples.
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/spool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/planner_service.grpc.pb.h"
#include "tests/internal/process.h"

namespace moetune {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::testing::Process;
using ::moetune::testing::ReadFile;
using ::moetune::testing::Runfile;
using ::moetune::testing::Tail;
using ::moetune::testing::TmpDir;
using ::moetune::testing::WaitFor;
using ::testing::HasSubstr;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

v1::ProbeResult Result(const std::string& id, int measurements, int samples) {
  v1::ProbeResult r;
  r.set_result_id(id);
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  for (int i = 0; i < measurements; ++i) {
    v1::Measurement* m = r.add_measurements();
    m->set_name(absl::StrCat("gemm_", i));
    for (int j = 0; j < samples; ++j) m->add_samples_seconds(1e-3 + 1e-9 * j);
    m->set_min_seconds(1e-3);
    m->set_median_seconds(1e-3);
    m->set_max_seconds(2e-3);
  }
  return r;
}

TEST(AgentDeadLetterTest, OversizedResultsAreDeadLetteredAndTheRestIsDelivered) {
  const std::string dir = TmpDir() + "/dead_letter";
  ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'").c_str()), 0);
  const std::string spool_path = dir + "/n1.spool", acks = dir + "/n1.acks";
  const std::vector<std::string> order = {"ok-1", "too-many-samples", "too-big", "ok-2"};
  {
    auto spool = agent::ResultSpool::Open(spool_path);
    ASSERT_TRUE(spool.ok()) << spool.status();
    ASSERT_TRUE((*spool)->Add(Result("ok-1", 2, 10)).ok());
    ASSERT_TRUE((*spool)->Add(Result("too-many-samples", 1, 1001)).ok());
    v1::ProbeResult big = Result("too-big", 300, 200);  // 60,000 samples x 9 bytes
    ASSERT_GT(big.ByteSizeLong(), 256u << 10);
    ASSERT_TRUE((*spool)->Add(big).ok());
    ASSERT_TRUE((*spool)->Add(Result("ok-2", 2, 10)).ok());
  }

  const std::string port_file = dir + "/port";
  Process server({Runfile("server/moetune-server"), "--listen=127.0.0.1:0", "--db=" + dir + "/m.db",
                  "--port_file=" + port_file, "--heartbeat_ms=200",
                  "--max_samples_per_measurement=1000", "--max_message_bytes=262144"},
                 dir + "/server.log");
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(port_file).empty(); }, absl::Seconds(30)))
      << Tail(server.log());
  const std::string address = absl::StrCat("127.0.0.1:", std::stoi(ReadFile(port_file)));
  auto planner = v1::PlannerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  Process agent({Runfile("agent/moetune-agent"), "--server=" + address, "--cluster=ci",
                 "--node=n1", "--backend=cpu", "--spool=" + spool_path, "--ack_log=" + acks,
                 "--pull_wait_ms=300", "--max_backoff_ms=200", "--rpc_timeout_ms=3000"},
                dir + "/agent.log");
  auto logs = [&] {
    return absl::StrCat("---- server\n", Tail(server.log()), "\n---- agent\n", Tail(agent.log()));
  };

  // ok-2, behind both refused results, is acknowledged; the spool empties.
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ReadFile(acks), "ok-2\n"); },
                      absl::Seconds(30)))
      << "delivery is blocked behind a refused result\n" << logs();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = agent::ResultSpool::ReadPending(spool_path);  // the agent holds the spool
        return s.ok() && s->empty();
      },
      absl::Seconds(30)))
      << logs();
  const std::string acked = ReadFile(acks);
  EXPECT_THAT(acked, HasSubstr("ok-1\n"));
  EXPECT_THAT(acked, ::testing::Not(HasSubstr("too-")));

  // Both refused results are in the dead-letter file, whole, with the reason.
  auto dead = agent::ResultSpool::ReadDeadLetters(spool_path + ".dead");
  ASSERT_TRUE(dead.ok()) << dead.status();
  ASSERT_EQ(dead->size(), 2u) << logs();
  EXPECT_EQ((*dead)[0].result.result_id(), "too-many-samples");
  EXPECT_EQ((*dead)[0].result.measurements(0).samples_seconds_size(), 1001);
  EXPECT_THAT((*dead)[0].reason, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT((*dead)[0].reason, HasSubstr("max_samples_per_measurement = 1000"));
  EXPECT_EQ((*dead)[1].result.result_id(), "too-big");
  EXPECT_EQ((*dead)[1].result.measurements_size(), 300);
  EXPECT_THAT((*dead)[1].reason, HasSubstr("the server accepts at most 262144 bytes"));
  // ... and logged. The agent logs after the spool has let go of a result,
  // so the line may still be on its way: wait for it.
  std::string agent_log;
  EXPECT_TRUE(WaitFor(
      [&] {
        agent_log = ReadFile(agent.log());
        return absl::StrContains(agent_log, "too-big for good");
      },
      absl::Seconds(30)));
  EXPECT_THAT(agent_log, HasSubstr("server refused result too-many-samples for good"));
  EXPECT_THAT(agent_log, HasSubstr("server refused result too-big for good"));
  EXPECT_THAT(agent_log, HasSubstr("moved to dead-letter file " + spool_path + ".dead"));

  // Later results are delivered: a quick campaign on this agent completes.
  v1::StartCalibrationRequest start;
  start.set_cluster("ci");
  start.set_profile(v1::CAMPAIGN_PROFILE_QUICK);
  v1::StartCalibrationResponse started;
  grpc::Status s = planner->StartCalibration(Ctx().get(), start, &started);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::GetCalibrationResponse c;
  ASSERT_TRUE(WaitFor(
      [&] {
        v1::GetCalibrationRequest get;
        get.set_campaign_id(started.campaign().campaign_id());
        return planner->GetCalibration(Ctx().get(), get, &c).ok() &&
               c.campaign().state() != v1::CAMPAIGN_STATE_RUNNING;
      },
      absl::Seconds(120)))
      << logs();
  EXPECT_EQ(c.campaign().state(), v1::CAMPAIGN_STATE_SUCCEEDED) << logs();

  // The store: the two good leftovers and the campaign's results, never a
  // refused one.
  v1::ListMeasurementsRequest list;
  list.set_cluster("ci");
  v1::ListMeasurementsResponse stored;
  s = planner->ListMeasurements(Ctx().get(), list, &stored);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::set<std::string> ids;
  for (const auto& r : stored.results()) ids.insert(r.result_id());
  EXPECT_EQ(ids.count("ok-1"), 1u);
  EXPECT_EQ(ids.count("ok-2"), 1u);
  EXPECT_EQ(ids.count("too-many-samples"), 0u);
  EXPECT_EQ(ids.count("too-big"), 0u);
  EXPECT_EQ(static_cast<int>(ids.size()), 2 + c.campaign().tasks_total());
}

}  // namespace
}  // namespace moetune
