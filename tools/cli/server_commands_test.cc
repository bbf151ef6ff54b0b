// Exit codes and error lines of the server subcommands, without a server:
// bad input exits 2 before any call; an unreachable server exits 1; each
// error is one line on stderr.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli/command_registry.h"

namespace moetune::cli {
namespace {

using ::testing::HasSubstr;

struct CommandRun {
  int code;
  std::string err;
};

CommandRun Call(const std::string& name, const std::vector<std::string>& args) {
  auto it = Commands().find(name);
  EXPECT_NE(it, Commands().end()) << name << " is not registered";
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  int code = it->second.run(args);
  std::string err = ::testing::internal::GetCapturedStderr();
  (void)::testing::internal::GetCapturedStdout();
  return {code, err};
}

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(ServerCommandsTest, AllSixAreRegistered) {
  for (const char* name : {"agents", "calibrate", "measurements", "submit", "status", "fetch"}) {
    EXPECT_EQ(Commands().count(name), 1u) << name;
  }
}

TEST(ServerCommandsTest, BadInputExitsTwoWithOneLineNamingTheProblem) {
  CommandRun r = Call("submit", {"--model", "deepseek-v3", "--cluster", "gb200-nvl72", "--seq", "4096",
                          "--gbs", "8192"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--gpus N is required"));
  EXPECT_EQ(Lines(r.err), 1);

  r = Call("submit", {"--model", "a", "--model_file", "b"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("give --model PRESET_OR_FILE"));

  r = Call("submit", {"--model", "a", "--cluster", "b", "--gpus", "-8", "--seq", "1", "--gbs", "1"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--gpus must be a positive integer, got -8"));

  // --stack as in plan and predict: a container version or latest.
  r = Call("submit", {"--model", "deepseek-v3", "--cluster", "gb200-nvl72", "--gpus", "256",
                      "--seq", "4096", "--gbs", "2048", "--stack", "nemo-24.07"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--stack: software stack 'nemo-24.07'"));
  EXPECT_EQ(Lines(r.err), 1);

  r = Call("fetch", {"job-1", "--format", "yaml"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--format must be json, megatron, maxtext"));
  EXPECT_THAT(r.err, HasSubstr("got 'yaml'"));

  r = Call("agents", {"--clustr", "ci"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --clustr"));
  EXPECT_EQ(Lines(r.err), 1);

  r = Call("calibrate", {"--profile", "quick"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--cluster NAME"));

  r = Call("status", {});
  EXPECT_EQ(r.code, kExitBadInput);

  r = Call("measurements", {"import", "x.log"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--cluster NAME is required"));
  r = Call("measurements", {"import", "--cluster", "pod-a"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("give at least one nccl-tests LOG file"));
  r = Call("measurements", {"import", "--cluster", "pod-a", "--span", "rack", "x.log"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--span must be intra_node or inter_node, got 'rack'"));
  r = Call("measurements", {"import", "--cluster", "pod-a", "/nonexistent/ar.log"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("cannot read /nonexistent/ar.log"));
  EXPECT_EQ(Lines(r.err), 1);
}

TEST(ServerCommandsTest, UnreachableServerExitsOneNamingIt) {
  // Port 1 on loopback: nothing listens there.
  CommandRun r = Call("agents", {"--server", "127.0.0.1:1", "--timeout_s", "3"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("moetune agents: UNAVAILABLE"));
  EXPECT_THAT(r.err, HasSubstr("(server 127.0.0.1:1)"));
  EXPECT_EQ(Lines(r.err), 1);
}

TEST(ServerCommandsTest, HelpExitsZero) {
  EXPECT_EQ(Call("calibrate", {"--help"}).code, kExitOk);
}

}  // namespace
}  // namespace moetune::cli
