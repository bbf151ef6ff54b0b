// The shipped binaries with authentication and mutual TLS, on 127.0.0.1:
// moetune-server with token files and certificates made by openssl at test
// time, moetune-agent with its token and client certificate, the moetune CLI
// with a user token. Checks the wiring of the flags in each main().
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/internal/process.h"

namespace moetune {
namespace {

using ::moetune::testing::Process;
using ::moetune::testing::ReadFile;
using ::moetune::testing::Runfile;
using ::moetune::testing::Tail;
using ::moetune::testing::TmpDir;
using ::moetune::testing::WaitFor;
using ::testing::HasSubstr;

struct ShResult {
  int exit_code = -1;
  std::string out, err;
};

ShResult Sh(const std::string& cmd) {
  static int n = 0;
  const std::string base = absl::StrCat(TmpDir(), "/sh", ++n);
  int status = std::system(absl::StrCat("cd '", TmpDir(), "' && (", cmd, ") >", base, ".out 2>", base,
                                        ".err")
                               .c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(base + ".out"),
          ReadFile(base + ".err")};
}

TEST(SecureDeploymentTest, TokensAndMutualTlsThroughTheBinaries) {
  const std::string d = TmpDir();
  // Without token files, a non-loopback address is refused.
  ShResult refused = Sh(absl::StrCat(Runfile("server/moetune-server"),
                                " --listen=0.0.0.0:0 --db=refused.db"));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("refusing to listen on 0.0.0.0:0 without authentication"));

  // Tokens and certificates.
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2";
  ASSERT_EQ(Sh("umask 077; echo \"node1 $(openssl rand -hex 32)\" > agent-tokens && "
               "echo \"alice $(openssl rand -hex 32)\" > user-tokens")
                .exit_code,
            0);
  ASSERT_EQ(Sh(absl::StrCat(
                   "openssl req -x509 ", ec, " -keyout ca.key -out ca.crt -subj /CN=ca && ",
                   "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext && ",
                   "openssl req ", ec, " -keyout server.key -out server.csr -subj /CN=localhost && ",
                   "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                   "-days 2 -out server.crt -extfile server.ext && ",
                   "printf 'extendedKeyUsage=clientAuth\\n' > client.ext && ",
                   "openssl req ", ec, " -keyout node1.key -out node1.csr -subj /CN=node1 && ",
                   "openssl x509 -req -in node1.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                   "-days 2 -out node1.crt -extfile client.ext"))
                .exit_code,
            0);

  const std::string port_file = d + "/port";
  Process server({Runfile("server/moetune-server"), "--listen=0.0.0.0:0", "--db=" + d + "/s.db",
                  "--port_file=" + port_file, "--heartbeat_ms=200",
                  "--agent_token_file=" + d + "/agent-tokens",
                  "--user_token_file=" + d + "/user-tokens", "--tls_cert=" + d + "/server.crt",
                  "--tls_key=" + d + "/server.key", "--tls_client_ca=" + d + "/ca.crt"},
                 d + "/server.log");
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(port_file).empty(); }, absl::Seconds(30)))
      << Tail(server.log());
  const std::string address = absl::StrCat("127.0.0.1:", std::stoi(ReadFile(port_file)));
  EXPECT_THAT(ReadFile(server.log()), HasSubstr("authentication on (2 tokens), TLS on, mutual for agents"));
  const std::string tokens = ReadFile(d + "/agent-tokens") + ReadFile(d + "/user-tokens");
  const std::string tls = absl::StrCat(" --tls_ca ", d, "/ca.crt --tls_server_name localhost");
  auto agents = [&](const std::string& token_file) {
    return Sh(absl::StrCat(Runfile("tools/moetune"), " agents --format json --server ", address,
                           tls, token_file.empty() ? "" : " --token_file " + d + "/" + token_file));
  };

  // An agent with its token but the user's role: refused. Then a real one.
  Process wrong({Runfile("agent/moetune-agent"), "--server=" + address, "--cluster=ci",
                 "--node=intruder", "--backend=cpu", "--spool=" + d + "/intruder.spool",
                 "--token_file=" + d + "/user-tokens", "--tls_ca=" + d + "/ca.crt",
                 "--tls_server_name=localhost", "--tls_cert=" + d + "/node1.crt",
                 "--tls_key=" + d + "/node1.key", "--max_backoff_ms=200"},
                d + "/intruder.log");
  Process agent({Runfile("agent/moetune-agent"), "--server=" + address, "--cluster=ci",
                 "--node=node1", "--backend=cpu", "--spool=" + d + "/node1.spool",
                 "--token_file=" + d + "/agent-tokens", "--tls_ca=" + d + "/ca.crt",
                 "--tls_server_name=localhost", "--tls_cert=" + d + "/node1.crt",
                 "--tls_key=" + d + "/node1.key", "--max_backoff_ms=200"},
                d + "/node1.log");
  ASSERT_TRUE(WaitFor([&] { return agents("user-tokens").out.find("\"ci/node1\"") != std::string::npos; },
                      absl::Seconds(30)))
      << Tail(agent.log()) << Tail(server.log());
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(wrong.log()).find("needs role agent") != std::string::npos; },
      absl::Seconds(30)))
      << Tail(wrong.log());
  ShResult listed = agents("user-tokens");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::Not(HasSubstr("intruder")));

  // The CLI without a token, or with the agent's: refused with the code.
  ShResult anonymous = agents("");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("UNAUTHENTICATED"));
  ShResult as_agent = agents("agent-tokens");
  EXPECT_EQ(as_agent.exit_code, 1);
  EXPECT_THAT(as_agent.err, HasSubstr("PERMISSION_DENIED"));

  // No log holds a token.
  for (const std::string& log : {server.log(), agent.log(), wrong.log()}) {
    EXPECT_EQ(ReadFile(log).find(tokens.substr(6, 64)), std::string::npos) << log << " holds a token";
  }
  EXPECT_EQ(anonymous.err.find(tokens.substr(6, 64)), std::string::npos);
}

}  // namespace
}  // namespace moetune
