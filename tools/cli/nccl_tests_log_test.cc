#include "tools/cli/nccl_tests_log.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "server/fitting.h"

namespace moetune::cli {
namespace {

namespace k = ::moetune::kernels;
namespace p = ::moetune::planner;
using ::testing::HasSubstr;

// A synthetic all_reduce_perf log in nccl-tests' layout: 8 ranks on two
// hosts, times 20 us + bytes / 40 GB/s (out of place) and 1% faster in place.
std::string SyntheticLog(bool with_root = true, const char* wrong_col = "#wrong", int wrong_at = -1) {
  std::string s =
      "$ mpirun -np 8 ./build/all_reduce_perf -b 1K -e 64M -f 4 -g 1\n"
      "# nccl-tests version 2.17.1 nccl-headers=22809 nccl-library=22809\n"
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 67108864 step: 4(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n";
  for (int r = 0; r < 8; ++r) {
    char line[200];
    std::snprintf(line, sizeof(line), "#  Rank %2d Group  0 Pid %6d on %s device  %d [0000:%02x:00] NVIDIA H100 80GB HBM3\n",
                  r, 1000 + r, r < 4 ? "node-a" : "node-b", r % 4, 16 + r);
    s += line;
  }
  s += "#\n#                                  out-of-place                       in-place\n";
  s += std::string("#       size         count      type   redop") + (with_root ? "    root" : "") +
       "     time   algbw   busbw " + wrong_col + "     time   algbw   busbw " + wrong_col + "\n";
  s += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  int i = 0;
  for (double bytes = 1024; bytes <= 64 << 20; bytes *= 4, ++i) {
    const double t = 20 + bytes / 40e9 * 1e6;
    char line[300];
    std::snprintf(line, sizeof(line), "%12.0f  %12.0f     float     sum%s  %7.2f  %6.2f  %6.2f  %5d  %7.2f  %6.2f  %6.2f  %5d\n",
                  bytes, bytes / 4, with_root ? "      -1" : "", t, bytes / t / 1e3, 1.75 * bytes / t / 1e3,
                  i == wrong_at ? 3 : 0, 0.99 * t, bytes / t / 1e3, 1.75 * bytes / t / 1e3, 0);
    s += line;
  }
  s += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.3\n";
  return s;
}

TEST(ParseNcclTestsLog, ReadsDevicesColumnsAndRows) {
  const std::string text = SyntheticLog();
  absl::StatusOr<NcclTestsLog> log = ParseNcclTestsLog(text);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->op, k::CollectiveOp::kAllReduce);
  EXPECT_EQ(log->ranks, 8);
  EXPECT_EQ(log->hosts.size(), 2u);
  EXPECT_EQ(log->device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log->nccl_version, "2.28.9");
  ASSERT_EQ(log->rows.size(), 9u);  // 1 KiB, 4 KiB, ..., 64 MiB
  EXPECT_EQ(log->rows[0].bytes, 1024);
  EXPECT_EQ(log->rows[0].type, "float");
  EXPECT_NEAR(log->rows[0].out_of_place_us, 20.03, 0.01);
  ASSERT_TRUE(log->rows[0].in_place_us.has_value());
  EXPECT_NEAR(*log->rows[0].in_place_us, 0.99 * 20.03, 0.01);
  // Older layout: no root column, "error" instead of "#wrong".
  absl::StatusOr<NcclTestsLog> old = ParseNcclTestsLog(SyntheticLog(false, "error"));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->rows.size(), 9u);
  EXPECT_NEAR(old->rows[8].out_of_place_us, 20 + 67108864 / 40e9 * 1e6, 0.01);
}

TEST(ParseNcclTestsLog, RefusesWrongResultsAndTextWithoutRows) {
  EXPECT_THAT(ParseNcclTestsLog(SyntheticLog(true, "#wrong", 2)).status().message(),
              HasSubstr("size 16384 has 3 wrong elements"));
  EXPECT_THAT(ParseNcclTestsLog("hello\nworld\n").status().message(), HasSubstr("no nccl-tests column header"));
}

TEST(NcclTestsResult, MeasurementsFollowTheProbeContract) {
  const std::string text = SyntheticLog();
  const NcclTestsLog log = *ParseNcclTestsLog(text);
  NcclTestsImport how;
  how.cluster = "pod-a";
  how.source = "ar.log";
  absl::StatusOr<v1::ProbeResult> r = NcclTestsResult(log, how, text);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind(), v1::PROBE_KIND_COLLECTIVE);
  EXPECT_EQ(r->measurements_size(), 9);
  const v1::Measurement& m = r->measurements(8);
  EXPECT_EQ(m.name(), "all_reduce/67108864");
  EXPECT_EQ(m.labels().at("group_size"), "8");
  EXPECT_EQ(m.labels().at("span"), "inter_node");  // two hosts
  EXPECT_EQ(m.labels().at("source"), "nccl-tests");
  EXPECT_EQ(m.bytes(), 67108864);
  EXPECT_EQ(r->provenance().cluster(), "pod-a");
  EXPECT_EQ(r->provenance().agent_id(), "import:ar.log");
  EXPECT_EQ(r->provenance().versions().nccl(), "2.28.9");
  EXPECT_EQ(r->provenance().host(), "node-a,node-b");
  // The same log imports under the same id; another cluster under another.
  EXPECT_EQ(NcclTestsResult(log, how, text)->result_id(), r->result_id());
  how.cluster = "pod-b";
  EXPECT_NE(NcclTestsResult(log, how, text)->result_id(), r->result_id());
  // Without a benchmark name in the text the op must be given.
  NcclTestsLog anonymous = log;
  anonymous.op.reset();
  EXPECT_THAT(NcclTestsResult(anonymous, how, text).status().message(), HasSubstr("give --op"));
}

// The imported log calibrates the cluster: the fitted all-reduce table moves
// the cost model's answer from the H100 preset's prior to the log's numbers.
TEST(NcclTestsResult, ImportedLogMovesTheCollectiveTerms) {
  const std::string text = SyntheticLog();
  NcclTestsImport how;
  how.cluster = "pod-a";
  how.source = "ar.log";
  const v1::ProbeResult r = *NcclTestsResult(*ParseNcclTestsLog(text), how, text);
  const server::ClusterFit fit = server::FitCluster("pod-a", {r}, {});
  ASSERT_EQ(fit.tables.size(), 1u);
  ASSERT_EQ(fit.tables[0].collectives.size(), 1u);
  const p::CollectiveTable& c = fit.tables[0].collectives[0];
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.span, p::LinkSpan::kScaleOut);
  EXPECT_EQ(c.provenance.agents, std::vector<std::string>{"import:ar.log"});
  // 20 us + bytes / 40 GB/s (the in-place samples 1% faster): the fit's
  // error stays within about 1%.
  EXPECT_LT(c.provenance.fit_max_rel_error, 0.02);
  auto cluster = p::LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(cluster.ok());
  auto prior = std::make_shared<p::DatasheetCostModel>(*cluster);
  auto cm = p::CalibratedCostModel::Create(fit.tables[0], prior);
  ASSERT_TRUE(cm.ok()) << cm.status();
  const p::Cost got = (*cm)->Collective(p::CollectiveKind::kAllReduce, 16e6, 8, p::LinkSpan::kScaleOut);
  EXPECT_EQ(got.source, p::CostSource::kCalibrated);
  const double log_time = (20 + 16e6 / 40e9 * 1e6) * 1e-6 * 0.995;  // mean of the two runs
  EXPECT_NEAR(got.seconds, log_time, 0.02 * log_time);
  EXPECT_GT(std::fabs(got.seconds - prior->Collective(p::CollectiveKind::kAllReduce, 16e6, 8,
                                                      p::LinkSpan::kScaleOut).seconds),
            0.05 * log_time);
}

}  // namespace
}  // namespace moetune::cli
