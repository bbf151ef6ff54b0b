#include "server/agent_registry.h"

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
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::AgentInfo Info(const std::string& node) {
  v1::AgentInfo a;
  a.set_node(node);
  a.set_cluster("ci");
  return a;
}

TEST(AgentRegistryTest, HeartbeatsKeepAnAgentLiveUntilTheTimeout) {
  auto store = SqliteStore::Open(TempDbPath("reg.db"));
  ASSERT_TRUE(store.ok());
  FakeClock clock;
  AgentRegistry reg(store->get(), [&] { return clock.Now(); },
                    {absl::Seconds(10), absl::Seconds(2)});
  auto s = reg.Register(Info("n1"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->agent_id, "ci/n1");
  clock.Advance(absl::Seconds(9));
  ASSERT_TRUE(reg.Touch("ci/n1", s->session_id).ok());
  clock.Advance(absl::Seconds(9));
  EXPECT_TRUE(reg.ExpireLost().empty());  // 9 s since the last heartbeat
  clock.Advance(absl::Seconds(2));
  EXPECT_THAT(reg.ExpireLost(), ElementsAre("ci/n1"));  // 11 s > 10 s
  EXPECT_TRUE(reg.ExpireLost().empty());               // reported once
  EXPECT_FALSE(reg.IsLive("ci/n1"));
  // The lost session is gone: the agent must register again.
  EXPECT_THAT(reg.Touch("ci/n1", s->session_id),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("register again")));
  auto s2 = reg.Register(Info("n1"));
  ASSERT_TRUE(s2.ok());
  EXPECT_NE(s2->session_id, s->session_id);
  EXPECT_TRUE(reg.IsLive("ci/n1"));
}

TEST(AgentRegistryTest, ASecondLiveProcessUnderOneAgentIdIsRefusedUntilTheFirstIsLost) {
  auto store = SqliteStore::Open(TempDbPath("reg.db"));
  ASSERT_TRUE(store.ok());
  FakeClock clock;
  AgentRegistry reg(store->get(), [&] { return clock.Now(); },
                    {absl::Seconds(10), absl::Seconds(2)});
  v1::AgentInfo a = Info("n1"), b = Info("n1");
  a.set_instance_id("aaaa");
  b.set_instance_id("bbbb");
  auto sa = reg.Register(a);
  ASSERT_TRUE(sa.ok()) << sa.status();
  clock.Advance(absl::Seconds(3));
  EXPECT_THAT(reg.Register(b),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("'ci/n1' is live as another process (instance aaaa, last "
                                       "seen 3s ago)"),
                             HasSubstr("its own --node name"))));
  // The refusal changed nothing: a's session holds, and the store still
  // describes a.
  EXPECT_TRUE(reg.Touch("ci/n1", sa->session_id).ok());
  auto stored = (*store)->ListAgents();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].instance_id(), "aaaa");
  // The same process registers again whenever it likes (a new session).
  auto sa2 = reg.Register(a);
  ASSERT_TRUE(sa2.ok()) << sa2.status();
  EXPECT_NE(sa2->session_id, sa->session_id);
  // Once a's session has gone quiet past the liveness timeout, b may take
  // the id (a restarted agent), even before ExpireLost ran.
  clock.Advance(absl::Seconds(11));
  auto sb = reg.Register(b);
  ASSERT_TRUE(sb.ok()) << sb.status();
  EXPECT_THAT(reg.Touch("ci/n1", sa2->session_id),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("register again")));
  // An agent that sends no instance id is not checked.
  EXPECT_TRUE(reg.Register(Info("n1")).ok());
}

TEST(AgentRegistryTest, AgentsFromBeforeARestartAreListedAsLost) {
  const std::string path = TempDbPath("reg.db");
  FakeClock clock;
  {
    auto store = SqliteStore::Open(path);
    AgentRegistry reg(store->get(), [&] { return clock.Now(); }, {});
    ASSERT_TRUE(reg.Register(Info("n1")).ok());
  }
  auto store = SqliteStore::Open(path);
  AgentRegistry reg(store->get(), [&] { return clock.Now(); }, {});
  ASSERT_TRUE(reg.Recover().ok());
  auto agents = reg.List("ci");
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].state(), v1::AGENT_STATE_LOST);
  EXPECT_TRUE(reg.Live("ci").empty());
}

TEST(AgentRegistryTest, BadNamesAreRejectedNamingTheField) {
  auto store = SqliteStore::Open(TempDbPath("reg.db"));
  FakeClock clock;
  AgentRegistry reg(store->get(), [&] { return clock.Now(); }, {});
  EXPECT_THAT(reg.Register(Info("")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("agent.node")));
  v1::AgentInfo bad = Info("n1");
  bad.set_cluster("a/b");
  EXPECT_THAT(reg.Register(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("agent.cluster")));
}

}  // namespace
}  // namespace moetune::server
