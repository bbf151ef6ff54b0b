#include "kernels/group_agreement.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "kernels/rendezvous.h"

namespace moetune::kernels {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::moetune::testing::StatusIs;

GroupSpec Rank(int r, int world, std::shared_ptr<RendezvousStore> store, int timeout_ms = 10000) {
  GroupSpec g;
  g.rank = r;
  g.world_size = world;
  g.store = std::move(store);
  g.key_prefix = "t";
  g.timeout = std::chrono::milliseconds(timeout_ms);
  return g;
}

// Runs Agree(phase, status[r]) on one thread per rank; missing[r] ranks never call.
std::vector<ProbeStatus> AgreeAll(const std::vector<ProbeStatus>& mine, const std::vector<bool>& missing,
                                  int timeout_ms, double* seconds) {
  auto store = MakeInMemoryRendezvousStore();
  const int n = static_cast<int>(mine.size());
  std::vector<ProbeStatus> out(n);
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    if (missing[r]) continue;
    threads.emplace_back([&, r] {
      GroupAgreement a(Rank(r, n, store, timeout_ms));
      out[r] = a.Agree("verify", mine[r]);
    });
  }
  for (auto& t : threads) t.join();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

TEST(GroupAgreement, AllOkIsOk) {
  double s = 0;
  const auto out = AgreeAll(std::vector<ProbeStatus>(4), std::vector<bool>(4, false), 10000, &s);
  for (const auto& st : out) EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(GroupAgreement, OneRankFailsEveryRankStopsNamingIt) {
  std::vector<ProbeStatus> mine(4);
  mine[2] = DataLoss("dispatch_combine (cpu): token 3 element 1: got 0, want 2");
  double s = 0;
  const auto out = AgreeAll(mine, std::vector<bool>(4, false), 60000, &s);
  EXPECT_THAT(out[2], StatusIs(ProbeCode::kDataLoss, HasSubstr("token 3")));
  for (int r : {0, 1, 3}) {
    EXPECT_THAT(out[r], StatusIs(ProbeCode::kAborted, AllOf(HasSubstr("rank 2 failed in phase 'verify': DATA_LOSS"),
                                                              HasSubstr("rank " + std::to_string(r) + " stopped"))));
  }
  EXPECT_LT(s, 5.0) << "no rank waits for the 60 s timeout";
}

TEST(GroupAgreement, CauseWinsOverLostPeers) {
  // Rank 0 lost its connection to rank 3 (a consequence); rank 3 ran out of
  // memory (the cause): everyone names rank 3.
  std::vector<ProbeStatus> mine(4);
  mine[0] = Unavailable("gloo::alltoallv: Connection closed by peer");
  mine[3] = ResourceExhausted("cudaMalloc: out of memory");
  double s = 0;
  const auto out = AgreeAll(mine, std::vector<bool>(4, false), 60000, &s);
  EXPECT_THAT(out[3], StatusIs(ProbeCode::kResourceExhausted, HasSubstr("out of memory")));
  EXPECT_THAT(out[0], StatusIs(ProbeCode::kAborted, AllOf(HasSubstr("rank 3 failed"),
                                                            HasSubstr("stopped after: UNAVAILABLE"))));
  for (int r : {1, 2}) EXPECT_THAT(out[r], StatusIs(ProbeCode::kAborted, HasSubstr("rank 3 failed in phase")));
  EXPECT_LT(s, 5.0);
}

TEST(GroupAgreement, SilentRankIsADeadlineNotAHang) {
  std::vector<bool> missing(3, false);
  missing[1] = true;
  double s = 0;
  const auto out = AgreeAll(std::vector<ProbeStatus>(3), missing, 300, &s);
  for (int r : {0, 2}) {
    EXPECT_THAT(out[r], StatusIs(ProbeCode::kDeadlineExceeded, HasSubstr("ranks 1 did not report phase 'verify'")));
  }
  EXPECT_LT(s, 3.0);
}

TEST(GroupAgreement, PeerAbortedSeesAFailure) {
  auto store = MakeInMemoryRendezvousStore();
  GroupAgreement a0(Rank(0, 2, store)), a1(Rank(1, 2, store));
  std::string what;
  EXPECT_FALSE(a0.PeerAborted(&what));
  EXPECT_THAT(a1.Agree("time/dispatch", Internal("cudaEventQuery: an illegal memory access")),
              StatusIs(ProbeCode::kInternal, HasSubstr("illegal")));
  EXPECT_TRUE(a0.PeerAborted(&what));
  EXPECT_THAT(what, HasSubstr("rank 1 phase time/dispatch: INTERNAL"));
}

// The in-memory store until `gets_left` Gets have been answered, then a store
// whose attempt was closed (as the server's rendezvous table answers once a
// peer was lost or after a restart): every call is Aborted.
class ClosingStore : public RendezvousStore {
 public:
  explicit ClosingStore(int gets_left) : gets_left_(gets_left) {}
  ProbeStatus Set(const std::string& key, const std::vector<char>& value) override {
    if (gets_left_ <= 0) return Refused(key);
    return inner_->Set(key, value);
  }
  ProbeStatus Get(const std::string& key, std::chrono::milliseconds timeout, std::vector<char>* value) override {
    if (gets_left_-- <= 0) return Refused(key);
    return inner_->Get(key, timeout, value);
  }

 private:
  static ProbeStatus Refused(const std::string& key) {
    return Aborted("rendezvous key '" + key + "' belongs to no scheduled probe attempt");
  }
  std::shared_ptr<RendezvousStore> inner_ = MakeInMemoryRendezvousStore();
  int gets_left_;
};

TEST(GroupAgreement, ClosedAttemptEndsTheWaitAtOnce) {
  // Rank 0 published its verdict and polls for rank 1's, which never comes;
  // after two polls the attempt is closed. A 60 s timeout is not waited out.
  GroupAgreement a0(Rank(0, 2, std::make_shared<ClosingStore>(2), 60000));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(a0.Agree("time/4096", ProbeStatus::Ok()),
              StatusIs(ProbeCode::kAborted, AllOf(HasSubstr("rank 0 waited for rank 1 in phase 'time/4096'"),
                                                  HasSubstr("belongs to no scheduled probe attempt"))));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);

  // A rank that failed itself says so beside the store's answer.
  GroupAgreement b0(Rank(0, 2, std::make_shared<ClosingStore>(1), 60000));
  EXPECT_THAT(b0.Agree("verify", Unavailable("gloo::allreduce: Connection closed by peer")),
              StatusIs(ProbeCode::kAborted, AllOf(HasSubstr("no scheduled probe attempt"),
                                                  HasSubstr("rank 0 had failed: UNAVAILABLE"))));
}

TEST(GroupAgreement, PeerAbortedSeesAClosedAttempt) {
  GroupAgreement a0(Rank(0, 2, std::make_shared<ClosingStore>(1)));
  std::string what;
  EXPECT_FALSE(a0.PeerAborted(&what)) << "nothing published yet: no abort";
  EXPECT_TRUE(a0.PeerAborted(&what));
  EXPECT_THAT(what, AllOf(HasSubstr("the rendezvous store ended the attempt"), HasSubstr("ABORTED")));
}

TEST(GroupAgreement, WithoutAStoreReturnsOwnStatus) {
  GroupSpec g;
  GroupAgreement a(g);
  EXPECT_FALSE(a.active());
  EXPECT_TRUE(a.Agree("verify", ProbeStatus::Ok()).ok());
  EXPECT_THAT(a.Agree("verify", DataLoss("x")), StatusIs(ProbeCode::kDataLoss, HasSubstr("x")));
}

TEST(GroupAgreement, InjectedFailureOnlyAtItsPhase) {
  GroupSpec g;
  g.rank = 1;
  g.inject_failure_at_phase = "verify";
  GroupAgreement a(g);
  EXPECT_TRUE(a.InjectedFailure("connect").ok());
  EXPECT_THAT(a.InjectedFailure("verify"),
              StatusIs(ProbeCode::kInternal, HasSubstr("injected failure at the start of phase 'verify' on rank 1")));
}

}  // namespace
}  // namespace moetune::kernels
