// Golden tests on the report's structure (sections, and the numbers they
// carry in data-* attributes), not on pixels.
//
// Golden files: testdata/<case>.structure.txt, the ExtractStructure() of the
// page for a hand-made fixture (internal/report_fixture.cc, where the
// arithmetic behind every number is written down). After an intended change
// to the page, regenerate them and review the diff:
//   MOETUNE_UPDATE_GOLDEN=1 bazel run //planner/report:report_test
#include "planner/report/report.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/report/internal/report_fixture.h"
#include "planner/report/internal/structure.h"
#include "planner/search.h"
#include "planner/units.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using report_internal::Element;
using report_internal::ExtractStructure;
using report_internal::ParseElements;
using ::testing::HasSubstr;
using ::moetune::testing::StatusIs;
using ::testing::Not;

std::string Golden(const std::string& name) {
  return "planner/report/testdata/" + name + ".structure.txt";
}

// Compares with the golden file, or rewrites it in the source tree when
// MOETUNE_UPDATE_GOLDEN is set under `bazel run`.
void ExpectMatchesGolden(const std::string& name, const std::string& actual) {
  const char* update = std::getenv("MOETUNE_UPDATE_GOLDEN");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (update != nullptr && workspace != nullptr) {
    std::ofstream out(std::string(workspace) + "/" + Golden(name),
                      std::ios::binary);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << Golden(name);
    return;
  }
  std::ifstream in(Golden(name), std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << Golden(name)
                         << "; regenerate: MOETUNE_UPDATE_GOLDEN=1 bazel run "
                            "//planner/report:report_test";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), actual)
      << "page structure changed; if intended, regenerate with "
         "MOETUNE_UPDATE_GOLDEN=1 bazel run //planner/report:report_test";
}

std::vector<Element> Find(const std::vector<Element>& all,
                          const std::string& attr, const std::string& value) {
  std::vector<Element> out;
  for (const Element& e : all) {
    if (e.Has(attr) && (value.empty() || e.Attr(attr) == value)) {
      out.push_back(e);
    }
  }
  return out;
}

double Num(const Element& e, const std::string& attr) {
  return std::stod(e.Attr(attr));
}

TEST(ReportGoldenTest, ToyMoe) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html,
                       RenderPlanReport(report_internal::ToyMoeReport()));
  ExpectMatchesGolden("toy_moe", ExtractStructure(html));
}

TEST(ReportGoldenTest, DenseNoPipeline) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(
      std::string html,
      RenderPlanReport(report_internal::DenseNoPipelineReport()));
  ExpectMatchesGolden("dense_no_pp", ExtractStructure(html));
}

TEST(ReportTest, HasEverySectionOnce) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html,
                       RenderPlanReport(report_internal::ToyMoeReport()));
  const std::vector<Element> all = ParseElements(html);
  for (const char* id : {"summary", "breakdown", "memory", "pareto",
                         "pipeline", "what-if", "top-k", "search"}) {
    const std::vector<Element> s = Find(all, "id", id);
    ASSERT_EQ(s.size(), 1u) << id;
    EXPECT_EQ(s[0].tag, "section") << id;
  }
}

TEST(ReportTest, FixtureNumbersByHand) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html,
                       RenderPlanReport(report_internal::ToyMoeReport()));
  const std::vector<Element> all = ParseElements(html);
  // 1,048,576 tokens per step / (0.9 s x 64 GPUs) = 18,204.4 tok/s/GPU.
  const auto tps = Find(all, "data-metric", "tokens_per_sec_per_gpu");
  ASSERT_EQ(tps.size(), 1u);
  EXPECT_NEAR(Num(tps[0], "data-value"), 18204.4, 0.1);
  EXPECT_THAT(html, HasSubstr(">18,204<"));
  // 64 GPUs x 18,204.4 = 1,165,084 tok/s in all.
  EXPECT_NEAR(Num(Find(all, "data-metric", "tokens_per_sec")[0], "data-value"),
              1165084.4, 10);  // 6 significant digits
  EXPECT_THAT(html, HasSubstr(">1,165,084<"));
  // Exposed segments sum to the 0.9 s step; hidden ones to 0.35 s.
  double exposed = 0, hidden = 0;
  const std::vector<Element> bars = Find(all, "data-bar", "");
  ASSERT_EQ(bars.size(), 2u);
  // Segments follow their bar in document order.
  std::string current;
  for (const Element& e : all) {
    if (e.Has("data-bar")) current = e.Attr("data-bar");
    if (e.tag == "rect" && e.Has("data-kind") && e.Has("data-seconds")) {
      (current == "hidden" ? hidden : exposed) += Num(e, "data-seconds");
    }
  }
  EXPECT_NEAR(exposed, 0.9, 1e-9);
  EXPECT_NEAR(hidden, 0.35, 1e-9);
  // 2 of 15 terms calibrated: "mixed"; (0.30 + 0.06) / 0.9 = 40.0% of the step.
  const auto summary = Find(all, "id", "summary");
  EXPECT_EQ(summary[0].Attr("data-cost-source"), "mixed");
  EXPECT_THAT(html, HasSubstr("3 of 15 terms come from calibration data (40.0%"));
  // Fitted 2026-11-27T06:00Z, report 2026-11-29T18:00Z: 2.5 days.
  const auto prov = Find(all, "data-calibration-age-days", "");
  ASSERT_EQ(prov.size(), 1u);
  EXPECT_DOUBLE_EQ(Num(prov[0], "data-calibration-age-days"), 2.5);
  // Memory parts sum to 68 GiB under the 80 GiB HBM line, 72 GiB limit.
  const auto mem = Find(all, "id", "memory")[0];
  EXPECT_NEAR(Num(mem, "data-parts-sum-bytes"), 68 * units::kGiB, 1e-5 * 68 * units::kGiB);
  EXPECT_EQ(Find(all, "data-line", "hbm").size(), 2u);  // memory + pareto
  EXPECT_EQ(Find(all, "data-line", "limit").size(), 1u);
  // Top-K: #2 differs from the best in vp only (and its figures), #3 in tp,
  // pp, vp and the dispatcher.
  std::vector<std::string> diff2, diff3;
  int row = 0;
  for (const Element& e : all) {
    if (e.tag == "tr" && e.Has("data-rank")) row = std::stoi(e.Attr("data-rank"));
    if (e.tag == "td" && e.Attr("data-diff") == "1") {
      (row == 2 ? diff2 : diff3).push_back(e.Attr("data-col"));
      EXPECT_NE(row, 1) << "the best plan differs from itself";
    }
  }
  EXPECT_THAT(diff2, ::testing::ElementsAre("tokens_per_sec_per_gpu",
                                            "step_time_s", "mfu",
                                            "peak_memory_bytes", "vp"));
  EXPECT_THAT(diff3, ::testing::ElementsAre(
                         "tokens_per_sec_per_gpu", "step_time_s", "mfu",
                         "peak_memory_bytes", "tp", "pp", "vp", "dispatcher"));
  // What-if: 8 rows, GPU x0.5 infeasible, scale-out x2 = 18,900 / 18,204.4.
  const auto rows = Find(all, "data-scenario", "");
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[6].Attr("data-feasible"), "0");
  EXPECT_NEAR(Num(rows[1], "data-ratio"), 18900 / 18204.444, 1e-5);
  EXPECT_EQ(rows[1].Attr("data-same-plan"), "1");
  EXPECT_EQ(rows[0].Attr("data-same-plan"), "0");
}

TEST(ReportTest, PipelineTimelineMatchesTheSchedule) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html,
                       RenderPlanReport(report_internal::ToyMoeReport()));
  const std::vector<Element> all = ParseElements(html);
  const Element s = Find(all, "id", "pipeline")[0];
  EXPECT_EQ(s.Attr("data-pp"), "4");
  EXPECT_EQ(s.Attr("data-vp"), "2");
  EXPECT_EQ(s.Attr("data-micro-batches"), "32");
  // Compute 0.65 s: forward 0.65/3, backward 2 x 0.65/3 + 0.05 recompute;
  // exposed TP+EP 0.08 s split in half; over 32 x 2 passes.
  EXPECT_NEAR(Num(s, "data-forward-s"), (0.65 / 3 + 0.04) / 64, 1e-8);
  EXPECT_NEAR(Num(s, "data-backward-s"), (1.3 / 3 + 0.05 + 0.04) / 64, 1e-8);
  EXPECT_EQ(s.Attr("data-ranks-drawn"), "3");
  const auto ranks = Find(all, "data-forward-passes", "");
  ASSERT_EQ(ranks.size(), 3u);
  for (const Element& r : ranks) {
    EXPECT_EQ(r.Attr("data-forward-passes"), "64");
    EXPECT_EQ(r.Attr("data-backward-passes"), "64");
  }
}

// 8,192 sequences over dp=8: 1,024 micro-batches x 2 chunks per rank. The
// whole-step panel merges the passes (each under 2 px), so the page stays
// small; the zoomed panel still draws single passes.
TEST(ReportTest, ManyMicroBatchesStayDrawable) {
  ReportInput in = report_internal::ToyMoeReport();
  in.result.problem.shape.global_batch = 8192;
  in.result.best.prediction.shape.global_batch = 8192;
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html, RenderPlanReport(in));
  const std::vector<Element> all = ParseElements(html);
  const Element s = Find(all, "id", "pipeline")[0];
  EXPECT_EQ(s.Attr("data-micro-batches"), "1024");
  EXPECT_EQ(Find(all, "data-forward-passes", "2048").size(), 3u);
  EXPECT_THAT(html, HasSubstr("passes too narrow to draw one by one"));
  EXPECT_EQ(Find(all, "data-panel", "zoom").size(), 1u);
  EXPECT_LT(html.size(), 400u * 1024) << "page grew with the micro-batch count";
}

TEST(ReportTest, EscapesUserText) {
  ReportInput in = report_internal::ToyMoeReport();
  in.result.problem.model.name = "<script>alert('x')</script>";
  in.result.problem.cluster.name = "\"><img src=x onerror=alert(1)>";
  in.result.best.prediction.breakdown[0].name = "</td><b>";
  in.calibration.note = "<i>note</i> & more";
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html, RenderPlanReport(in));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("</td><b>")));
  EXPECT_THAT(html, Not(HasSubstr("<i>note")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("&quot;&gt;&lt;img src=x"));
  // The attribute round-trips: the extractor reads the original name back.
  const auto summary = Find(ParseElements(html), "id", "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].Attr("data-model"), "<script>alert('x')</script>");
  EXPECT_EQ(summary[0].Attr("data-cluster"), "\"><img src=x onerror=alert(1)>");
}

TEST(ReportTest, SelfContained) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html,
                       RenderPlanReport(report_internal::ToyMoeReport()));
  for (const char* banned : {"<script", "http:", "https:", "<link", "@import",
                             "<img", "<iframe", "src=", "@font-face"}) {
    EXPECT_THAT(html, Not(HasSubstr(banned))) << banned;
  }
  // url(...) only for the in-page hatch pattern.
  for (size_t p = html.find("url("); p != std::string::npos;
       p = html.find("url(", p + 1)) {
    EXPECT_EQ(html.compare(p, 5, "url(#"), 0) << html.substr(p, 30);
  }
  EXPECT_THAT(html, HasSubstr("@media print"));
}

TEST(ReportTest, RejectsAResultWithoutAPlan) {
  ReportInput in;
  EXPECT_THAT(RenderPlanReport(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs a search result with a best plan")));
  ReportInput bad = report_internal::ToyMoeReport();
  bad.timeline_ranks = 0;
  EXPECT_THAT(RenderPlanReport(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("timeline_ranks must be >= 1, got 0")));
}

// The page for a real search carries the search's own numbers.
TEST(ReportTest, RealSearchNumbersReachThePage) {
  MOETUNE_ASSERT_OK_AND_ASSIGN(ModelSpec model, LoadModelPreset("qwen3-30b-a3b"));
  MOETUNE_ASSERT_OK_AND_ASSIGN(ClusterSpec cluster, LoadClusterPreset("h100-sxm"));
  SearchProblem problem{model, cluster, {}};
  problem.shape.gpus = 32;
  problem.shape.seq_len = 4096;
  problem.shape.global_batch = 256;
  SearchOptions options;
  options.threads = 1;
  options.top_k = 3;
  MOETUNE_ASSERT_OK_AND_ASSIGN(
      SearchResult result,
      Search(problem, std::make_shared<DatasheetCostModel>(cluster), options));
  ReportInput in;
  in.result = result;
  in.what_ifs = RunWhatIfs(problem, {{WhatIfKnob::kHbmBandwidth, 2.0}},
                           DatasheetReplanner(options));
  MOETUNE_ASSERT_OK_AND_ASSIGN(std::string html, RenderPlanReport(in));
  const std::vector<Element> all = ParseElements(html);
  const Prediction& best = result.best.prediction;
  EXPECT_NEAR(Num(Find(all, "data-metric", "tokens_per_sec_per_gpu")[0],
                  "data-value"),
              best.tokens_per_sec_per_gpu,
              1e-5 * best.tokens_per_sec_per_gpu);
  EXPECT_NEAR(Num(Find(all, "data-metric", "peak_memory_bytes")[0],
                  "data-value"),
              best.peak_memory_bytes, 1e-5 * best.peak_memory_bytes);
  // The breakdown's exposed segments add up to the predicted step time.
  const Element bd = Find(all, "id", "breakdown")[0];
  EXPECT_NEAR(Num(bd, "data-exposed-sum-s"), best.step_time_s,
              1e-4 * best.step_time_s);
  EXPECT_EQ(Find(all, "id", "summary")[0].Attr("data-cost-source"),
            "datasheet_prior");
  // The prediction's 80% interval is on the page, around the prediction,
  // with what set it.
  ASSERT_GT(best.interval.coverage, 0);
  const auto iv = Find(all, "data-metric", "tokens_per_sec_per_gpu_interval");
  ASSERT_EQ(iv.size(), 1u);
  EXPECT_DOUBLE_EQ(Num(iv[0], "data-coverage"), best.interval.coverage);
  EXPECT_NEAR(Num(iv[0], "data-low"), best.interval.tokens_per_sec_per_gpu_low,
              1e-5 * best.interval.tokens_per_sec_per_gpu_low);
  EXPECT_NEAR(Num(iv[0], "data-high"), best.interval.tokens_per_sec_per_gpu_high,
              1e-5 * best.interval.tokens_per_sec_per_gpu_high);
  EXPECT_LT(Num(iv[0], "data-low"), best.tokens_per_sec_per_gpu);
  EXPECT_GT(Num(iv[0], "data-high"), best.tokens_per_sec_per_gpu);
  const auto basis = Find(all, "data-field", "interval_basis");
  ASSERT_EQ(basis.size(), 1u);
  EXPECT_THAT(basis[0].Attr("data-text"), HasSubstr(best.interval.basis));
  EXPECT_EQ(Find(all, "id", "top-k")[0].Attr("data-plans"),
            std::to_string(result.top.size()));
  // Doubling HBM bandwidth never makes the best plan slower.
  const auto rows = Find(all, "data-scenario", "hbm_bandwidth");
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].Attr("data-feasible"), "1");
  EXPECT_GE(Num(rows[0], "data-ratio"), 1.0 - 1e-6);
}

}  // namespace
}  // namespace moetune::planner
