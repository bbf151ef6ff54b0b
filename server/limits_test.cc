#include "server/limits.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::server {
namespace {

using ::testing::HasSubstr;

TEST(ConcurrencyLimiterTest, LeasesCountPerKeyAndFreeOnDestruction) {
  ConcurrencyLimiter lim(2, "concurrent calls per agent");
  auto a1 = lim.Acquire("a");
  auto a2 = lim.Acquire("a");
  ASSERT_TRUE(a1.ok());
  ASSERT_TRUE(a2.ok());
  auto a3 = lim.Acquire("a");
  EXPECT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(a3.status().message(), HasSubstr("limit of concurrent calls per agent is 2"));
  // A caller limit: retry later (not a property of the request).
  std::optional<moetune::v1::Refusal> why = RefusalOf(a3.status());
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->scope(), moetune::v1::Refusal::REFUSAL_SCOPE_CALLER);
  EXPECT_EQ(why->limit(), "concurrent calls per agent");
  EXPECT_EQ(why->limit_value(), 2);
  EXPECT_EQ(why->actual(), 3);
  EXPECT_TRUE(lim.Acquire("b").ok());  // other keys are not affected
  { ConcurrencyLimiter::Lease gone = std::move(*a1); }
  EXPECT_EQ(lim.InFlight("a"), 1);
  EXPECT_TRUE(lim.Acquire("a").ok());
  EXPECT_EQ(lim.InFlight("a"), 1);  // the temporary lease above was released
}

TEST(RefusalTest, MessageAndCallerLimitsCarryTheirScope) {
  absl::Status m = MessageLimitError("x has 5 entries, limit 4", "max_x", 4, 5);
  EXPECT_EQ(m.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m.message(), "x has 5 entries, limit 4");
  ASSERT_TRUE(RefusalOf(m).has_value());
  EXPECT_EQ(RefusalOf(m)->scope(), moetune::v1::Refusal::REFUSAL_SCOPE_MESSAGE);
  EXPECT_EQ(RefusalOf(m)->limit(), "max_x");
  absl::Status c = CallerLimitError("too many", "max_y", 1, 2);
  ASSERT_TRUE(RefusalOf(c).has_value());
  EXPECT_EQ(RefusalOf(c)->scope(), moetune::v1::Refusal::REFUSAL_SCOPE_CALLER);
  // A plain status carries none.
  EXPECT_FALSE(RefusalOf(absl::ResourceExhaustedError("plain")).has_value());
}

TEST(ConcurrencyLimiterTest, ZeroMeansUnlimited) {
  ConcurrencyLimiter lim(0, "x");
  std::vector<ConcurrencyLimiter::Lease> leases;
  for (int i = 0; i < 100; ++i) {
    auto l = lim.Acquire("k");
    ASSERT_TRUE(l.ok());
    leases.push_back(std::move(*l));
  }
  EXPECT_EQ(lim.InFlight("k"), 100);
  leases.clear();
  EXPECT_EQ(lim.InFlight("k"), 0);
}

TEST(JobQuotaTest, UnfinishedJobsAndReservationsCountFinishedOnesDoNot) {
  std::set<std::string> finished;
  JobQuota q(2, [&](const std::string& id) { return finished.count(id) > 0; });
  ASSERT_TRUE(q.Reserve("alice").ok());
  q.Commit("alice", "j1");
  ASSERT_TRUE(q.Reserve("alice").ok());  // reserved, not committed yet
  absl::Status third = q.Reserve("alice");
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.message(), HasSubstr("user 'alice' has 2 plan jobs queued or running; limit is 2"));
  EXPECT_TRUE(q.Reserve("bob").ok());  // per user
  q.Cancel("alice");                   // the second submission failed
  EXPECT_EQ(q.InFlight("alice"), 1);
  ASSERT_TRUE(q.Reserve("alice").ok());
  q.Commit("alice", "j2");
  EXPECT_EQ(q.Reserve("alice").code(), absl::StatusCode::kResourceExhausted);
  finished.insert("j1");
  EXPECT_TRUE(q.Reserve("alice").ok());
}

}  // namespace
}  // namespace moetune::server
