#include "kernels/probe_result.h"

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"

namespace moetune::kernels {
namespace {

TEST(Summarize, MinMedianMax) {
  SampleSummary s = Summarize({3.0, 1.0, 2.0});
  EXPECT_EQ(s.min_seconds, 1.0);
  EXPECT_EQ(s.median_seconds, 2.0);
  EXPECT_EQ(s.max_seconds, 3.0);
  EXPECT_EQ(Summarize({4.0, 1.0, 2.0, 3.0}).median_seconds, 2.5);  // (2 + 3) / 2
  EXPECT_EQ(Summarize({}).median_seconds, 0.0);
}

TEST(BusBandwidthFactor, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllReduce, 8), 1.75);  // 2*7/8
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllGather, 4), 0.75);  // 3/4
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOp::kAllToAll, 1), 0.0);
}

TEST(Measurement, FinalizeDerivesRatesFromPlannerStatistic) {
  Measurement m;
  m.samples_seconds = {0.004, 0.001, 0.002};
  m.flops = 2e9;       // 2 GFLOP in 2 ms (median) = 1 TFLOPS
  m.bytes = 1e9;       // 1 GB in 2 ms = 500 GB/s
  m.bus_factor = 1.5;  // bus 750 GB/s
  m.Finalize();
  EXPECT_DOUBLE_EQ(*m.tflops, 1.0);
  EXPECT_DOUBLE_EQ(*m.alg_bw_gbps, 500.0);
  EXPECT_DOUBLE_EQ(*m.bus_bw_gbps, 750.0);
  m.planner_statistic = Statistic::kMin;  // 1 ms
  m.Finalize();
  EXPECT_DOUBLE_EQ(*m.tflops, 2.0);
}

TEST(ToJson, IsValidJsonWithProvenanceAndSamples) {
  ProbeResult r;
  r.kind = ProbeKind::kCollective;
  r.params_json = ParamsToJson(CollectiveParams{});
  r.provenance.host = "h\"1";
  r.provenance.env = {{"NCCL_ALGO", "Ring"}};
  Measurement m;
  m.name = "all_reduce";
  m.labels = {{"size_bytes", "1024"}};
  m.samples_seconds = {1e-3, 2e-3};
  m.bytes = 1024;
  m.Finalize();
  r.measurements.push_back(m);
  const auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["schema_version"], kProbeResultSchemaVersion);
  EXPECT_EQ(j["kind"], "collective");
  EXPECT_EQ(j["params"]["op"], "all_reduce");
  EXPECT_EQ(j["provenance"]["host"], "h\"1");
  EXPECT_EQ(j["provenance"]["env"]["NCCL_ALGO"], "Ring");
  EXPECT_EQ(j["measurements"][0]["samples_s"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["measurements"][0]["median_s"].get<double>(), 1.5e-3);
  EXPECT_EQ(j["measurements"][0]["planner_statistic"], "median");
}

TEST(ToTable, UnimplementedMeasurementPrintsItsReasonInsteadOfATime) {
  ProbeResult r;
  Measurement timed;
  timed.name = "fwd/loop";
  timed.samples_seconds = {2e-6};
  timed.Finalize();
  Measurement skipped;
  skipped.name = "fwd/grouped";
  skipped.labels = {{"unimplemented", "no mxfp8 path"}};
  skipped.Finalize();
  r.measurements = {timed, skipped};
  const std::string table = ToTable(r);
  EXPECT_NE(table.find("fwd/loop"), std::string::npos);
  EXPECT_NE(table.find("2.000 us"), std::string::npos);
  EXPECT_NE(table.find("fwd/grouped                  unimplemented: no mxfp8 path\n"), std::string::npos)
      << table;
}

}  // namespace
}  // namespace moetune::kernels
