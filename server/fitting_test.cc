#include "server/fitting.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
namespace p = ::moetune::planner;
using ::testing::ElementsAre;

v1::ProbeResult Gemm(const std::string& agent, double grouped_s, double flops) {
  v1::ProbeResult r;
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  r.set_params_json(R"({"kind":"grouped_gemm","num_experts":8,"dtype":"bf16"})");
  r.mutable_provenance()->set_agent_id(agent);
  r.mutable_provenance()->set_device_name("cpu-x");
  r.mutable_provenance()->set_compute_dtype("fp32");
  r.mutable_provenance()->set_world_size(1);
  v1::Measurement* m = r.add_measurements();
  m->set_name("fwd/grouped");
  m->set_flops(flops);
  m->set_min_seconds(grouped_s);
  m->set_median_seconds(grouped_s);
  v1::Measurement* loop = r.add_measurements();
  loop->set_name("fwd/loop");
  loop->set_flops(flops);
  loop->set_min_seconds(2 * grouped_s);
  loop->set_median_seconds(2 * grouped_s);
  return r;
}

TEST(FittingTest, GroupedGemmCurveMergesEqualSizesByMedian) {
  // Three nodes measure 1 GFLOP in 1, 2 and 3 ms: the point is the median, 2 ms.
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 1e9), Gemm("ci/b", 0.002, 1e9),
                                     Gemm("ci/c", 0.003, 1e9), Gemm("ci/a", 0.004, 4e9)};
  ClusterFit fit = FitCluster("ci", rs, {});
  ASSERT_EQ(fit.tables.size(), 1u);
  const p::CalibrationTables& t = fit.tables[0];
  EXPECT_EQ(t.gpu_name, "cpu-x");
  ASSERT_EQ(t.grouped_gemm.size(), 2u);  // grouped and loop
  const p::GroupedGemmTable& g = t.grouped_gemm[0].grouped ? t.grouped_gemm[0] : t.grouped_gemm[1];
  EXPECT_EQ(g.precision, p::Precision::kBf16);
  EXPECT_THAT(g.flops_curve.sizes, ElementsAre(1e9, 4e9));
  EXPECT_THAT(g.flops_curve.seconds, ElementsAre(0.002, 0.004));
  EXPECT_TRUE(p::ValidateCalibrationTables(t).ok());
  EXPECT_EQ(fit.compute_dtypes.at("cpu-x"), "fp32");
}

TEST(FittingTest, SlowNodeIsFlaggedWithItsNumbers) {
  // a: 1 ms, b: 1.2 ms, c: 3 ms. c's peers' median = (1 + 1.2) / 2 = 1.1 ms;
  // 3 / 1.1 = 2.73 > 1.5, so c is flagged; b's peers (1, 3) -> 2 ms, not slow.
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 1e9), Gemm("ci/b", 0.0012, 1e9),
                                     Gemm("ci/c", 0.003, 1e9)};
  ClusterFit fit = FitCluster("ci", rs, {});
  ASSERT_EQ(fit.stragglers.size(), 1u);
  const auto& flags = fit.stragglers.at("ci/c");
  ASSERT_EQ(flags.size(), 2u);  // fwd/grouped and fwd/loop
  EXPECT_DOUBLE_EQ(flags[0].node_seconds(), 0.003);
  EXPECT_DOUBLE_EQ(flags[0].peer_median_seconds(), 0.0011);
  EXPECT_NEAR(flags[0].ratio(), 2.7273, 1e-4);
}

TEST(FittingTest, StragglersCompareFastestSamplesNotMedians) {
  // c's median is 10x its peers' (contention), but its fastest sample matches
  // theirs: not a straggler.
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 1e9), Gemm("ci/b", 0.001, 1e9),
                                     Gemm("ci/c", 0.001, 1e9)};
  for (auto* m : {rs[2].mutable_measurements(0), rs[2].mutable_measurements(1)}) {
    m->set_median_seconds(10 * m->median_seconds());
  }
  EXPECT_TRUE(FitCluster("ci", rs, {}).stragglers.empty());
}

TEST(FittingTest, CudaDeviceNamesMatchTheirPresetGpu) {
  EXPECT_TRUE(SameGpuModel("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 (80GB)"));
  EXPECT_TRUE(SameGpuModel("NVIDIA H200", "NVIDIA H200 SXM (141GB)"));
  EXPECT_TRUE(SameGpuModel("NVIDIA GB200", "NVIDIA GB200 (NVL72, 1200 W)"));
  EXPECT_FALSE(SameGpuModel("NVIDIA B200", "NVIDIA GB200 (NVL72, 1200 W)"));
  EXPECT_FALSE(SameGpuModel("NVIDIA H800", "NVIDIA H100 SXM5 (80GB)"));
  EXPECT_FALSE(SameGpuModel("AMD EPYC 9654 96-Core Processor", "NVIDIA GB200 (NVL72, 1200 W)"));
  EXPECT_TRUE(SameGpuModel("cpu-x", "cpu-x"));
}

TEST(FittingTest, TwoNodesAreTooFewToCallAStraggler) {
  ClusterFit fit = FitCluster("ci", {Gemm("ci/a", 0.001, 1e9), Gemm("ci/c", 0.01, 1e9)}, {});
  EXPECT_TRUE(fit.stragglers.empty());
}

TEST(FittingTest, DispatchSizeFollowsTheDispatchShapeConvention) {
  v1::ProbeResult r;
  r.set_kind(v1::PROBE_KIND_DISPATCH_COMBINE);
  r.set_params_json(
      R"({"kind":"dispatch_combine","tokens_per_rank":256,"hidden":256,"top_k":2,)"
      R"("ep_size":3,"ranks_per_node":1,"mode":"dedup_rank","dtype":"bf16"})");
  r.mutable_provenance()->set_device_name("cpu-x");
  r.mutable_provenance()->set_world_size(3);
  v1::Measurement* m = r.add_measurements();
  m->set_name("dispatch");
  m->set_median_seconds(0.0005);
  v1::ProbeResult failed = r;
  failed.set_error_code(4);
  ClusterFit fit = FitCluster("ci", {r, failed}, {});
  EXPECT_EQ(fit.results_used, 1);
  EXPECT_EQ(fit.results_failed, 1);
  ASSERT_EQ(fit.tables.size(), 1u);
  ASSERT_EQ(fit.tables[0].dispatch.size(), 1u);
  const p::DispatchTable& d = fit.tables[0].dispatch[0];
  EXPECT_TRUE(d.dedup);
  EXPECT_EQ(d.ep, 3);
  EXPECT_EQ(d.ep_gpus_per_domain, 1);
  // 256 tokens x top_k 2 x hidden 256 x 2 bytes = 262,144 bytes.
  EXPECT_THAT(d.bytes_curve.sizes, ElementsAre(262144.0));
}

TEST(FittingTest, CollectiveSpanAndOffloadPointsAreRecognised) {
  v1::ProbeResult c;
  c.set_kind(v1::PROBE_KIND_COLLECTIVE);
  c.set_params_json(R"({"kind":"collective","op":"all_to_all","group_size":2,"span":"inter_node"})");
  c.mutable_provenance()->set_device_name("g");
  c.mutable_provenance()->set_world_size(2);
  for (double bytes : {65536.0, 1048576.0}) {
    v1::Measurement* m = c.add_measurements();
    m->set_name("all_to_all/" + std::to_string(static_cast<int>(bytes)));
    m->set_bytes(bytes);
    m->set_median_seconds(bytes / 1e9);
  }
  v1::ProbeResult o;
  o.set_kind(v1::PROBE_KIND_OFFLOAD);
  o.set_params_json(R"({"kind":"offload"})");
  o.mutable_provenance()->set_device_name("g");
  for (const char* name : {"h2d/pinned/1048576", "h2d/pinned/1048576/under_gemm"}) {
    v1::Measurement* m = o.add_measurements();
    m->set_name(name);
    m->set_bytes(1048576);
    m->set_median_seconds(0.001);
  }
  ClusterFit fit = FitCluster("ci", {c, o}, {});
  ASSERT_EQ(fit.tables.size(), 1u);
  ASSERT_EQ(fit.tables[0].collectives.size(), 1u);
  EXPECT_EQ(fit.tables[0].collectives[0].kind, p::CollectiveKind::kAllToAll);
  EXPECT_EQ(fit.tables[0].collectives[0].span, p::LinkSpan::kScaleOut);
  EXPECT_EQ(fit.tables[0].collectives[0].group_size, 2);
  EXPECT_EQ(fit.tables[0].collectives[0].bytes_curve.sizes.size(), 2u);
  EXPECT_THAT(fit.tables[0].host_offload.sizes, ElementsAre(1048576.0));  // under_gemm excluded
}

}  // namespace
}  // namespace moetune::server
