// Multi-rank CPU probes as real processes: spawns one `probe_rank` per rank
// (posix_spawn), rendezvous through a FileRendezvousStore in a fresh
// directory, Gloo over TCP on 127.0.0.1. Waits on the children's pipes with a
// deadline (poll), never sleeps.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/dispatch_plan.h"
#include "kernels/probe_types.h"

extern char** environ;

namespace moetune::kernels {
namespace {

std::string BinaryPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "moetune") + "/kernels/cpu/probe_rank";
}

std::string FreshDir(const std::string& name) {
  std::string tmpl = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/" + name + ".XXXXXX";
  return mkdtemp(tmpl.data());
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string out, err;
  int exit_code = -1;
};

// Starts one process per argument list; returns when all have closed their
// output and exited, or kills them (by pid) at the deadline.
std::vector<Child> RunAll(const std::vector<std::vector<std::string>>& args, std::chrono::seconds deadline) {
  std::vector<Child> children(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    int out[2], err[2];
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    std::vector<char*> argv;
    for (const auto& a : args[i]) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = posix_spawn(&children[i].pid, argv[0], &fa, nullptr, argv.data(), environ);
    EXPECT_EQ(rc, 0) << "posix_spawn " << argv[0];
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    children[i].out_fd = out[0];
    children[i].err_fd = err[0];
  }
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::string*> sinks;
    std::vector<int*> owners;
    for (Child& c : children) {
      if (c.out_fd >= 0) {
        fds.push_back({c.out_fd, POLLIN, 0});
        sinks.push_back(&c.out);
        owners.push_back(&c.out_fd);
      }
      if (c.err_fd >= 0) {
        fds.push_back({c.err_fd, POLLIN, 0});
        sinks.push_back(&c.err);
        owners.push_back(&c.err_fd);
      }
    }
    if (fds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ADD_FAILURE() << "ranks did not finish within " << deadline.count() << " s";
      for (Child& c : children) kill(c.pid, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, n);
      } else {
        close(fds[i].fd);
        *owners[i] = -1;
      }
    }
  }
  for (Child& c : children) {
    if (c.out_fd >= 0) close(c.out_fd);
    if (c.err_fd >= 0) close(c.err_fd);
    int status = 0;
    waitpid(c.pid, &status, 0);
    c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return children;
}

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

struct DcCase {
  const char* mode;
  DispatchMode dispatch_mode;
  int ranks_per_node;
  int max_nodes;
};

class FourRankDispatchCombine : public ::testing::TestWithParam<DcCase> {};

// 4 processes, 8 experts (2 per rank), top-3, Zipf routing: every rank's
// combined output must equal x[t] * sum_k w_k * scale(e_k), recomputed here
// from the routing alone.
TEST_P(FourRankDispatchCombine, RoundTripReproducesWeightedSum) {
  const DcCase c = GetParam();
  const std::string store = FreshDir("store");
  const std::string outdir = FreshDir("out");
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 4; ++r) {
    args.push_back({BinaryPath(), "--probe=dispatch_combine", "--rank=" + std::to_string(r), "--world=4",
                    "--ranks_per_node=" + std::to_string(c.ranks_per_node),
                    "--max_nodes=" + std::to_string(c.max_nodes), "--store_dir=" + store,
                    "--prefix=dc", "--mode=" + std::string(c.mode), "--tokens=96", "--hidden=24",
                    "--experts=8", "--top_k=3", "--zipf=1.0", "--warmup=1", "--iters=3",
                    "--timeout_ms=60000", "--out=" + outdir + "/rank" + std::to_string(r) + ".f32"});
  }
  const auto children = RunAll(args, std::chrono::seconds(120));
  DispatchCombineParams p;
  p.tokens_per_rank = 96;
  p.hidden = 24;
  p.num_experts = 8;
  p.top_k = 3;
  p.ep_size = 4;
  p.ranks_per_node = c.ranks_per_node;
  p.max_nodes_per_token = c.max_nodes;
  p.routing = TokenDistribution::Zipf(1.0);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(children[r].exit_code, 0) << "rank " << r << ": " << children[r].err;
  }
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(children[r].exit_code, 0);
    EXPECT_NE(children[r].out.find("\"name\":\"dispatch\""), std::string::npos);
    const std::vector<float> got = ReadFloats(outdir + "/rank" + std::to_string(r) + ".f32");
    const Routing routing = MakeRouting(p, r);
    const std::vector<float> x = MakeTokens(p, r);
    ASSERT_EQ(got.size(), x.size());
    for (int64_t t = 0; t < p.tokens_per_rank; ++t) {
      double factor = 0;  // sum_k w_k * (1 + (e_k % 8) / 8)
      for (int k = 0; k < 3; ++k) {
        factor += routing.weights[t * 3 + k] * (1.0 + (routing.experts[t * 3 + k] % 8) / 8.0);
      }
      for (int64_t h = 0; h < p.hidden; ++h) {
        const double want = factor * x[t * p.hidden + h];
        ASSERT_NEAR(got[t * p.hidden + h], want, 1e-5 * (1 + std::fabs(want)))
            << "rank " << r << " token " << t << " h " << h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FourRankDispatchCombine,
                         ::testing::Values(DcCase{"per_expert", DispatchMode::kPerExpert, 0, 0},
                                           DcCase{"dedup_rank", DispatchMode::kDedupRank, 0, 0},
                                           DcCase{"dedup_node", DispatchMode::kDedupNode, 2, 0},
                                           DcCase{"dedup_node", DispatchMode::kDedupNode, 2, 1}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_maxnodes" +
                                  std::to_string(info.param.max_nodes);
                         });

class ThreeRankCollectives : public ::testing::TestWithParam<const char*> {};

// 3 ranks (odd, so no power-of-two shortcut): each rank checks every output
// element against the closed form before timing; a wrong value exits 1.
TEST_P(ThreeRankCollectives, VerifyAndReportBusBandwidth) {
  const std::string store = FreshDir("store");
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 3; ++r) {
    args.push_back({BinaryPath(), "--probe=collective", std::string("--op=") + GetParam(),
                    "--rank=" + std::to_string(r), "--world=3", "--store_dir=" + store, "--prefix=coll",
                    "--sizes=1200,120000", "--warmup=1", "--iters=3"});
  }
  const auto children = RunAll(args, std::chrono::seconds(120));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(children[r].exit_code, 0) << "rank " << r << ": " << children[r].err;
    EXPECT_NE(children[r].out.find("\"verified\":true"), std::string::npos);
    EXPECT_NE(children[r].out.find("\"bus_bw_gbps\""), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ThreeRankCollectives,
                         ::testing::Values("all_reduce", "all_gather", "reduce_scatter", "all_to_all"));

TEST(TwoRankOverlap, ReportsHiddenFraction) {
  const std::string store = FreshDir("store");
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 2; ++r) {
    args.push_back({BinaryPath(), "--probe=overlap", "--rank=" + std::to_string(r), "--world=2",
                    "--store_dir=" + store, "--prefix=ov", "--gemm=128", "--collective_bytes=262144",
                    "--warmup=1", "--iters=3"});
  }
  const auto children = RunAll(args, std::chrono::seconds(120));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(children[r].exit_code, 0) << "rank " << r << ": " << children[r].err;
    EXPECT_NE(children[r].out.find("\"hidden_fraction\""), std::string::npos);
  }
}

// A rank that fails mid-probe -- here at the start of the timed dispatch,
// while its peers are already inside the first exchange with it -- must end
// every rank well before the 60 s transport timeout, each naming the rank
// that failed and the phase.
TEST(RankFailure, EveryRankStopsWithinADeadlineNamingTheFailingRank) {
  for (const char* phase : {"verify", "time/dispatch"}) {
    SCOPED_TRACE(phase);
    const std::string store = FreshDir("store");
    std::vector<std::vector<std::string>> args;
    for (int r = 0; r < 4; ++r) {
      args.push_back({BinaryPath(), "--probe=dispatch_combine", "--rank=" + std::to_string(r), "--world=4",
                      "--store_dir=" + store, "--prefix=fail", "--mode=dedup_rank", "--tokens=96", "--hidden=24",
                      "--experts=8", "--top_k=3", "--zipf=1.0", "--warmup=1", "--iters=3", "--timeout_ms=60000"});
      if (r == 2) args.back().push_back(std::string("--inject_failure=") + phase);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto children = RunAll(args, std::chrono::seconds(120));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 20.0) << "ranks must not wait for the 60 s timeout";
    EXPECT_EQ(children[2].exit_code, 1);
    EXPECT_NE(children[2].err.find("injected failure at the start of phase '" + std::string(phase) + "'"),
              std::string::npos)
        << children[2].err;
    for (int r : {0, 1, 3}) {
      EXPECT_EQ(children[r].exit_code, 1) << "rank " << r << ": " << children[r].err;
      EXPECT_NE(children[r].err.find("ABORTED: rank 2 failed in phase '" + std::string(phase) + "': INTERNAL"),
                std::string::npos)
          << "rank " << r << ": " << children[r].err;
    }
  }
}

TEST(RankFailure, CollectiveRanksAgreeOnAFailedCheck) {
  const std::string store = FreshDir("store");
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 3; ++r) {
    args.push_back({BinaryPath(), "--probe=collective", "--op=all_reduce", "--rank=" + std::to_string(r),
                    "--world=3", "--store_dir=" + store, "--prefix=cfail", "--sizes=1200,120000", "--warmup=1",
                    "--iters=3", "--timeout_ms=60000"});
    if (r == 0) args.back().push_back("--inject_failure=time");
  }
  const auto children = RunAll(args, std::chrono::seconds(120));
  EXPECT_EQ(children[0].exit_code, 1);
  for (int r : {1, 2}) {
    EXPECT_EQ(children[r].exit_code, 1) << children[r].err;
    EXPECT_NE(children[r].err.find("ABORTED: rank 0 failed in phase 'time/1200'"), std::string::npos)
        << "rank " << r << ": " << children[r].err;
  }
}

TEST(MissingPeer, TimesOutWithUnavailableNotAHang) {
  const std::string store = FreshDir("store");
  // World of 2 but only rank 0 starts: it must give up after --timeout_ms.
  const auto children = RunAll({{BinaryPath(), "--probe=collective", "--rank=0", "--world=2",
                                 "--store_dir=" + store, "--prefix=lonely", "--timeout_ms=500"}},
                               std::chrono::seconds(60));
  EXPECT_EQ(children[0].exit_code, 1);
  EXPECT_NE(children[0].err.find("UNAVAILABLE"), std::string::npos) << children[0].err;
  EXPECT_NE(children[0].err.find("not set within"), std::string::npos) << children[0].err;
}

}  // namespace
}  // namespace moetune::kernels
