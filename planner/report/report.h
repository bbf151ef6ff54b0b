// The plan report: one self-contained HTML page that shows why the autotuner
// chose a plan. Inline SVG drawn here; no script, no external font, style
// sheet or image, so it reads offline and prints.
//
// Sections (each a <section> with an id; the numbers it shows are also in
// data-* attributes, which the golden tests read):
//   #summary    problem, chosen layout and knobs, headline figures, where the
//               cost model's numbers came from (calibration vs datasheet)
//   #breakdown  step time as a stacked bar: compute by kind, each
//               communication exposed vs hidden, bubble, optimizer, offload;
//               and every term in a table
//   #memory     memory per GPU, stacked, against the HBM capacity line
//   #pareto     throughput vs peak memory: the Pareto front, top K, chosen
//   #pipeline   one step of the pipeline schedule for the first ranks
//               (pipeline_timeline.h says how it is derived)
//   #what-if    each scenario re-planned (what_if.h)
//   #top-k      the top plans with their differences from the best marked
//   #search     search counts and pruning reasons
// Every string that reaches the page is escaped (model and cluster names
// come from user files).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/report/what_if.h"
#include "planner/search.h"

namespace moetune::planner {

// Where the cost model's numbers came from, beyond what each term records.
struct CalibrationInfo {
  // The agents' cluster label whose fitted tables fed the cost model; empty:
  // none was asked for.
  std::string cluster;
  // When those tables were fitted (RFC 3339, e.g. "2026-11-28T09:00:00Z");
  // empty: unknown. With generated_at, the page states the age.
  std::string fitted_at;
  // Free text, e.g. the server's calibration note for the job.
  std::string note;
};

struct ReportInput {
  SearchResult result;  // best, top, pareto, counts
  // Scenarios re-planned (RunWhatIfs); empty: the section says none were run.
  std::vector<WhatIfResult> what_ifs;
  CalibrationInfo calibration;
  std::string generated_at;  // RFC 3339; empty: omitted (golden tests)
  int timeline_ranks = 4;    // pipeline ranks drawn, from rank 0 (>= 1)
};

// The page. InvalidArgument when the result has no best plan (step time
// <= 0 or an empty top list) or timeline_ranks < 1.
absl::StatusOr<std::string> RenderPlanReport(const ReportInput& input);

}  // namespace moetune::planner
