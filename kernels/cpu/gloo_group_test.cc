#include "kernels/cpu/gloo_group.h"

#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/gloo_ops.h"
#include "testing/status_matchers.h"

namespace moetune::kernels::cpu {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

// One rank's side of a two-rank alltoallv: what it sends, how many elements
// go to / come from each rank, and the size of its (poisoned) receive buffer.
struct RankExchange {
  std::vector<float> in;
  std::vector<int64_t> in_counts;
  std::vector<int64_t> out_counts;
  size_t receive_elems;
};

// Runs the exchange on two threads with separate Gloo contexts, rendezvous in
// memory; asserts both ranks succeed and returns what each received (-1 =
// never written).
void AlltoallvOnTwoThreads(const std::string& key_prefix, uint32_t tag,
                           const RankExchange (&ranks)[2], std::vector<float> (&got)[2]) {
  auto store = MakeInMemoryRendezvousStore();
  ProbeStatus status[2];
  auto rank_fn = [&](int r) {
    GroupSpec g;
    g.rank = r;
    g.world_size = 2;
    g.store = store;
    g.key_prefix = key_prefix;
    std::shared_ptr<gloo::Context> ctx;
    status[r] = ConnectGloo(g, &ctx);
    if (!status[r].ok()) return;
    const RankExchange& x = ranks[r];
    got[r].assign(x.receive_elems, -1.0f);
    status[r] = GlooAlltoallv(ctx, x.in.data(), x.in_counts, got[r].data(), x.out_counts, tag);
  };
  std::thread t0(rank_fn, 0), t1(rank_fn, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(status[0].ok()) << status[0].ToString();
  ASSERT_TRUE(status[1].ok()) << status[1].ToString();
}

// Alltoallv with uneven counts (including an empty one) delivers every value.
TEST(GlooGroup, TwoThreadsAlltoallvUnevenCounts) {
  // Rank 0 sends 1 element to itself and 3 to rank 1; rank 1 sends 0 to
  // rank 0 and 2 to itself.
  const RankExchange ranks[2] = {{{10, 11, 12, 13}, {1, 3}, {1, 0}, 1},
                                 {{20, 21}, {0, 2}, {3, 2}, 5}};
  std::vector<float> got[2];
  ASSERT_NO_FATAL_FAILURE(AlltoallvOnTwoThreads("t", 7, ranks, got));
  EXPECT_EQ(got[0], (std::vector<float>{10}));
  EXPECT_EQ(got[1], (std::vector<float>{11, 12, 13, 20, 21}));
}

// A rank that receives nothing at all (a cold expert shard under skewed
// routing) still completes the exchange.
TEST(GlooGroup, AlltoallvWithARankReceivingNothing) {
  // Buffers hold at least one element.
  const RankExchange ranks[2] = {{{1, 2}, {2, 0}, {2, 1}, 3}, {{3}, {1, 0}, {0, 0}, 1}};
  std::vector<float> got[2];
  ASSERT_NO_FATAL_FAILURE(AlltoallvOnTwoThreads("empty", 9, ranks, got));
  EXPECT_EQ(got[0], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(got[1], (std::vector<float>{-1.0f}));  // untouched
}

TEST(GlooGroup, NoStoreForTwoRanksIsFailedPrecondition) {
  GroupSpec g;
  g.world_size = 2;
  std::shared_ptr<gloo::Context> ctx;
  EXPECT_THAT(ConnectGloo(g, &ctx), StatusIs(ProbeCode::kFailedPrecondition, HasSubstr("rendezvous store")));
}

// A peer that drops out (its context destroyed, as a failing rank does) must
// turn this rank's next exchange into an error status, not kill the process
// with SIGPIPE (exit 141, seen in CI before ConnectGloo ignored it): the rank
// has to live on to read the peer's verdict in GroupAgreement.
TEST(GlooGroup, ExchangeWithAPeerThatLeftFailsWithoutSigpipe) {
  auto store = MakeInMemoryRendezvousStore();
  ProbeStatus connected[2], last;
  std::shared_ptr<gloo::Context> ctx[2];
  auto connect = [&](int r) {
    GroupSpec g;
    g.rank = r;
    g.world_size = 2;
    g.store = store;
    g.key_prefix = "leave";
    g.timeout = std::chrono::seconds(5);
    connected[r] = ConnectGloo(g, &ctx[r]);
  };
  std::thread t0(connect, 0), t1(connect, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(connected[0].ok()) << connected[0].ToString();
  ASSERT_TRUE(connected[1].ok()) << connected[1].ToString();

  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN) << "ConnectGloo leaves SIGPIPE at its default (terminate)";

  ctx[1].reset();  // rank 1 leaves: its sockets close
  const size_t n = size_t{1} << 18;  // 1 MiB per peer, more than a socket buffer
  std::vector<float> in(2 * n, 1.0f), out(2 * n);
  for (int i = 0; i < 50 && last.ok(); ++i) last = GlooAlltoall(ctx[0], in.data(), out.data(), in.size(), 11 + i);
  EXPECT_FALSE(last.ok()) << "an exchange with a peer that left cannot succeed";
}

}  // namespace
}  // namespace moetune::kernels::cpu
