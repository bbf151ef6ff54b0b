// render_report: plans a problem with the datasheet cost model, re-plans the
// default what-if scenarios and writes the HTML report. Used for the README
// screenshot and to look at reports without a server:
//   bazel run //planner/report:render_report -- --model deepseek-v3
//     --cluster gb200-nvl72 --gpus 1024 --seq 4096 --gbs 8192
//     --out /tmp/report.html     (one command line)
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/report/report.h"
#include "planner/report/what_if.h"
#include "planner/search.h"

ABSL_FLAG(std::string, model, "deepseek-v3", "model preset name");
ABSL_FLAG(std::string, cluster, "gb200-nvl72", "cluster preset name");
ABSL_FLAG(int, gpus, 1024, "number of GPUs");
ABSL_FLAG(int, seq, 4096, "sequence length");
ABSL_FLAG(int, gbs, 8192, "global batch (sequences)");
ABSL_FLAG(std::string, routing, "natural",
          "natural (real training, the CLI's default) or balanced (forced, benchmarks)");
ABSL_FLAG(int, top, 5, "top-K layouts");
ABSL_FLAG(int, threads, 0, "search threads (0: one per core)");
ABSL_FLAG(bool, what_if, true, "re-plan the default what-if scenarios");
ABSL_FLAG(std::string, out, "", "output file (default: stdout)");

namespace pl = moetune::planner;

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<pl::ModelSpec> model = pl::LoadModelPreset(absl::GetFlag(FLAGS_model));
  absl::StatusOr<pl::ClusterSpec> cluster =
      pl::LoadClusterPreset(absl::GetFlag(FLAGS_cluster));
  if (!model.ok() || !cluster.ok()) {
    std::cerr << "render_report: "
              << (model.ok() ? cluster.status() : model.status()).message() << "\n";
    return 2;
  }
  pl::SearchProblem problem{*model, *cluster, {}};
  problem.shape.gpus = absl::GetFlag(FLAGS_gpus);
  problem.shape.seq_len = absl::GetFlag(FLAGS_seq);
  problem.shape.global_batch = absl::GetFlag(FLAGS_gbs);
  absl::StatusOr<pl::Routing> routing = pl::ParseRouting(absl::GetFlag(FLAGS_routing));
  if (!routing.ok()) {
    std::cerr << "render_report: --routing: " << routing.status().message() << "\n";
    return 2;
  }
  pl::SearchOptions options;
  options.constraints.routing = *routing;
  options.top_k = absl::GetFlag(FLAGS_top);
  options.threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<pl::SearchResult> result = pl::Search(
      problem, std::make_shared<pl::DatasheetCostModel>(problem.cluster), options);
  if (!result.ok()) {
    std::cerr << "render_report: " << result.status().message() << "\n";
    return 3;
  }
  pl::ReportInput in;
  in.result = *std::move(result);
  if (absl::GetFlag(FLAGS_what_if)) {
    in.what_ifs = pl::RunWhatIfs(problem, pl::DefaultWhatIfScenarios(),
                                 pl::DatasheetReplanner(options));
  }
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  in.generated_at = buf;
  absl::StatusOr<std::string> html = pl::RenderPlanReport(in);
  if (!html.ok()) {
    std::cerr << "render_report: " << html.status().message() << "\n";
    return 1;
  }
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) {
    std::cout << *html;
    return std::cout ? 0 : 1;
  }
  std::ofstream out(path, std::ios::binary);
  out << *html;
  if (!out) {
    std::cerr << "render_report: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}
