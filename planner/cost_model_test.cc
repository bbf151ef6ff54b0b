#include "planner/cost_model.h"

#include <tuple>

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/units.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;
using units::kMicrosecond;

// A cluster with round numbers: 1 PFLOP/s BF16, 2 PFLOP/s FP8, 1 TB/s HBM,
// 100 GB/s NVLink (1 us), 10 GB/s NIC (5 us), 50 GB/s host link.
ClusterSpec RoundCluster() {
  absl::StatusOr<ClusterSpec> c = ParseClusterJson(R"({
      "name": "round",
      "gpu": {"name": "round-gpu", "generation": "hopper",
              "bf16_dense_flops_per_sec": 1e15,
              "fp8_dense_flops_per_sec": 2e15,
              "hbm_bytes": 8e10, "hbm_bytes_per_sec": 1e12},
      "gpus_per_node": 8, "nvlink_domain_gpus": 8,
      "nvlink_bytes_per_sec": 1e11, "nvlink_latency_s": 1e-6,
      "scaleout_bytes_per_sec": 1e10, "scaleout_latency_s": 5e-6,
      "host_link_bytes_per_sec": 5e10})");
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(DatasheetCostModelTest, ConstantsAreTheHopperPriors) {
  const DatasheetCostModel cm(RoundCluster());
  // The hand derivations below use these values (cost_model.cc): 0.75 x
  // DataSetPriors::gemm_efficiency_scale (1.06, set from data) = 0.795.
  EXPECT_DOUBLE_EQ(cm.constants().gemm_efficiency[int(Precision::kBf16)], 0.75 * 1.06);
  EXPECT_EQ(cm.constants().gemm_fixed_s, 3 * kMicrosecond);
  EXPECT_EQ(cm.constants().nvlink_efficiency, 0.78);
  EXPECT_EQ(cm.constants().scaleout_efficiency, 0.80);
  EXPECT_EQ(cm.constants().hbm_efficiency, 0.88);
  EXPECT_EQ(cm.constants().host_link_efficiency, 0.85);
}

TEST(DatasheetCostModelTest, DenseGemmByHand) {
  const DatasheetCostModel cm(RoundCluster());
  // 4096^3 BF16: 2 x 4096^3 = 137,438,953,472 FLOPs; tile factor
  // 4096 / (4096 + 128) = 0.96970; efficiency 0.795 x 0.96970 = 0.77091;
  // 1.3744e11 / (1e15 x 0.77091) = 178.28 us; + 3 us fixed = 181.28 us.
  const Cost c = cm.DenseGemm(4096, 4096, 4096, Precision::kBf16);
  EXPECT_NEAR(c.seconds / kMicrosecond, 181.28, 0.01);
  EXPECT_EQ(c.source, CostSource::kDatasheetPrior);
  // A skinny GEMM is memory bound: [8 x 8192] x [8192 x 8192] BF16 moves
  // (8 x 8192 + 8192^2) x 2 + 8 x 8192 x 2 = 134,479,872 bytes at
  // 0.88 TB/s = 152.82 us (compute: 1.07e9 / (1e15 x 0.795 x 8/136) =
  // 23.0 us); + 3 us = 155.82 us.
  EXPECT_NEAR(cm.DenseGemm(8, 8192, 8192, Precision::kBf16).seconds / kMicrosecond,
              155.82, 0.01);
}

TEST(DatasheetCostModelTest, CollectivesByHand) {
  const DatasheetCostModel cm(RoundCluster());
  struct Case {
    CollectiveKind kind;
    double bytes;
    int n;
    LinkSpan span;
    double expected_us;
  };
  const Case cases[] = {
      // All-gather 1 GB over 8 NVLink ranks: 7/8 x 1e9 / (1e11 x 0.78)
      // = 11,217.95 us + 2 x log2(8) = 6 steps x 1 us = 11,223.95 us.
      {CollectiveKind::kAllGather, 1e9, 8, LinkSpan::kNvlinkDomain, 11223.95},
      // All-reduce: twice the bus bytes: 22,435.90 + 6 = 22,441.90 us.
      {CollectiveKind::kAllReduce, 1e9, 8, LinkSpan::kNvlinkDomain, 22441.90},
      // Reduce-scatter 1 GB over 16 ranks across nodes: 15/16 x 1e9 /
      // (1e10 x 0.8) = 117,187.5 us + 8 steps x 5 us = 117,227.5 us.
      {CollectiveKind::kReduceScatter, 1e9, 16, LinkSpan::kScaleOut, 117227.5},
      // Send/recv 1 MB over the NIC: 1e6 / 8e9 = 125 us + 5 us = 130 us.
      {CollectiveKind::kSendRecv, 1e6, 2, LinkSpan::kScaleOut, 130.0},
      // A group of one moves nothing.
      {CollectiveKind::kAllGather, 1e9, 1, LinkSpan::kNvlinkDomain, 0.0},
  };
  for (const Case& c : cases) {
    EXPECT_NEAR(cm.Collective(c.kind, c.bytes, c.n, c.span).seconds / kMicrosecond,
                c.expected_us, 0.01)
        << CollectiveKindName(c.kind) << " n=" << c.n;
  }
}

TEST(ExpertTensorParallelExchangeTest, ByHand) {
  // 1,000 rows of 7,168 elements over etp 4 gather 4,000 rows: 28.672 M
  // elements, FP8 operands (1 B) gathered, BF16 partials (2 B) scattered.
  const EtpExchange fp8 = ExpertTensorParallelExchange(1000, 7168, 1.0, 4);
  EXPECT_DOUBLE_EQ(fp8.gather_bytes, 28.672e6);
  EXPECT_DOUBLE_EQ(fp8.scatter_bytes, 57.344e6);
  const EtpExchange bf16 = ExpertTensorParallelExchange(1000, 7168, 2.0, 4);
  EXPECT_DOUBLE_EQ(bf16.gather_bytes, 57.344e6);
  // No expert tensor parallelism, nothing to exchange.
  const EtpExchange none = ExpertTensorParallelExchange(1000, 7168, 2.0, 1);
  EXPECT_EQ(none.gather_bytes, 0);
  EXPECT_EQ(none.scatter_bytes, 0);
}

TEST(DatasheetCostModelTest, MoreRanksNeverFasterForTheSameBytes) {
  const DatasheetCostModel cm(RoundCluster());
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kAllReduce,
                              CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    for (LinkSpan span : {LinkSpan::kNvlinkDomain, LinkSpan::kScaleOut}) {
      double prev = 0;
      for (int n = 2; n <= 1024; n *= 2) {
        const double t = cm.Collective(kind, 1e8, n, span).seconds;
        EXPECT_GE(t, prev) << CollectiveKindName(kind) << " n=" << n;
        prev = t;
      }
    }
  }
}

TEST(DatasheetCostModelTest, ScaleOutNeverFasterThanNvlink) {
  const DatasheetCostModel cm(RoundCluster());
  for (double bytes : {1e3, 1e6, 1e9}) {
    EXPECT_GT(cm.Collective(CollectiveKind::kAllGather, bytes, 8, LinkSpan::kScaleOut).seconds,
              cm.Collective(CollectiveKind::kAllGather, bytes, 8, LinkSpan::kNvlinkDomain).seconds);
  }
}

// 4,096 tokens of 1,000 bytes, top 8, over `ep` ranks in domains of
// `gpus_per_domain`.
DispatchShape TopEightShape(int ep, int gpus_per_domain) {
  DispatchShape d;
  d.tokens = 4096;
  d.bytes_per_token = 1000;
  d.top_k = 8;
  d.ep = ep;
  d.ep_gpus_per_domain = gpus_per_domain;
  return d;
}

TEST(DatasheetCostModelTest, DispatchByHand) {
  const DatasheetCostModel cm(RoundCluster());
  DispatchShape d = TopEightShape(8, 8);
  // All-to-all inside one domain: 8 copies per token, 7/8 leave the GPU:
  // 4096 x 7 x 1000 = 28,672,000 bytes at 1e11 x 0.75 = 382.29 us;
  // + 2 x 1 us latency = 384.29 us.
  d.dedup = false;
  EXPECT_NEAR(cm.Dispatch(d).seconds / kMicrosecond, 384.29, 0.01);
  // De-duplicated: one copy per distinct destination GPU:
  // 8 (1 - (7/8)^8) = 5.2509 GPUs, 7/8 of them remote = 4.5945 copies:
  // 4096 x 4.5945 x 1000 / 7.5e10 = 250.92 us + 2 us.
  d.dedup = true;
  EXPECT_NEAR(cm.Dispatch(d).seconds / kMicrosecond, 252.92, 0.05);
  // EP 1 moves nothing.
  d.ep = 1;
  EXPECT_EQ(cm.Dispatch(d).seconds, 0.0);
}

// Group-limited routing (DeepSeek-V3: 256 experts in 8 groups, 4 groups
// per token, top 8), by hand.
TEST(DistinctDestinationsTest, GroupLimitedRoutingByHand) {
  // Uniform: 8 (1 - (7/8)^8) = 5.2511 of 8 destinations.
  EXPECT_NEAR(DistinctDestinations(8, 8, 0, 0), 5.2511, 1e-4);
  EXPECT_NEAR(DistinctDestinations(8, 8, 8, 8), 5.2511, 1e-4);  // every group eligible
  // One group per destination (EP 64 over eight 8-GPU nodes; or EP 8 over
  // GPUs): the 4 chosen groups are 4 destinations.
  EXPECT_NEAR(DistinctDestinations(8, 8, 8, 4), 4.0, 1e-12);
  // Two groups per destination (EP 32 over four nodes): a node is missed
  // when both its groups are: 4 (1 - C(6,4) / C(8,4)) = 4 (1 - 15/70).
  EXPECT_NEAR(DistinctDestinations(4, 8, 8, 4), 4.0 * (1.0 - 15.0 / 70.0), 1e-12);
  // A group over 8 GPUs (EP 64 over GPUs): 2 picks per chosen group,
  // 4 x 8 (1 - (7/8)^2) = 4 x 1.875.
  EXPECT_NEAR(DistinctDestinations(64, 8, 8, 4), 7.5, 1e-12);
  // One destination: always itself.
  EXPECT_EQ(DistinctDestinations(1, 8, 8, 4), 1.0);
}

// The de-duplicated dispatch sends a token once per destination domain:
// node-limited routing cuts the NIC copies of EP 64 over eight 8-GPU
// domains from 5.2511 x 7/8 to 4 x 7/8 per token; all-to-all is unchanged.
TEST(DatasheetCostModelTest, GroupLimitedRoutingCutsDedupNicCopies) {
  const DatasheetCostModel cm(RoundCluster());
  DispatchShape d = TopEightShape(64, 8);
  d.dedup = true;
  DispatchShape g = d;
  g.router_groups = 8;
  g.router_group_topk = 4;
  const double lat = 2 * RoundCluster().scaleout_latency_s;
  // Both NIC-bound: the time past the latency scales with the copies.
  EXPECT_NEAR((cm.Dispatch(g).seconds - lat) / (cm.Dispatch(d).seconds - lat), 4.0 / 5.2511,
              1e-3);
  d.dedup = g.dedup = false;
  EXPECT_EQ(cm.Dispatch(g).seconds, cm.Dispatch(d).seconds);
}

// Every GPU generation has a complete built-in prior table
// (planner/data/priors/<generation>.json), and the fitted data-set priors
// enter where the table says "fitted" and nowhere else.
TEST(PriorTableTest, EveryGenerationHasATableAndFittedEntriesFollowDataSetPriors) {
  DataSetPriors fitted;
  fitted.blackwell_ultra_clock_gain = 1.1;
  fitted.blackwell_dispatch_scaleout_max_bytes_per_sec = 12e9;
  fitted.gemm_efficiency_scale = 0.5;
  fitted.blackwell_ultra_nvfp4_sustained = 0.8;
  for (GpuGeneration g : kGpuGenerations) {
    GpuSpec gpu;
    gpu.generation = g;
    const PriorConstants base = PriorConstantsFor(gpu);
    const PriorConstants k = PriorConstantsFor(gpu, fitted);
    SCOPED_TRACE(GpuGenerationName(g));
    EXPECT_GT(base.gemm_efficiency[int(Precision::kBf16)], 0.5);
    EXPECT_GT(base.attention_efficiency, 0.0);
    EXPECT_GT(base.comm_sm_fraction, 0.1);
    EXPECT_LT(base.comm_sm_fraction, 0.2);
    const bool ultra = g == GpuGeneration::kBlackwellUltra;
    // BF16 GEMMs: the shipped scale replaced by 0.5 always, the shipped
    // clock gain by 1.1 on Blackwell Ultra only.
    const DataSetPriors shipped;
    const double clock = ultra ? 1.1 / shipped.blackwell_ultra_clock_gain : 1.0;
    EXPECT_NEAR(k.gemm_efficiency[int(Precision::kBf16)],
                base.gemm_efficiency[int(Precision::kBf16)] / shipped.gemm_efficiency_scale * 0.5 * clock, 1e-12);
    EXPECT_EQ(k.dispatch_scaleout_max_bytes_per_sec, g == GpuGeneration::kHopper ? 0.0 : 12e9);
    // NVFP4 GEMMs (no clock gain): the shipped scale replaced by 0.5
    // always, the shipped sustained NVFP4 share by 0.8 on Blackwell Ultra.
    if (g != GpuGeneration::kHopper) {
      const double nvfp4 = ultra ? 0.8 / shipped.blackwell_ultra_nvfp4_sustained : 1.0;
      EXPECT_NEAR(k.gemm_efficiency[int(Precision::kNvfp4)],
                  base.gemm_efficiency[int(Precision::kNvfp4)] / shipped.gemm_efficiency_scale * 0.5 *
                      nvfp4,
                  1e-12);
    }
    EXPECT_EQ(k.hbm_efficiency, base.hbm_efficiency);
  }
  GpuSpec hopper;
  hopper.generation = GpuGeneration::kHopper;
  EXPECT_EQ(PriorConstantsFor(hopper).gemm_efficiency[int(Precision::kMxfp8)], 0.0);  // not in Hopper
  EXPECT_NEAR(PriorConstantsFor(hopper).comm_sm_fraction, 20.0 / 132.0, 1e-12);  // hopper.json: 20 of 132 SMs
}

TEST(PriorTableTest, BadTablesNameTheField) {
  const DataSetPriors fitted;
  EXPECT_THAT(ParsePriorTable("[1]", fitted), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
  EXPECT_THAT(ParsePriorTable(R"({"gemm_efficency": {}})", fitted),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown field 'gemm_efficency'")));
  EXPECT_THAT(ParsePriorTable(R"({"generation": "x"})", fitted),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'attention_efficiency' must be a positive number")));
}

TEST(DatasheetCostModelTest, DispatchScaleoutCeilingByHand) {
  // All-to-all, top-1, EP 16 over two 8-GPU domains, 10,000 tokens of
  // 1,000 bytes: 7/16 of the copies cross NVLink, 8/16 leave the domain.
  // NVLink: 4.375e6 bytes at 1e11 x 0.75 = 58.33 us. NIC: 5e6 bytes at
  // 1e10 x 0.7 = 714.29 us; with a 5 GB/s ceiling 1,000 us. Latency 2 x 5
  // us. The slower path bounds: 724.29 us, and 1,010 us with the ceiling.
  DispatchShape d{1e4, 1000, 1, 16, 8, false};
  PriorConstants k = PriorConstantsFor(RoundCluster().gpu);
  EXPECT_EQ(k.dispatch_scaleout_max_bytes_per_sec, 0.0);  // Hopper: none
  EXPECT_NEAR(DatasheetCostModel(RoundCluster(), k).Dispatch(d).seconds / kMicrosecond,
              724.29, 0.01);
  k.dispatch_scaleout_max_bytes_per_sec = 5e9;
  EXPECT_NEAR(DatasheetCostModel(RoundCluster(), k).Dispatch(d).seconds / kMicrosecond,
              1010.0, 1e-6);
  // A ceiling above the NIC's achieved rate changes nothing.
  k.dispatch_scaleout_max_bytes_per_sec = 8e9;
  EXPECT_NEAR(DatasheetCostModel(RoundCluster(), k).Dispatch(d).seconds / kMicrosecond,
              724.29, 0.01);
}

// The share of an exchange bound by its NVLink copying,
// (max(nv, nic) - nic) / max(nv, nic), on the shapes of the tests above.
TEST(DatasheetCostModelTest, DispatchNvlinkShareByHand) {
  // Inside one domain (DispatchByHand's shape): no NIC part, 1.
  DispatchShape inside{4096, 1000, 8, 8, 8, true};
  EXPECT_DOUBLE_EQ(DatasheetCostModel(RoundCluster()).DispatchNvlinkShare(inside), 1.0);
  // EP 16 over two domains, top-1 all-to-all (DispatchScaleoutCeilingByHand):
  // NVLink 58.33 us, NIC 714.29 us: NIC-bound, 0.
  DispatchShape across{1e4, 1000, 1, 16, 8, false};
  PriorConstants k = PriorConstantsFor(RoundCluster().gpu);
  EXPECT_DOUBLE_EQ(DatasheetCostModel(RoundCluster(), k).DispatchNvlinkShare(across), 0.0);
  // NVLink at 1e11 x 0.05 = 5 GB/s: 4.375e6 bytes take 875 us, the NIC still
  // 714.29 us: (875 - 714.29) / 875 = 0.18367.
  k.dispatch_nvlink_efficiency = 0.05;
  EXPECT_NEAR(DatasheetCostModel(RoundCluster(), k).DispatchNvlinkShare(across), 0.18367, 1e-5);
  // EP 1 moves nothing.
  inside.ep = 1;
  EXPECT_EQ(DatasheetCostModel(RoundCluster()).DispatchNvlinkShare(inside), 0.0);
}

TEST(DatasheetCostModelTest, BlackwellInterNodeDispatchStopsAtTheCeiling) {
  // The inter-node EP rate per GPU is the NIC's (0.65 x the port) up to the
  // 40 GB/s ceiling (DataSetPriors, set from the GPT-OSS-120B EP 64 HGX rows
  // by the fitting rule): B200's 400G port gives 32.5 GB/s, under it; B300's
  // 800G port would give 65 GB/s and stops at 40.
  for (const char* name : {"b200", "b300"}) {
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset(name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(PriorConstantsFor(c->gpu).dispatch_scaleout_max_bytes_per_sec, 40e9) << name;
  }
  absl::StatusOr<ClusterSpec> b200 = LoadClusterPreset("b200");
  absl::StatusOr<ClusterSpec> b300 = LoadClusterPreset("b300");
  ASSERT_TRUE(b200.ok() && b300.ok());
  // Inter-node only (one GPU per domain): the NIC path alone.
  const DispatchShape d{16384, 5760, 4, 8, 1, false};
  const double t200 = DatasheetCostModel(*b200).Dispatch(d).seconds;
  const double t300 = DatasheetCostModel(*b300).Dispatch(d).seconds;
  EXPECT_LT(t300, t200);
  // Lifting the ceiling: B300 gets faster (it was ceiling-bound), B200 does
  // not (NIC-bound).
  PriorConstants k200 = PriorConstantsFor(b200->gpu);
  PriorConstants k300 = PriorConstantsFor(b300->gpu);
  k200.dispatch_scaleout_max_bytes_per_sec = 1e12;
  k300.dispatch_scaleout_max_bytes_per_sec = 1e12;
  EXPECT_DOUBLE_EQ(DatasheetCostModel(*b200, k200).Dispatch(d).seconds, t200);
  EXPECT_LT(DatasheetCostModel(*b300, k300).Dispatch(d).seconds, t300);
}

TEST(DatasheetCostModelTest, DedupNeverSlowerAndScaleOutSlower) {
  const DatasheetCostModel cm(RoundCluster());
  for (int ep : {2, 8, 16, 64, 256}) {
    for (int k : {1, 2, 4, 8}) {
      DispatchShape d{4096, 7168, k, ep, std::min(ep, 8), false};
      const double a2a = cm.Dispatch(d).seconds;
      d.dedup = true;
      EXPECT_LE(cm.Dispatch(d).seconds, a2a + 1e-12) << "ep=" << ep << " k=" << k;
      // The same EP group squeezed into fewer GPUs per domain (more traffic
      // over the NIC) is never faster.
      DispatchShape wide{4096, 7168, k, ep, 1, false};
      EXPECT_GE(cm.Dispatch(wide).seconds, a2a) << "ep=" << ep << " k=" << k;
    }
  }
}

TEST(DatasheetCostModelTest, GroupedGemmLoopCostsMore) {
  const DatasheetCostModel cm(RoundCluster());
  GroupedGemmShape g{32, 1024, 1.0, 4096, 7168, Precision::kFp8, true};
  const double grouped = cm.GroupedGemm(g).seconds;
  g.grouped = false;
  // 32 experts x 6 us per launch = 192 us more.
  EXPECT_NEAR(cm.GroupedGemm(g).seconds - grouped, 192 * kMicrosecond, 1e-9);
  // Imbalance 1.5 costs 1.5x the compute part.
  g.grouped = true;
  g.imbalance = 1.5;
  EXPECT_NEAR(cm.GroupedGemm(g).seconds - 3 * kMicrosecond,
              1.5 * (grouped - 3 * kMicrosecond), 1e-9);
}

TEST(DatasheetCostModelTest, HostOffloadAndAttention) {
  const DatasheetCostModel cm(RoundCluster());
  // 1 GB over 50 GB/s x 0.85 = 23,529.41 us.
  EXPECT_NEAR(cm.HostOffload(1e9).seconds / kMicrosecond, 23529.41, 0.01);
  // Flash attention: 2 x 4096 queries x 2048 keys x 32 heads x 256 dims
  // = 1.3744e11 FLOPs / (1e15 x 0.55) = 249.89 us + 3 us.
  AttentionShape a{4096, 2048, 4096, 32, 128, 128, true};
  EXPECT_NEAR(cm.AttentionForward(a).seconds / kMicrosecond, 252.89, 0.01);
  // Backward 2.7x the forward.
  EXPECT_NEAR(cm.AttentionBackward(a).seconds / cm.AttentionForward(a).seconds, 2.7,
              1e-12);
  // Unfused attention over the same shape is slower.
  a.fused = false;
  EXPECT_GT(cm.AttentionForward(a).seconds, 252.89 * kMicrosecond);
}

TEST(DatasheetCostModelTest, FusedAttentionIsBoundByTheSlowerOfMmaAndExponentials) {
  absl::StatusOr<ClusterSpec> b200 = LoadClusterPreset("b200");
  absl::StatusOr<ClusterSpec> b300 = LoadClusterPreset("b300");
  absl::StatusOr<ClusterSpec> h100 = LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(b200.ok() && b300.ok() && h100.ok());
  const DatasheetCostModel blackwell(*b200), ultra(*b300), hopper(*h100);
  // 4,096 queries x 2,048 keys x 64 heads = 5.3687e8 scores.
  AttentionShape d64{4096, 2048, 4096, 64, 64, 64, true};
  AttentionShape d128 = d64;
  d128.qk_head_dim = d128.v_head_dim = 128;
  const double fixed = blackwell.constants().gemm_fixed_s;
  // B200, head dim 64: MMA 2 x 5.3687e8 x 128 = 1.3744e11 FLOPs; the
  // exponentials 5.3687e8 x 512 = 2.7488e11 FLOP-equivalents bound it:
  // / (2.25e15 x 0.55) = 222.13 us.
  EXPECT_NEAR((blackwell.AttentionForward(d64).seconds - fixed) / kMicrosecond, 222.13, 0.01);
  // Head dim 128 is balanced on B200 (256 x 2 = 512 FLOPs per score): the
  // same time, twice the FLOPs.
  EXPECT_NEAR(blackwell.AttentionForward(d128).seconds, blackwell.AttentionForward(d64).seconds,
              1e-12);
  // Backward: 2.7 x the MMA time (111.06 us) = 299.87 us exceeds the
  // exponentials' 222.13 us, so it stays MMA-bound.
  EXPECT_NEAR((blackwell.AttentionBackward(d64).seconds - 2.7 * fixed) / kMicrosecond, 299.87,
              0.01);
  // Blackwell Ultra's doubled SFU rate and Hopper's slower tensor cores
  // leave head dim 64 bound by the MMA: twice as fast as head dim 128.
  for (const DatasheetCostModel* cm : {&ultra, &hopper}) {
    const double f = cm->constants().gemm_fixed_s;
    EXPECT_NEAR((cm->AttentionForward(d128).seconds - f) /
                    (cm->AttentionForward(d64).seconds - f),
                2.0, 1e-9);
  }
}

TEST(InterpolateTest, PiecewiseLinearRateInLogSize) {
  // (1 MB, 100 us) -> 10 GB/s; (100 MB, 2 ms) -> 50 GB/s. At 10 MB, halfway
  // in log size: 30 GB/s -> 333.33 us. Outside: the edge rate.
  const MeasuredCurve c{{1e6, 1e8}, {100e-6, 2e-3}};
  EXPECT_NEAR(InterpolateSeconds(c, 1e7) / kMicrosecond, 333.333, 0.001);
  EXPECT_NEAR(InterpolateSeconds(c, 1e6) / kMicrosecond, 100.0, 1e-9);
  EXPECT_NEAR(InterpolateSeconds(c, 1e5) / kMicrosecond, 10.0, 1e-9);
  EXPECT_NEAR(InterpolateSeconds(c, 1e9) / kMicrosecond, 20000.0, 1e-6);
}

TEST(CalibratedCostModelTest, UsesTablesAndFallsBackPerTerm) {
  auto prior = std::make_shared<DatasheetCostModel>(RoundCluster());
  CalibrationTables t;
  t.cluster_name = "round";
  t.collectives.push_back(
      {CollectiveKind::kAllGather, LinkSpan::kNvlinkDomain, 8, {{1e6, 1e8}, {100e-6, 2e-3}}});
  t.host_offload = {{1e6, 1e9}, {30e-6, 25e-3}};
  absl::StatusOr<std::unique_ptr<CalibratedCostModel>> cm =
      CalibratedCostModel::Create(t, prior);
  ASSERT_TRUE(cm.ok()) << cm.status();
  const Cost measured = (*cm)->Collective(CollectiveKind::kAllGather, 1e7, 8,
                                          LinkSpan::kNvlinkDomain);
  EXPECT_EQ(measured.source, CostSource::kCalibrated);
  EXPECT_NEAR(measured.seconds / kMicrosecond, 333.333, 0.001);
  // Group of 4 from the 8-rank table: scaled by (3/4) / (7/8).
  EXPECT_NEAR((*cm)->Collective(CollectiveKind::kAllGather, 1e7, 4,
                                LinkSpan::kNvlinkDomain).seconds / kMicrosecond,
              333.333 * (0.75 / 0.875), 0.001);
  // No table for reduce-scatter or scale-out: the prior, and it says so.
  const Cost fallback = (*cm)->Collective(CollectiveKind::kReduceScatter, 1e7, 8,
                                          LinkSpan::kNvlinkDomain);
  EXPECT_EQ(fallback.source, CostSource::kDatasheetPrior);
  EXPECT_EQ(fallback.seconds, prior->Collective(CollectiveKind::kReduceScatter, 1e7,
                                                8, LinkSpan::kNvlinkDomain).seconds);
  EXPECT_EQ((*cm)->DenseGemm(1024, 1024, 1024, Precision::kBf16).source,
            CostSource::kDatasheetPrior);
  EXPECT_EQ((*cm)->HostOffload(1e9).source, CostSource::kCalibrated);
  EXPECT_NEAR((*cm)->HostOffload(1e9).seconds, 25e-3, 1e-12);
}

TEST(CalibratedCostModelTest, GroupedGemmInterpolatesOverTokensPerExpertNAndK) {
  auto prior = std::make_shared<DatasheetCostModel>(RoundCluster());
  CalibrationTables t;
  GroupedGemmTable g;
  g.precision = Precision::kBf16;
  g.grouped = true;
  // 8 experts x [t x 4096] x [4096 x 2048]: 2 * 8 * t * 2048 * 4096 FLOPs =
  // t * 134,217,728. t = 256: 34.36 GFLOP in 100 us (343.6 TFLOP/s);
  // t = 1024: 137.4 GFLOP in 200 us (687.2 TFLOP/s).
  g.points.push_back({256, 2048, 4096, 8, 1.0, 100e-6});
  g.points.push_back({1024, 2048, 4096, 8, 1.0, 200e-6});
  t.grouped_gemm.push_back(g);
  auto cm = CalibratedCostModel::Create(t, prior);
  ASSERT_TRUE(cm.ok()) << cm.status();
  GroupedGemmShape q{8, 512, 1.0, 2048, 4096, Precision::kBf16, true};
  // t = 512, halfway in log t: rate (343.6 + 687.2) / 2 = 515.4 TFLOP/s;
  // 68.72 GFLOP / 515.4 TFLOP/s = 133.33 us.
  const Cost c = (*cm)->GroupedGemm(q);
  EXPECT_EQ(c.source, CostSource::kCalibrated);
  EXPECT_NEAR(c.seconds / kMicrosecond, 133.333, 0.001);
  // Tokens per expert matter at equal FLOPs: 16 experts of 256 tokens run at
  // the 256-token rate (200 us), not at the 512-token one (133 us).
  GroupedGemmShape more_smaller{16, 256, 1.0, 2048, 4096, Precision::kBf16, true};
  EXPECT_NEAR((*cm)->GroupedGemm(more_smaller).seconds / kMicrosecond, 200.0, 1e-6);
  // The busiest GPU's imbalance raises its tokens per expert: 256 x 2 = 512.
  GroupedGemmShape skewed{8, 256, 2.0, 2048, 4096, Precision::kBf16, true};
  EXPECT_NEAR((*cm)->GroupedGemm(skewed).seconds / kMicrosecond, 133.333, 0.001);
  // Another (n, k) measured at twice the rate: a query between the two in
  // log n (n = 2896 ~ sqrt(2048 * 4096)) gets about the mean of the rates.
  g.points.push_back({256, 4096, 4096, 8, 1.0, 100e-6});    // 2x the FLOPs in the same time
  g.points.push_back({1024, 4096, 4096, 8, 1.0, 200e-6});
  t.grouped_gemm[0] = g;
  cm = CalibratedCostModel::Create(t, prior);
  ASSERT_TRUE(cm.ok());
  GroupedGemmShape between{8, 256, 1.0, 2896, 4096, Precision::kBf16, true};
  // rates 343.6 and 687.2 TFLOP/s, equal weights -> 515.4 TFLOP/s;
  // 2 * 8 * 256 * 2896 * 4096 = 48.59 GFLOP -> 94.28 us.
  EXPECT_NEAR((*cm)->GroupedGemm(between).seconds / kMicrosecond, 94.28, 0.05);
  // No table for the loop form: the prior.
  q.grouped = false;
  EXPECT_EQ((*cm)->GroupedGemm(q).source, CostSource::kDatasheetPrior);
}

TEST(FitAlphaBetaTest, RecoversLatencyAndBandwidthPerSizeRange) {
  // Up to 64 KiB: 10 us + bytes / 1 GB/s; above 4 MiB: 50 us + bytes / 100 GB/s
  // (two points each; the middle range has none and is merged away).
  MeasuredCurve c;
  for (double x : {1024.0, 32768.0}) c.sizes.push_back(x), c.seconds.push_back(10e-6 + x / 1e9);
  for (double x : {8e6, 64e6}) c.sizes.push_back(x), c.seconds.push_back(50e-6 + x / 1e11);
  double err = 1;
  const std::vector<AlphaBetaSegment> fit = FitAlphaBeta(c, &err);
  ASSERT_EQ(fit.size(), 2u);
  EXPECT_NEAR(fit[0].alpha_seconds, 10e-6, 1e-12);
  EXPECT_NEAR(1 / fit[0].seconds_per_byte, 1e9, 1e3);
  EXPECT_NEAR(fit[1].alpha_seconds, 50e-6, 1e-11);
  EXPECT_NEAR(1 / fit[1].seconds_per_byte, 1e11, 1e5);
  EXPECT_LT(err, 1e-9);
  EXPECT_NEAR(AlphaBetaSeconds(fit, 16e6), 50e-6 + 16e6 / 1e11, 1e-12);
}

TEST(CalibratedCostModelTest, CollectiveBetweenMeasuredGroupSizesInterpolates) {
  auto prior = std::make_shared<DatasheetCostModel>(RoundCluster());
  CalibrationTables t;
  // all-reduce, one segment each: 8 ranks 20 us + bytes / 100 GB/s,
  // 32 ranks 40 us + bytes / 50 GB/s (both measured at 1 MB and 64 MB).
  for (auto [n, alpha, bw] : {std::tuple<int, double, double>{8, 20e-6, 1e11}, {32, 40e-6, 5e10}}) {
    CollectiveTable c{CollectiveKind::kAllReduce, LinkSpan::kScaleOut, n, {}, {}, {}};
    for (double x : {1e6, 64e6}) c.bytes_curve.sizes.push_back(x), c.bytes_curve.seconds.push_back(alpha + x / bw);
    double err = 0;
    c.fit = FitAlphaBeta(c.bytes_curve, &err);
    t.collectives.push_back(c);
  }
  auto cm = CalibratedCostModel::Create(t, prior);
  ASSERT_TRUE(cm.ok()) << cm.status();
  // Exact group sizes: the fits.
  EXPECT_NEAR((*cm)->Collective(CollectiveKind::kAllReduce, 16e6, 8, LinkSpan::kScaleOut).seconds,
              20e-6 + 16e6 / 1e11, 1e-12);
  // 16 ranks, halfway in log n: each table scaled to 16 ranks (latency by
  // ring steps, bandwidth by the bus factor), then averaged.
  const double at16 = (*cm)->Collective(CollectiveKind::kAllReduce, 16e6, 16, LinkSpan::kScaleOut).seconds;
  const double lo = (*cm)->Collective(CollectiveKind::kAllReduce, 16e6, 8, LinkSpan::kScaleOut).seconds;
  const double hi = (*cm)->Collective(CollectiveKind::kAllReduce, 16e6, 32, LinkSpan::kScaleOut).seconds;
  EXPECT_GT(at16, lo);
  EXPECT_LT(at16, hi);
  EXPECT_EQ((*cm)->Collective(CollectiveKind::kAllReduce, 16e6, 16, LinkSpan::kScaleOut).source,
            CostSource::kCalibrated);
}

TEST(CalibratedCostModelTest, RejectsMalformedTables) {
  auto prior = std::make_shared<DatasheetCostModel>(RoundCluster());
  CalibrationTables t;
  t.dense_gemm.push_back({Precision::kBf16, {{1e9, 1e8}, {1e-3, 1e-4}}});
  EXPECT_THAT(CalibratedCostModel::Create(t, prior),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not strictly increasing")));
  t.dense_gemm = {{Precision::kBf16, {{1e9}, {1e-3, 2e-3}}}};
  EXPECT_THAT(CalibratedCostModel::Create(t, prior),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 sizes vs 2")));
  t.dense_gemm.clear();
  t.collectives.push_back({CollectiveKind::kAllGather, LinkSpan::kScaleOut, 1, {{1e6}, {1e-4}}});
  EXPECT_THAT(CalibratedCostModel::Create(t, prior),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("group_size=1")));
  EXPECT_THAT(CalibratedCostModel::Create(CalibrationTables{}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a prior")));
}

}  // namespace
}  // namespace moetune::planner
