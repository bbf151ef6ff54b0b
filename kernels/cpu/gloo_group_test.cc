#include "kernels/cpu/gloo_group.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/gloo_ops.h"
#include "kernels/internal/status_matchers.h"

namespace moetune::kernels::cpu {
namespace {

using ::testing::HasSubstr;

// Two ranks as threads with separate Gloo contexts, rendezvous in memory:
// alltoallv with uneven counts (including an empty one) delivers every value.
TEST(GlooGroup, TwoThreadsAlltoallvUnevenCounts) {
  auto store = MakeInMemoryRendezvousStore();
  ProbeStatus status[2];
  std::vector<float> got[2];
  auto rank_fn = [&](int r) {
    GroupSpec g;
    g.rank = r;
    g.world_size = 2;
    g.store = store;
    g.key_prefix = "t";
    std::shared_ptr<gloo::Context> ctx;
    status[r] = ConnectGloo(g, &ctx);
    if (!status[r].ok()) return;
    // Rank 0 sends 1 element to itself and 3 to rank 1; rank 1 sends 0 to
    // rank 0 and 2 to itself.
    std::vector<float> in = r == 0 ? std::vector<float>{10, 11, 12, 13} : std::vector<float>{20, 21};
    std::vector<int64_t> in_counts = r == 0 ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{0, 2};
    std::vector<int64_t> out_counts = r == 0 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{3, 2};
    got[r].assign(r == 0 ? 1 : 5, -1.0f);
    status[r] = GlooAlltoallv(ctx, in.data(), in_counts, got[r].data(), out_counts, 7);
  };
  std::thread t0(rank_fn, 0), t1(rank_fn, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(status[0].ok()) << status[0].ToString();
  ASSERT_TRUE(status[1].ok()) << status[1].ToString();
  EXPECT_EQ(got[0], (std::vector<float>{10}));
  EXPECT_EQ(got[1], (std::vector<float>{11, 12, 13, 20, 21}));
}

// A rank that receives nothing at all (a cold expert shard under skewed
// routing) still completes the exchange.
TEST(GlooGroup, AlltoallvWithARankReceivingNothing) {
  auto store = MakeInMemoryRendezvousStore();
  ProbeStatus status[2];
  std::vector<float> got[2];
  auto rank_fn = [&](int r) {
    GroupSpec g;
    g.rank = r;
    g.world_size = 2;
    g.store = store;
    g.key_prefix = "empty";
    std::shared_ptr<gloo::Context> ctx;
    status[r] = ConnectGloo(g, &ctx);
    if (!status[r].ok()) return;
    std::vector<float> in = r == 0 ? std::vector<float>{1, 2} : std::vector<float>{3};
    std::vector<int64_t> in_counts = r == 0 ? std::vector<int64_t>{2, 0} : std::vector<int64_t>{1, 0};
    std::vector<int64_t> out_counts = r == 0 ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{0, 0};
    got[r].assign(r == 0 ? 3 : 1, -1.0f);  // buffers hold at least one element
    status[r] = GlooAlltoallv(ctx, in.data(), in_counts, got[r].data(), out_counts, 9);
  };
  std::thread t0(rank_fn, 0), t1(rank_fn, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(status[0].ok()) << status[0].ToString();
  ASSERT_TRUE(status[1].ok()) << status[1].ToString();
  EXPECT_EQ(got[0], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(got[1], (std::vector<float>{-1.0f}));  // untouched
}

TEST(GlooGroup, NoStoreForTwoRanksIsFailedPrecondition) {
  GroupSpec g;
  g.world_size = 2;
  std::shared_ptr<gloo::Context> ctx;
  EXPECT_THAT(ConnectGloo(g, &ctx), StatusIs(ProbeCode::kFailedPrecondition, HasSubstr("rendezvous store")));
}

}  // namespace
}  // namespace moetune::kernels::cpu
