#include "kernels/cpu/cpu_probes.h"

#include "kernels/cpu/cpu_probes_internal.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/dispatch_combine.h"
#include "kernels/dispatch_plan.h"
#include "kernels/rendezvous.h"
#include "testing/status_matchers.h"

#include <thread>

namespace moetune::kernels::cpu {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

TimingOptions Quick() {
  TimingOptions t;
  t.warmup_iters = 1;
  t.timed_iters = 3;
  return t;
}

TEST(CpuGroupedGemm, AllPassesAndImplementationsVerifyAndTime) {
  GroupedGemmParams p;
  p.num_experts = 5;
  p.distribution = TokenDistribution::Histogram({7, 0, 33, 1, 64});  // ragged, one empty expert
  p.hidden = 48;
  p.ffn_hidden = 40;
  p.timing = Quick();
  ProbeResult r;
  ASSERT_TRUE(RunCpuProbe(p, GroupSpec{}, &r).ok());
  EXPECT_EQ(r.kind, ProbeKind::kGroupedGemm);
  ASSERT_EQ(r.measurements.size(), 9u);  // 3 passes x {dense_ref, loop, grouped}
  for (const Measurement& m : r.measurements) {
    EXPECT_TRUE(m.verified) << m.name;
    EXPECT_LT(m.max_rel_error, 1e-4) << m.name;
    EXPECT_EQ(m.samples_seconds.size(), 3u) << m.name;
    ASSERT_TRUE(m.tflops.has_value()) << m.name;
    ASSERT_TRUE(m.efficiency_vs_reference.has_value()) << m.name;
  }
  // The grouped FLOPs equal the dense reference's: 2 * 105 tokens * 40 * 48.
  EXPECT_DOUBLE_EQ(r.Find("fwd/grouped")->flops, 2.0 * 105 * 40 * 48);
  EXPECT_DOUBLE_EQ(r.Find("fwd/dense_ref")->flops, 2.0 * 105 * 40 * 48);
  EXPECT_DOUBLE_EQ(*r.Find("fwd/dense_ref")->efficiency_vs_reference, 1.0);
  EXPECT_EQ(r.provenance.backend, "cpu");
  EXPECT_EQ(r.provenance.compute_dtype, "fp32");
  EXPECT_FALSE(r.provenance.end_time_utc.empty());
}

TEST(CpuGroupedGemm, ZipfBalancedAndBf16RequestAllRunInFp32) {
  GroupedGemmParams p;
  p.num_experts = 4;
  p.total_tokens = 256;
  p.hidden = 32;
  p.ffn_hidden = 32;
  p.distribution = TokenDistribution::Zipf(1.2);
  p.dtype = DType::kBf16;
  p.backward_weight = false;
  p.timing = Quick();
  ProbeResult r;
  ASSERT_TRUE(RunCpuProbe(p, GroupSpec{}, &r).ok());
  EXPECT_EQ(r.measurements.size(), 6u);
  EXPECT_EQ(r.Find("bwd_data/loop")->labels.at("dtype"), "bf16");
  EXPECT_EQ(r.Find("bwd_data/loop")->labels.at("compute_dtype"), "fp32");
}

TEST(CpuGroupedGemm, Mxfp8IsEmulatedAndSaysSo) {
  GroupedGemmParams p;
  p.num_experts = 3;
  p.distribution = TokenDistribution::Histogram({40, 0, 7});  // blocks of 32 + a short one
  p.hidden = 64;
  p.ffn_hidden = 48;  // not a multiple of 32: the emulation quantizes short blocks too
  p.dtype = DType::kMxfp8;
  p.timing = Quick();
  ProbeResult r;
  ASSERT_TRUE(RunCpuProbe(p, GroupSpec{}, &r).ok());
  ASSERT_EQ(r.measurements.size(), 9u);
  for (const Measurement& m : r.measurements) {
    EXPECT_TRUE(m.verified) << m.name;
    EXPECT_LT(m.max_rel_error, 1e-4) << m.name;  // fp32 GEMM on the dequantized values
    EXPECT_EQ(m.labels.at("dtype"), "mxfp8") << m.name;
    EXPECT_EQ(m.labels.at("compute_dtype"), "fp32") << m.name;
    EXPECT_THAT(m.labels.at("emulated"), HasSubstr("E4M3 with a UE8M0 scale per 32")) << m.name;
  }
}

TEST(EmulateMxInputs, QuantizesAlongEachGemmsReductionAxis) {
  // One expert, 2 tokens, K = 32, N = 32. X[0][0] = 1792, X[0][1] = 0.01,
  // everything else 0.
  //  fwd (along K): X's row 0 block has amax 1792 -> scale 2^2; 0.01 / 4 =
  //    0.0025 is an E4M3 subnormal: 1.28 * 2^-9 -> 2^-9, so 0.01 -> 2^-9 * 4
  //    = 0.0078125.
  //  bwd_weight (along tokens): X's column 1 is {0.01, 0}: 0.01 / 448 ->
  //    scale 2^-15; 0.01 * 2^15 = 327.68 -> 320 (E4M3 step 32 there), so
  //    0.01 -> 320 * 2^-15 = 0.009765625.
  std::vector<float> x(64, 0.0f), w(32 * 32, 1.0f), dy(64, 2.0f);
  x[0] = 1792.0f;
  x[1] = 0.01f;
  const MxEmulatedInputs mx = EmulateMxInputs(x, w, dy, {2}, 32, 32);
  EXPECT_EQ(mx.x_fwd[0], 1792.0f);
  EXPECT_EQ(mx.x_fwd[1], 0.0078125f);
  EXPECT_EQ(mx.x_bw[1], 0.009765625f);
  EXPECT_EQ(mx.x_bw[0], 1792.0f);  // column 0 = {1792, 0}: scale 2^2, exact
  // Ones and twos are exact whatever the orientation.
  EXPECT_EQ(mx.w_fwd[5], 1.0f);
  EXPECT_EQ(mx.w_bd[5], 1.0f);
  EXPECT_EQ(mx.dy_bd[63], 2.0f);
  EXPECT_EQ(mx.dy_bw[63], 2.0f);
}

TEST(CpuProbes, RefuseInvalidParamsNamingTheValue) {
  GroupedGemmParams g;
  g.num_experts = 0;
  ProbeResult r;
  EXPECT_THAT(RunCpuProbe(g, GroupSpec{}, &r),
              StatusIs(ProbeCode::kInvalidArgument, HasSubstr("num_experts must be > 0, got 0")));
  DispatchCombineParams d;
  d.top_k = 20;
  EXPECT_THAT(RunCpuProbe(d, GroupSpec{}, &r),
              StatusIs(ProbeCode::kInvalidArgument, HasSubstr("top_k (20) must be <= num_experts (8)")));
  GroupedGemmParams huge;
  huge.total_tokens = int64_t{1} << 40;  // 2^40 tokens x 1024 x 4 B: far over half of RAM
  EXPECT_THAT(RunCpuProbe(huge, GroupSpec{}, &r),
              StatusIs(ProbeCode::kInvalidArgument, HasSubstr("more than the memory budget")));
}

TEST(CpuProbes, MultiRankProbeWithoutStoreIsFailedPrecondition) {
  CollectiveParams c;
  c.group_size = 2;
  GroupSpec g;
  g.world_size = 2;
  ProbeResult r;
  EXPECT_THAT(RunCpuProbe(c, g, &r),
              StatusIs(ProbeCode::kFailedPrecondition, HasSubstr("needs a rendezvous store")));
}

TEST(CpuProbes, GroupMismatchIsInvalidArgument) {
  CollectiveParams c;
  c.group_size = 4;
  ProbeResult r;
  EXPECT_THAT(RunCpuProbe(c, GroupSpec{}, &r),
              StatusIs(ProbeCode::kInvalidArgument, HasSubstr("world_size (1) must equal")));
}

TEST(CpuCollectives, SingleRankAllOpsVerify) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll}) {
    CollectiveParams c;
    c.op = op;
    c.group_size = 1;
    c.sizes_bytes = {4096, 65536};
    c.timing = Quick();
    ProbeResult r;
    ASSERT_TRUE(RunCpuProbe(c, GroupSpec{}, &r).ok()) << CollectiveOpName(op);
    ASSERT_EQ(r.measurements.size(), 2u);
    EXPECT_TRUE(r.measurements[1].verified);
    EXPECT_DOUBLE_EQ(r.measurements[1].bytes, 65536);
  }
}

TEST(CpuDispatchCombine, SingleRankRoundTripVerifies) {
  DispatchCombineParams d;
  d.ep_size = 1;
  d.tokens_per_rank = 32;
  d.hidden = 16;
  d.num_experts = 4;
  d.top_k = 2;
  d.timing = Quick();
  ProbeResult r;
  ASSERT_TRUE(RunCpuProbe(d, GroupSpec{}, &r).ok());
  ASSERT_NE(r.Find("dispatch"), nullptr);
  EXPECT_TRUE(r.Find("combine")->verified);
  // One rank, dedup: one row per token, all local (bus factor 0).
  EXPECT_DOUBLE_EQ(r.Find("dispatch")->values.at("rows_sent"), 32);
  EXPECT_DOUBLE_EQ(r.Find("dispatch")->bus_factor, 0.0);
}

TEST(CpuOffload, PinnedAndPageableBothDirectionsAloneAndUnderGemm) {
  OffloadParams o;
  o.sizes_bytes = {1 << 20};  // within the default 8 MiB RLIMIT_MEMLOCK
  o.pageable = true;
  o.gemm_m = o.gemm_n = o.gemm_k = 64;
  o.timing = Quick();
  ProbeResult r;
  ProbeStatus s = RunCpuProbe(o, GroupSpec{}, &r);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // {pinned, pageable} x {h2d, d2h} x {alone, under_gemm}.
  ASSERT_EQ(r.measurements.size(), 8u);
  const Measurement* m = r.Find("h2d/pinned/1048576/under_gemm");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->verified);
  EXPECT_TRUE(m->alg_bw_gbps.has_value());
  EXPECT_TRUE(m->efficiency_vs_reference.has_value());
}

TEST(CpuOverlap, SingleRankReportsHiddenFractionAndSlowdown) {
  OverlapParams o;
  o.group_size = 1;
  o.gemm_m = o.gemm_n = o.gemm_k = 128;
  o.collective_bytes = 1 << 16;
  o.timing = Quick();
  ProbeResult r;
  ASSERT_TRUE(RunCpuProbe(o, GroupSpec{}, &r).ok());
  const Measurement* both = r.Find("both");
  ASSERT_NE(both, nullptr);
  EXPECT_GE(both->values.at("hidden_fraction"), 0.0);
  EXPECT_LE(both->values.at("hidden_fraction"), 1.0);
  EXPECT_GT(both->values.at("gemm_slowdown"), 0.0);
}

// Routing is exchanged, not recomputed on every rank: a rank whose host
// draws a different routing from the same parameters (a different libm
// rounding the Zipf weights, simulated here by a different seed on rank 1)
// still leaves every rank with the same plans, and every round trip checks.
TEST(CpuDispatchCombine, RanksAgreeOnRoutingEvenWhenTheyDrawItDifferently) {
  auto store = MakeInMemoryRendezvousStore();
  std::vector<ProbeStatus> status(3);
  std::vector<std::vector<float>> combined(3);
  std::vector<DispatchCombineParams> params(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    DispatchCombineParams& p = params[r];
    p.tokens_per_rank = 48;
    p.hidden = 16;
    p.num_experts = 6;
    p.top_k = 2;
    p.ep_size = 3;
    p.routing = TokenDistribution::Zipf(1.1);
    p.timing.warmup_iters = 0;
    p.timing.timed_iters = 1;
    p.timing.seed = r == 1 ? 99 : 1;
    threads.emplace_back([&, r] {
      GroupSpec g;
      g.rank = r;
      g.world_size = 3;
      g.store = store;
      g.key_prefix = "routing";
      g.timeout = std::chrono::milliseconds(10000);
      ProbeResult result;
      status[r] = RunDispatchCombineRoundTrip(params[r], g, &result, &combined[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].ToString();
    // The rank's own routing and tokens (as it drew them) are what came back.
    const std::vector<double> want =
        ExpectedCombine(params[r], MakeRouting(params[r], r), MakeTokens(params[r], r));
    ASSERT_EQ(combined[r].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(combined[r][i], want[i], 1e-5 * (1 + std::fabs(want[i])));
  }
}

}  // namespace
}  // namespace moetune::kernels::cpu
