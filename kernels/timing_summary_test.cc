#include "kernels/timing_summary.h"

#include "gtest/gtest.h"

namespace moetune::kernels {
namespace {

TEST(SummarizeBackToBack, LaunchShareAndHostBound) {
  // A small collective: 10 us per iteration back to back, 40 us alone
  // between events (30 us of launch gaps), the host enqueues one in 4 us.
  Measurement m;
  m.samples_seconds = {10e-6, 11e-6, 9e-6};
  SummarizeBackToBack(10, {4e-6, 4e-6, 5e-6}, {40e-6, 42e-6, 38e-6}, &m);
  EXPECT_EQ(m.values["iterations_per_sample"], 10);
  EXPECT_DOUBLE_EQ(m.values["lone_call_seconds"], 40e-6);
  EXPECT_DOUBLE_EQ(m.values["launch_share"], 0.75);  // 1 - 10 / 40
  EXPECT_EQ(m.values["host_bound"], 0);
  // A 64-expert loop whose launches take longer than the GPU work: the host
  // needs 12 us per iteration, the GPU 10 us: host bound even back to back.
  Measurement loop;
  loop.samples_seconds = {10e-6};
  SummarizeBackToBack(10, {12e-6}, {12e-6}, &loop);
  EXPECT_EQ(loop.values["host_bound"], 1);
  // A large GEMM: no launch share (lone call as fast as back to back).
  Measurement big;
  big.samples_seconds = {2e-3};
  SummarizeBackToBack(10, {5e-6}, {1.99e-3}, &big);
  EXPECT_EQ(big.values["launch_share"], 0);
}

}  // namespace
}  // namespace moetune::kernels
