// The calibration loop end to end on the CPU twins: every CPU probe runs for
// real (small sizes; multi-rank ones as threads over an in-memory
// rendezvous), its results go through the agent's proto conversion and the
// server's fitting, and the fitted tables must (a) be non-empty for every
// probe kind and (b) change the cost model's answers from the datasheet
// prior. A measurement renamed on one side of kernels/measurement_roles.h
// but not the other leaves a table empty here.
#include <thread>

#include "agent/task_convert.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_probes.h"
#include "kernels/rendezvous.h"
#include "planner/cost_model.h"
#include "server/fitting.h"

namespace moetune::server {
namespace {

namespace k = ::moetune::kernels;
namespace p = ::moetune::planner;
namespace v1 = ::moetune::v1;

k::TimingOptions Quick() {
  k::TimingOptions t;
  t.warmup_iters = 1;
  t.timed_iters = 3;
  return t;
}

void AddResult(const k::ProbeResult& r, int rank, std::vector<v1::ProbeResult>* out) {
  v1::ProbeResult proto = agent::ToResultProto(r);
  proto.mutable_provenance()->set_agent_id("ci/agent" + std::to_string(rank));
  out->push_back(proto);
}

// Runs `params` on `world` ranks (threads, in-memory store) and keeps every
// rank's result.
void RunOnRanks(const k::ProbeParams& params, int world, const std::string& prefix,
                std::vector<v1::ProbeResult>* out) {
  auto store = k::MakeInMemoryRendezvousStore();
  std::vector<k::ProbeResult> results(world);
  std::vector<k::ProbeStatus> status(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      k::GroupSpec g;
      g.rank = r;
      g.world_size = world;
      g.store = world > 1 ? store : nullptr;
      g.key_prefix = prefix;
      g.timeout = std::chrono::milliseconds(30000);
      status[r] = k::cpu::RunCpuProbe(params, g, &results[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(status[r].ok()) << prefix << " rank " << r << ": " << status[r].ToString();
    AddResult(results[r], r, out);
  }
}

TEST(CalibrationLoop, EveryCpuProbeFillsATableAndMovesThePrediction) {
  std::vector<v1::ProbeResult> results;
  // Grouped GEMM at two token counts (8 experts, K = 256, N = 128).
  for (int64_t tokens : {512, 2048}) {
    k::GroupedGemmParams g;
    g.num_experts = 8;
    g.total_tokens = tokens;
    g.hidden = 256;
    g.ffn_hidden = 128;
    g.dtype = k::DType::kBf16;
    g.timing = Quick();
    RunOnRanks(g, 1, "gemm" + std::to_string(tokens), &results);
  }
  k::CollectiveParams c;
  c.op = k::CollectiveOp::kAllReduce;
  c.group_size = 2;
  c.sizes_bytes = {4096, 65536, 1 << 20};
  c.timing = Quick();
  RunOnRanks(c, 2, "coll", &results);
  k::DispatchCombineParams d;
  d.tokens_per_rank = 128;
  d.hidden = 64;
  d.num_experts = 4;
  d.top_k = 2;
  d.ep_size = 2;
  d.timing = Quick();
  RunOnRanks(d, 2, "dc", &results);
  k::OffloadParams o;
  o.sizes_bytes = {1 << 20, 4 << 20};
  o.gemm_m = o.gemm_n = o.gemm_k = 128;
  o.timing = Quick();
  RunOnRanks(o, 1, "offload", &results);
  k::OverlapParams v;
  v.gemm_m = v.gemm_n = v.gemm_k = 128;
  v.collective_bytes = 1 << 18;
  v.group_size = 2;
  v.timing = Quick();
  RunOnRanks(v, 2, "overlap", &results);

  const ClusterFit fit = FitCluster("ci", results, {});
  EXPECT_EQ(fit.results_failed, 0);
  ASSERT_EQ(fit.tables.size(), 1u);  // one CPU model
  const p::CalibrationTables& t = fit.tables[0];
  ASSERT_EQ(t.dense_gemm.size(), 1u);
  ASSERT_EQ(t.grouped_gemm.size(), 2u);  // grouped and loop
  for (const p::GroupedGemmTable& g : t.grouped_gemm) {
    // fwd (n 128, k 256) and bwd_data (n 256, k 128) at 64 and 256 tokens per expert.
    EXPECT_EQ(g.points.size(), 4u);
    EXPECT_FALSE(g.provenance.agents.empty());
  }
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.collectives[0].group_size, 2);
  EXPECT_EQ(t.collectives[0].bytes_curve.sizes.size(), 3u);
  EXPECT_FALSE(t.collectives[0].fit.empty());
  EXPECT_EQ(t.collectives[0].provenance.agents.size(), 2u);  // both ranks' agents
  ASSERT_EQ(t.dispatch.size(), 1u);
  EXPECT_EQ(t.host_offload.sizes.size(), 2u);
  ASSERT_EQ(t.overlap.size(), 1u);
  ASSERT_TRUE(p::ValidateCalibrationTables(t).ok()) << p::ValidateCalibrationTables(t);

  // The calibrated model answers differently from the prior, and says so.
  absl::StatusOr<p::ClusterSpec> cluster = p::LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto prior = std::make_shared<p::DatasheetCostModel>(*cluster);
  auto calibrated = p::CalibratedCostModel::Create(t, prior);
  ASSERT_TRUE(calibrated.ok()) << calibrated.status();
  const p::CostModel& cm = **calibrated;
  auto changed = [&](const p::Cost& got, const p::Cost& was, const char* what) {
    EXPECT_EQ(got.source, p::CostSource::kCalibrated) << what;
    EXPECT_NE(got.seconds, was.seconds) << what;
    EXPECT_GT(got.seconds, 0) << what;
  };
  const p::GroupedGemmShape g{8, 128, 1.0, 128, 256, p::Precision::kBf16, true};
  changed(cm.GroupedGemm(g), prior->GroupedGemm(g), "grouped GEMM");
  p::GroupedGemmShape loop = g;
  loop.grouped = false;
  changed(cm.GroupedGemm(loop), prior->GroupedGemm(loop), "loop GEMM");
  changed(cm.DenseGemm(1024, 128, 256, p::Precision::kBf16), prior->DenseGemm(1024, 128, 256, p::Precision::kBf16),
          "dense GEMM");
  changed(cm.Collective(p::CollectiveKind::kAllReduce, 1e5, 2, p::LinkSpan::kNvlinkDomain),
          prior->Collective(p::CollectiveKind::kAllReduce, 1e5, 2, p::LinkSpan::kNvlinkDomain), "all-reduce");
  p::DispatchShape ds;
  ds.tokens = 128;
  ds.bytes_per_token = 64 * 2;
  ds.top_k = 2;
  ds.ep = 2;
  ds.ep_gpus_per_domain = 2;
  ds.dedup = true;
  changed(cm.Dispatch(ds), prior->Dispatch(ds), "dispatch");
  changed(cm.HostOffload(2e6), prior->HostOffload(2e6), "host offload");
  EXPECT_NE(cm.OverlapSlowdown(1), prior->OverlapSlowdown(1));
}

}  // namespace
}  // namespace moetune::server
