// The server's security and limits over real gRPC on 127.0.0.1: the guarded
// services (server/security.h) in front of the real AgentService and
// PlannerService implementations, a real SQLite store, clients built with
// security (as moetune-agent and the CLI build theirs). Certificates
// are made with openssl at test time.
#include "server/security.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/agent_service.h"
#include "server/internal/test_util.h"
#include "server/job_runner.h"
#include "server/planner_service.h"
#include "server/sqlite_store.h"
#include "security/client_credentials.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::moetune::security::ClientSecurityOptions;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;
using ::testing::Not;

// The Refusal carried in a gRPC status's error details (server/limits.h);
// nullopt when there is none.
std::optional<v1::Refusal> RefusalIn(const grpc::Status& s) {
  v1::RpcStatus details;
  if (s.error_details().empty() || !details.ParseFromString(s.error_details())) {
    return std::nullopt;
  }
  for (const google::protobuf::Any& any : details.details()) {
    v1::Refusal r;
    if (any.type_url() == "type.googleapis.com/moetune.v1.Refusal" &&
        r.ParseFromString(any.value())) {
      return r;
    }
  }
  return std::nullopt;
}

constexpr char kAgentToken[] = "agent-3f9a0c2b7d1e4f5a6b7c8d9e";
constexpr char kUserToken[] = "user-0a1b2c3d4e5f60718293a4b5";

std::string Tmp() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = Tmp() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

void Sh(const std::string& cmd) {
  ASSERT_EQ(std::system(absl::StrCat("cd '", Tmp(), "' && (", cmd, ") >openssl.log 2>&1").c_str()), 0)
      << cmd;
}

// A CA, a server certificate for localhost/127.0.0.1, a client certificate
// from the CA, and a client certificate from an unrelated CA.
void MakeCertificates() {
  static bool made = false;
  if (made) return;
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  ASSERT_NO_FATAL_FAILURE(Sh(absl::StrCat("openssl req -x509 ", ec,
                                          " -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca")));
  ASSERT_NO_FATAL_FAILURE(Sh(absl::StrCat(
      "openssl req -x509 ", ec, " -keyout rogue-ca.key -out rogue-ca.crt -days 2 -subj /CN=rogue")));
  Write("server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  Write("client.ext", "extendedKeyUsage=clientAuth\n");
  for (auto [name, ca, ext] : {std::tuple<const char*, const char*, const char*>{"server", "ca", "server.ext"},
                               {"client", "ca", "client.ext"},
                               {"rogue-client", "rogue-ca", "client.ext"}}) {
    ASSERT_NO_FATAL_FAILURE(Sh(absl::StrCat(
        "openssl req ", ec, " -keyout ", name, ".key -out ", name, ".csr -subj /CN=", name,
        " && openssl x509 -req -in ", name, ".csr -CA ", ca, ".crt -CAkey ", ca,
        ".key -CAcreateserial -days 2 -out ", name, ".crt -extfile ", ext)));
  }
  made = true;
}

// Blocks plan jobs until released, so that they stay in flight.
struct PlanGate {
  absl::Notification release;
  absl::StatusOr<PlanOutput> Plan(const v1::SubmitPlanRequest&, const ProgressFn&) {
    release.WaitForNotification();
    PlanOutput out;
    out.plans.emplace_back().set_rank(1);
    out.configs[{1, v1::CONFIG_FORMAT_JSON}] = "{}";
    out.method = "test";
    return out;
  }
};

class SecureServer {
 public:
  explicit SecureServer(SecurityConfig config) {
    auto store = SqliteStore::Open(TempDbPath("security.db"));
    EXPECT_TRUE(store.ok()) << store.status();
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
    jobs_ = std::make_unique<JobRunner>(
        store_.get(), [] { return absl::Now(); },
        [](const v1::SubmitPlanRequest& r) {
          return r.shape().gpus() > 0 ? absl::OkStatus()
                                      : absl::InvalidArgumentError("shape.gpus must be > 0");
        },
        [this](const v1::SubmitPlanRequest& r, const ProgressFn& p) { return gate_.Plan(r, p); }, 2);
    agent_service_ = std::make_unique<AgentServiceImpl>(registry_.get(), scheduler_.get(),
                                                        &rendezvous_, AgentServiceImpl::Options{});
    planner_service_ = std::make_unique<PlannerServiceImpl>(
        store_.get(), registry_.get(), scheduler_.get(), jobs_.get(),
        [](const v1::PredictRequest&) -> absl::StatusOr<v1::Prediction> { return v1::Prediction(); },
        [](const std::string&) { return std::string("{}"); },
        [](const std::string&) { return std::map<std::string, std::vector<v1::StragglerFlag>>(); });
    config.listen = "127.0.0.1:0";
    auto security = ServingSecurity::Create(config);
    EXPECT_TRUE(security.ok()) << security.status();
    security_ = std::move(*security);
    grpc::ServerBuilder b;
    b.AddListeningPort(config.listen, security_->credentials(), &port_);
    b.RegisterService(security_->Agent(agent_service_.get()));
    b.RegisterService(security_->Planner(planner_service_.get(), [this](const std::string& id) {
      auto j = jobs_->Get(id);
      return !j.ok() || JobRunner::Finished(*j);
    }));
    b.SetMaxReceiveMessageSize(security_->limits().max_message_bytes);
    server_ = b.BuildAndStart();
    EXPECT_GT(port_, 0);
  }
  ~SecureServer() {
    if (!gate_.release.HasBeenNotified()) gate_.release.Notify();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    jobs_.reset();
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  Store* store() { return store_.get(); }
  PlanGate& gate() { return gate_; }

 private:
  PlanGate gate_;
  std::unique_ptr<SqliteStore> store_;
  RendezvousTable rendezvous_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<JobRunner> jobs_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<PlannerServiceImpl> planner_service_;
  std::unique_ptr<ServingSecurity> security_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 10) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return c;
}

struct Clients {
  std::unique_ptr<v1::AgentService::Stub> agent;
  std::unique_ptr<v1::PlannerService::Stub> planner;
};

Clients Connect(const std::string& address, const ClientSecurityOptions& o) {
  auto ch = security::MakeChannel(address, o, grpc::ChannelArguments());
  EXPECT_TRUE(ch.ok()) << ch.status();
  return {v1::AgentService::NewStub(*ch), v1::PlannerService::NewStub(*ch)};
}

ClientSecurityOptions WithToken(const char* token) {
  ClientSecurityOptions o;
  o.token_file = Write(absl::StrCat("client-token-", std::hash<std::string>()(token)), absl::StrCat("# mine\n", token, "\n"));
  return o;
}

SecurityConfig TokenConfig() {
  SecurityConfig c;
  c.agent_token_file = Write("agents.tokens", absl::StrCat("node1 ", kAgentToken, "\n"));
  c.user_token_file = Write("users.tokens", absl::StrCat("alice ", kUserToken, "\n"));
  return c;
}

v1::RegisterRequest RegisterReq(const std::string& node) {
  v1::RegisterRequest req;
  req.mutable_agent()->set_node(node);
  req.mutable_agent()->set_cluster("ci");
  req.mutable_agent()->add_devices()->set_name("cpu");
  return req;
}

v1::SubmitPlanRequest PlanReq() {
  v1::SubmitPlanRequest req;
  req.mutable_cluster()->set_preset("h100-sxm");
  req.mutable_shape()->set_gpus(8);
  return req;
}

v1::ProbeResult Result(const std::string& id) {
  v1::ProbeResult r;
  r.set_result_id(id);
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  v1::Measurement* m = r.add_measurements();
  m->set_name("gemm");
  m->add_samples_seconds(1e-3);
  m->set_min_seconds(1e-3);
  m->set_median_seconds(1e-3);
  m->set_max_seconds(1e-3);
  return r;
}

TEST(SecurityTest, EveryRpcNeedsATokenOfTheRightRole) {
  SecureServer server(TokenConfig());
  Clients none = Connect(server.address(), {});
  Clients wrong = Connect(server.address(), WithToken("wrong-token-0123456789abcdef"));
  Clients agent = Connect(server.address(), WithToken(kAgentToken));
  Clients user = Connect(server.address(), WithToken(kUserToken));

  v1::RegisterResponse reg;
  grpc::Status s = none.agent->Register(Ctx().get(), RegisterReq("n1"), &reg);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("needs a bearer token"));
  v1::ListAgentsResponse agents;
  s = wrong.planner->ListAgents(Ctx().get(), {}, &agents);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("not valid"));

  // The agent token registers and reports, but cannot submit plans.
  ASSERT_TRUE(agent.agent->Register(Ctx().get(), RegisterReq("n1"), &reg).ok());
  v1::SubmitPlanResponse job;
  s = agent.planner->SubmitPlan(Ctx().get(), PlanReq(), &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("'node1' has role agent"));
  EXPECT_THAT(s.error_message(), Not(HasSubstr(kAgentToken)));
  s = agent.planner->ListAgents(Ctx().get(), {}, &agents);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // The user token lists and plans, but cannot report measurements.
  v1::ReportResultRequest report;
  report.set_agent_id(reg.agent_id());
  report.set_session_id(reg.session_id());
  *report.mutable_result() = Result("forged-1");
  v1::ReportResultResponse ack;
  s = user.agent->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("needs role agent"));
  s = none.agent->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto count = server.store()->CountResults({});
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 0) << "a result from a non-agent was stored";
  auto jobs = server.store()->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty()) << "a plan from a non-user was stored";

  ASSERT_TRUE(user.planner->ListAgents(Ctx().get(), {}, &agents).ok());
  EXPECT_EQ(agents.agents_size(), 1);
  ASSERT_TRUE(user.planner->SubmitPlan(Ctx().get(), PlanReq(), &job).ok());
  // And the agent's own report goes through.
  *report.mutable_result() = Result("ci/n1/real-1");
  s = agent.agent->ReportResult(Ctx().get(), report, &ack);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(*server.store()->CountResults({}), 1);
}

TEST(SecurityTest, WithoutTokensOnlyLoopbackUnlessInsecure) {
  for (const char* a : {"127.0.0.1:7070", "127.3.2.1:0", "[::1]:7070", "localhost:7070",
                        "LocalHost:1"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0:7070", "[::]:7070", "10.0.0.5:7070", "planner:7070", ":7070",
                        "128.0.0.1:1", "[::2]:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
  SecurityConfig open;
  open.listen = "0.0.0.0:0";
  EXPECT_THAT(ServingSecurity::Create(open),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("refusing to listen on 0.0.0.0:0")));
  open.insecure = true;
  auto insecure = ServingSecurity::Create(open);
  ASSERT_TRUE(insecure.ok());
  EXPECT_THAT((*insecure)->Describe(), HasSubstr("authentication OFF (--insecure)"));
  SecurityConfig tokens = TokenConfig();
  tokens.listen = "0.0.0.0:0";
  auto with_tokens = ServingSecurity::Create(tokens);
  ASSERT_TRUE(with_tokens.ok()) << with_tokens.status();
  EXPECT_THAT((*with_tokens)->Describe(), HasSubstr("authentication on (2 tokens)"));
  EXPECT_THAT((*with_tokens)->Describe(), Not(HasSubstr(kUserToken)));
  SecurityConfig loop;
  loop.listen = "127.0.0.1:0";
  auto local = ServingSecurity::Create(loop);
  ASSERT_TRUE(local.ok());
  EXPECT_THAT((*local)->Describe(), HasSubstr("loopback only"));
  SecurityConfig half = loop;
  half.tls_cert = "x.crt";
  EXPECT_THAT(ServingSecurity::Create(half),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_cert and --tls_key")));
}

TEST(SecurityTest, TlsAndMutualTlsForAgents) {
  ASSERT_NO_FATAL_FAILURE(MakeCertificates());
  SecurityConfig config = TokenConfig();
  config.tls_cert = Tmp() + "/server.crt";
  config.tls_key = Tmp() + "/server.key";
  config.tls_client_ca = Tmp() + "/ca.crt";
  SecureServer server(config);

  ClientSecurityOptions tls_agent = WithToken(kAgentToken);
  tls_agent.tls_ca = Tmp() + "/ca.crt";
  tls_agent.tls_server_name = "localhost";
  ClientSecurityOptions mtls_agent = tls_agent;
  mtls_agent.tls_cert = Tmp() + "/client.crt";
  mtls_agent.tls_key = Tmp() + "/client.key";
  ClientSecurityOptions rogue_agent = tls_agent;
  rogue_agent.tls_cert = Tmp() + "/rogue-client.crt";
  rogue_agent.tls_key = Tmp() + "/rogue-client.key";
  ClientSecurityOptions tls_user = WithToken(kUserToken);
  tls_user.tls_ca = Tmp() + "/ca.crt";
  tls_user.tls_server_name = "localhost";

  v1::RegisterResponse reg;
  // Plaintext to a TLS port: no connection.
  grpc::Status s = Connect(server.address(), WithToken(kAgentToken))
                       .agent->Register(Ctx(3).get(), RegisterReq("n1"), &reg);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  // TLS but no client certificate: agents are refused, users are served.
  s = Connect(server.address(), tls_agent).agent->Register(Ctx().get(), RegisterReq("n1"), &reg);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("client certificate"));
  v1::ListAgentsResponse agents;
  s = Connect(server.address(), tls_user).planner->ListAgents(Ctx().get(), {}, &agents);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // A certificate from another CA fails the handshake.
  s = Connect(server.address(), rogue_agent).agent->Register(Ctx(3).get(), RegisterReq("n1"), &reg);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  // The CA's client certificate and the agent token: served.
  s = Connect(server.address(), mtls_agent).agent->Register(Ctx().get(), RegisterReq("n1"), &reg);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reg.agent_id(), "ci/n1");
  // Client certificate without a token is still not enough.
  ClientSecurityOptions cert_only = mtls_agent;
  cert_only.token_file.clear();
  s = Connect(server.address(), cert_only).agent->Register(Ctx().get(), RegisterReq("n2"), &reg);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
}

TEST(SecurityTest, LimitsAnswerResourceExhaustedAndServingGoesOn) {
  SecurityConfig config = TokenConfig();
  config.limits.max_message_bytes = 256 << 10;
  config.limits.max_samples_per_measurement = 1000;
  config.limits.max_concurrent_calls_per_agent = 2;
  config.limits.max_jobs_in_flight_per_user = 1;
  // A second user to show that one user's limit does not hold back another.
  config.user_token_file = Write(
      "users2.tokens", absl::StrCat("alice ", kUserToken, "\nbob bob-token-77aa88bb99cc00dd\n"));
  SecureServer server(config);
  Clients agent = Connect(server.address(), WithToken(kAgentToken));
  Clients alice = Connect(server.address(), WithToken(kUserToken));
  Clients bob = Connect(server.address(), WithToken("bob-token-77aa88bb99cc00dd"));

  v1::RegisterResponse reg, reg2;
  ASSERT_TRUE(agent.agent->Register(Ctx().get(), RegisterReq("n1"), &reg).ok());
  ASSERT_TRUE(agent.agent->Register(Ctx().get(), RegisterReq("n2"), &reg2).ok());
  // Registration tells the agent the request limits.
  EXPECT_EQ(reg.max_message_bytes(), 256 << 10);
  EXPECT_EQ(reg.max_results_per_report(), 1024);
  v1::ReportResultRequest report;
  report.set_agent_id(reg.agent_id());
  report.set_session_id(reg.session_id());
  v1::ReportResultResponse ack;

  // Message size: gRPC refuses before any handler runs.
  *report.mutable_result() = Result("big");
  report.mutable_result()->set_params_json(std::string(300 << 10, 'x'));
  grpc::Status s = agent.agent->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // ... so without a Refusal: the agent compares its request with the
  // advertised max_message_bytes instead.
  EXPECT_EQ(RefusalIn(s), std::nullopt);
  EXPECT_GT(static_cast<int64_t>(report.ByteSizeLong()), reg.max_message_bytes());

  // Samples per measurement: a per-message limit, never accepted as is.
  *report.mutable_result() = Result("many-samples");
  for (int i = 0; i < 1000; ++i) report.mutable_result()->mutable_measurements(0)->add_samples_seconds(1e-3);
  s = agent.agent->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("samples_seconds has 1001 entries, limit 1000"));
  std::optional<v1::Refusal> why = RefusalIn(s);
  ASSERT_TRUE(why.has_value()) << "no Refusal detail";
  EXPECT_EQ(why->scope(), v1::Refusal::REFUSAL_SCOPE_MESSAGE);
  EXPECT_EQ(why->limit(), "max_samples_per_measurement");
  EXPECT_EQ(why->limit_value(), 1000);
  EXPECT_EQ(why->actual(), 1001);

  // The same in a batch: the refused result gets its own outcome, the good
  // one is stored.
  v1::ReportResultsRequest batch;
  batch.set_agent_id(reg.agent_id());
  batch.set_session_id(reg.session_id());
  *batch.add_results() = report.result();
  *batch.add_results() = Result("good-in-batch");
  v1::ReportResultsResponse outcomes;
  s = agent.agent->ReportResults(Ctx().get(), batch, &outcomes);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(outcomes.outcomes_size(), 2);
  EXPECT_EQ(outcomes.outcomes(0).result_id(), "many-samples");
  EXPECT_EQ(outcomes.outcomes(0).code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_EQ(outcomes.outcomes(0).refusal().scope(), v1::Refusal::REFUSAL_SCOPE_MESSAGE);
  EXPECT_EQ(outcomes.outcomes(1).result_id(), "good-in-batch");
  EXPECT_EQ(outcomes.outcomes(1).code(), 0) << outcomes.outcomes(1).message();
  EXPECT_FALSE(outcomes.outcomes(1).duplicate());
  EXPECT_EQ(*server.store()->CountResults({}), 1);
  // Too many results in one call: the whole call is refused for good.
  v1::ReportResultsRequest huge = batch;
  huge.clear_results();
  for (int i = 0; i < 1025; ++i) *huge.add_results() = Result(absl::StrCat("h", i));
  s = agent.agent->ReportResults(Ctx().get(), huge, &outcomes);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  ASSERT_TRUE(RefusalIn(s).has_value());
  EXPECT_EQ(RefusalIn(s)->limit(), "max_results_per_report");

  // Hostile values: INVALID_ARGUMENT naming the field.
  *report.mutable_result() = Result("nan");
  report.mutable_result()->mutable_measurements(0)->set_median_seconds(std::nan(""));
  s = agent.agent->ReportResult(Ctx().get(), report, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("result.measurements[0].median_seconds"));
  EXPECT_EQ(*server.store()->CountResults({}), 1) << "a refused result was stored";

  // Concurrent calls per agent: two long polls in flight, the third is refused.
  std::atomic<int> polls_done{0};
  std::vector<std::thread> polls;
  for (int i = 0; i < 2; ++i) {
    polls.emplace_back([&] {
      v1::PullTaskRequest pull;
      pull.set_agent_id(reg.agent_id());
      pull.set_session_id(reg.session_id());
      pull.set_wait_ms(3000);
      v1::PullTaskResponse task;
      agent.agent->PullTask(Ctx().get(), pull, &task);
      ++polls_done;
    });
  }
  v1::HeartbeatRequest hb;
  hb.set_agent_id(reg.agent_id());
  hb.set_session_id(reg.session_id());
  v1::HeartbeatResponse hb_resp;
  grpc::Status third;
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (absl::Now() < deadline) {
    third = agent.agent->Heartbeat(Ctx().get(), hb, &hb_resp);
    if (third.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(polls_done.load(), 0) << "long polls ended before the check";
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_THAT(third.error_message(), HasSubstr("limit of concurrent calls per agent is 2"));
  // A caller limit: the same call is accepted later.
  ASSERT_TRUE(RefusalIn(third).has_value());
  EXPECT_EQ(RefusalIn(third)->scope(), v1::Refusal::REFUSAL_SCOPE_CALLER);
  // Another agent is served meanwhile.
  hb.set_agent_id(reg2.agent_id());
  hb.set_session_id(reg2.session_id());
  s = agent.agent->Heartbeat(Ctx().get(), hb, &hb_resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  for (auto& t : polls) t.join();

  // Plan jobs per user in flight.
  v1::SubmitPlanResponse job1, job2;
  // A refused submission (bad spec) does not use up the quota.
  v1::SubmitPlanRequest bad = PlanReq();
  bad.mutable_shape()->set_gpus(0);
  s = alice.planner->SubmitPlan(Ctx().get(), bad, &job1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  ASSERT_TRUE(alice.planner->SubmitPlan(Ctx().get(), PlanReq(), &job1).ok());
  s = alice.planner->SubmitPlan(Ctx().get(), PlanReq(), &job2);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("user 'alice' has 1 plan jobs queued or running"));
  ASSERT_TRUE(RefusalIn(s).has_value());
  EXPECT_EQ(RefusalIn(s)->scope(), v1::Refusal::REFUSAL_SCOPE_CALLER);
  s = bob.planner->SubmitPlan(Ctx().get(), PlanReq(), &job2);
  EXPECT_TRUE(s.ok()) << s.error_message();
  server.gate().release.Notify();
  const absl::Time until = absl::Now() + absl::Seconds(10);
  v1::Job j;
  do {
    v1::GetJobRequest get;
    get.set_job_id(job1.job_id());
    ASSERT_TRUE(alice.planner->GetJob(Ctx().get(), get, &j).ok());
    if (j.state() != v1::JOB_STATE_SUCCEEDED) absl::SleepFor(absl::Milliseconds(20));
  } while (j.state() != v1::JOB_STATE_SUCCEEDED && absl::Now() < until);
  ASSERT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
  s = alice.planner->SubmitPlan(Ctx().get(), PlanReq(), &job2);
  EXPECT_TRUE(s.ok()) << "a finished job still counted: " << s.error_message();
}

}  // namespace
}  // namespace moetune::server
