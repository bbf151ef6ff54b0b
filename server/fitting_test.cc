#include "server/fitting.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/measurement_roles.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
namespace p = ::moetune::planner;
namespace kernels = ::moetune::kernels;
namespace roles = ::moetune::kernels::roles;
using ::testing::ElementsAre;

// A grouped GEMM result as the probes write it (kernels/measurement_roles.h):
// 8 experts of [tokens x 1024] x [1024 x 1024], fwd pass.
v1::ProbeResult Gemm(const std::string& agent, double grouped_s, double tokens_per_expert) {
  v1::ProbeResult r;
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  r.set_params_json(R"({"kind":"grouped_gemm","num_experts":8,"dtype":"bf16"})");
  r.mutable_provenance()->set_agent_id(agent);
  r.mutable_provenance()->set_device_name("cpu-x");
  r.mutable_provenance()->set_compute_dtype("fp32");
  r.mutable_provenance()->set_world_size(1);
  const double flops = 2.0 * 8 * tokens_per_expert * 1024 * 1024;
  for (roles::GemmImpl impl : {roles::GemmImpl::kGrouped, roles::GemmImpl::kLoop}) {
    v1::Measurement* m = r.add_measurements();
    m->set_name(roles::GroupedGemmName(roles::GemmPass::kFwd, impl));
    std::map<std::string, std::string> labels;
    roles::SetGemmShapeLabels(roles::GroupedGemmShape(roles::GemmPass::kFwd, impl, 8,
                                                      static_cast<int64_t>(8 * tokens_per_expert),
                                                      static_cast<int64_t>(tokens_per_expert), 1024, 1024),
                              &labels);
    for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
    const double s = impl == roles::GemmImpl::kGrouped ? grouped_s : 2 * grouped_s;
    m->set_flops(flops);
    m->set_min_seconds(s);
    m->set_median_seconds(s);
  }
  return r;
}

TEST(FittingTest, GroupedGemmTableKeysPointsByTokensPerExpertNAndK) {
  // Three nodes measure 512 tokens per expert in 1, 2 and 3 ms (the table
  // answers their median, 2 ms), one 2048 tokens per expert in 4 ms.
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 512), Gemm("ci/b", 0.002, 512),
                                     Gemm("ci/c", 0.003, 512), Gemm("ci/a", 0.004, 2048)};
  ClusterFit fit = FitCluster("ci", rs, {});
  ASSERT_EQ(fit.tables.size(), 1u);
  const p::CalibrationTables& t = fit.tables[0];
  EXPECT_EQ(t.gpu_name, "cpu-x");
  ASSERT_EQ(t.grouped_gemm.size(), 2u);  // grouped and loop
  const p::GroupedGemmTable& g = t.grouped_gemm[0].grouped ? t.grouped_gemm[0] : t.grouped_gemm[1];
  EXPECT_EQ(g.precision, p::Precision::kBf16);
  ASSERT_EQ(g.points.size(), 4u);
  EXPECT_EQ(g.points[0].n, 1024);
  EXPECT_EQ(g.points[0].k, 1024);
  EXPECT_EQ(g.points[0].num_experts, 8);
  EXPECT_DOUBLE_EQ(p::GroupedGemmTableSeconds(g, 512, 8, 1024, 1024), 0.002);
  EXPECT_DOUBLE_EQ(p::GroupedGemmTableSeconds(g, 2048, 8, 1024, 1024), 0.004);
  // Provenance: the agents, 4 samples, and the largest deviation of a
  // sample from the table: a's 1 ms vs 2 ms, (2 - 1) / 1 = 1.
  EXPECT_THAT(g.provenance.agents, ElementsAre("ci/a", "ci/b", "ci/c"));
  EXPECT_EQ(g.provenance.samples, 4);
  EXPECT_DOUBLE_EQ(g.provenance.fit_max_rel_error, 1.0);
  EXPECT_TRUE(p::ValidateCalibrationTables(t).ok());
  EXPECT_EQ(fit.compute_dtypes.at("cpu-x"), "fp32");
  const nlohmann::json j = ToJson(fit);
  EXPECT_EQ(j["gpus"][0]["tables"][0]["provenance"]["agents"].size(), 3u) << j.dump();
}

TEST(FittingTest, SlowNodeIsFlaggedWithItsNumbers) {
  // a: 1 ms, b: 1.2 ms, c: 3 ms. c's peers' median = (1 + 1.2) / 2 = 1.1 ms;
  // 3 / 1.1 = 2.73 > 1.5, so c is flagged; b's peers (1, 3) -> 2 ms, not slow.
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 512), Gemm("ci/b", 0.0012, 512),
                                     Gemm("ci/c", 0.003, 512)};
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
  std::vector<v1::ProbeResult> rs = {Gemm("ci/a", 0.001, 512), Gemm("ci/b", 0.001, 512),
                                     Gemm("ci/c", 0.001, 512)};
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
  ClusterFit fit = FitCluster("ci", {Gemm("ci/a", 0.001, 512), Gemm("ci/c", 0.01, 512)}, {});
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
    m->set_name(roles::CollectiveName(kernels::CollectiveOp::kAllToAll, static_cast<int64_t>(bytes)));
    (*m->mutable_labels())[roles::kLabelOp] = "all_to_all";
    (*m->mutable_labels())[roles::kLabelSpan] = "inter_node";
    (*m->mutable_labels())[roles::kLabelGroupSize] = "2";
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
  // One size per range: merged into one alpha-beta segment, 1 GB/s, no latency.
  ASSERT_EQ(fit.tables[0].collectives[0].fit.size(), 1u);
  EXPECT_NEAR(fit.tables[0].collectives[0].fit[0].seconds_per_byte, 1e-9, 1e-15);
  EXPECT_NEAR(fit.tables[0].collectives[0].fit[0].alpha_seconds, 0, 1e-12);
  EXPECT_LT(fit.tables[0].collectives[0].provenance.fit_max_rel_error, 1e-9);
  EXPECT_THAT(fit.tables[0].host_offload.sizes, ElementsAre(1048576.0));  // under_gemm excluded
}

}  // namespace
}  // namespace moetune::server
