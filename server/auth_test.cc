#include "server/auth.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::server {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAgentTok[] = "agent-token-0123456789abcdef";
constexpr char kUserTok[] = "user-token-0123456789abcdef";
constexpr char kBothTok[] = "both-token-0123456789abcdef";

TokenAuthenticator Make() {
  auto a = TokenAuthenticator::Create({{"node-a", kAgentTok}, {"ops", kBothTok}},
                                      {{"alice", kUserTok}, {"ops", kBothTok}});
  EXPECT_TRUE(a.ok()) << a.status();
  return std::move(*a);
}

TEST(ConstantTimeEqualsTest, EqualOnlyForSameBytes) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));     // prefix
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
  EXPECT_FALSE(ConstantTimeEquals(std::string("ab\0", 3), "ab"));  // zero padding is no match
}

TEST(TokenFileTest, ParsesTokensNamesAndComments) {
  auto t = ParseTokenFile("# agents\n\n  tok-aaaaaaaaaaaaaaaa\nnode7 tok-bbbbbbbbbbbbbbbb  \n", "f");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "f:3");
  EXPECT_EQ((*t)[0].token, "tok-aaaaaaaaaaaaaaaa");
  EXPECT_EQ((*t)[1].name, "node7");
  EXPECT_EQ((*t)[1].token, "tok-bbbbbbbbbbbbbbbb");
}

TEST(TokenFileTest, RejectsShortTokensWithoutEchoingThem) {
  auto t = ParseTokenFile("ok-name s3cr3t\n", "tokens.txt");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), AllOf(HasSubstr("tokens.txt:1"), HasSubstr("16 to 4096"),
                                          Not(HasSubstr("s3cr3t"))));
  EXPECT_EQ(ParseTokenFile("a b cccccccccccccccccccc\n", "f").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTokenFile(std::string("tok-\x01xxxxxxxxxxxxxxxxx"), "f").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TokenFileTest, MissingOrEmptyFileIsAnError) {
  EXPECT_EQ(ReadTokenFile("/nonexistent/tokens").status().code(), absl::StatusCode::kNotFound);
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/empty_tokens";
  std::ofstream(path) << "# nothing\n";
  auto t = ReadTokenFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("holds no token"));
}

TEST(TokenAuthenticatorTest, RolesDecideWhoMayCallWhat) {
  TokenAuthenticator a = Make();
  ASSERT_TRUE(a.enabled());
  EXPECT_EQ(a.token_count(), 3u);

  auto agent = a.Authorize(std::string("Bearer ") + kAgentTok, Role::kAgent, "AgentService/Register");
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ(agent->name, "node-a");

  // An agent token cannot submit plans; a user token cannot report.
  auto denied = a.Authorize(std::string("Bearer ") + kAgentTok, Role::kUser, "PlannerService/SubmitPlan");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(),
              AllOf(HasSubstr("'node-a' has role agent"), HasSubstr("PlannerService/SubmitPlan"),
                    HasSubstr("needs role user"), Not(HasSubstr(kAgentTok))));
  EXPECT_EQ(a.Authorize(std::string("Bearer ") + kUserTok, Role::kAgent, "AgentService/ReportResult")
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);

  // A token in both files holds both roles.
  EXPECT_TRUE(a.Authorize(std::string("Bearer ") + kBothTok, Role::kAgent, "m").ok());
  EXPECT_TRUE(a.Authorize(std::string("Bearer ") + kBothTok, Role::kUser, "m").ok());
}

TEST(TokenAuthenticatorTest, NoOrWrongTokenIsUnauthenticated) {
  TokenAuthenticator a = Make();
  for (const std::string& header :
       {std::string(""), std::string(kUserTok), std::string("Basic ") + kUserTok,
        std::string("Bearer "), std::string("Bearer ") + kUserTok + "x",
        std::string("Bearer ") + std::string(kUserTok).substr(1), std::string("bearer ") + kUserTok}) {
    auto r = a.Authorize(header, Role::kUser, "PlannerService/ListAgents");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << header;
    EXPECT_THAT(r.status().message(), HasSubstr("PlannerService/ListAgents"));
    EXPECT_THAT(r.status().message(), Not(HasSubstr(kUserTok)));
  }
}

TEST(TokenAuthenticatorTest, DisabledAllowsEveryoneAsAnonymous) {
  auto a = TokenAuthenticator::FromFiles("", "");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->enabled());
  auto p = a->Authorize("", Role::kAgent, "m");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "anonymous");
  EXPECT_TRUE(p->Has(Role::kUser));
}

}  // namespace
}  // namespace moetune::server
