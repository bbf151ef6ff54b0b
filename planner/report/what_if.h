// What-if re-planning for the report: how the best plan's throughput changes
// when one property of the cluster (scale-out network, NVLink, HBM
// bandwidth) or the GPU count changes by a factor. Each scenario is a new
// SearchProblem that is planned again from scratch, so the answer may be a
// different layout, not the same layout re-scored.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/search.h"

namespace moetune::planner {

enum class WhatIfKnob {
  kScaleOutBandwidth,  // cluster.scaleout_bytes_per_sec
  kNvlinkBandwidth,    // cluster.nvlink_bytes_per_sec
  kHbmBandwidth,       // cluster.gpu.hbm_bytes_per_sec
  kGpuCount,           // shape.gpus (global batch unchanged)
};
std::string_view WhatIfKnobName(WhatIfKnob knob);  // "scaleout_bandwidth", ...

struct WhatIfScenario {
  WhatIfKnob knob = WhatIfKnob::kScaleOutBandwidth;
  double factor = 1.0;  // > 0
};
// "scale-out network x0.5", "GPU count x2".
std::string ToString(const WhatIfScenario& scenario);

// Each knob at x0.5 and x2, in the enum's order.
std::vector<WhatIfScenario> DefaultWhatIfScenarios();

// The problem under the scenario. The cluster's name gets the scenario as a
// suffix ("gb200-nvl72 [NVLink x2]"). InvalidArgument for a factor <= 0 or a
// GPU count that does not scale to a positive integer.
absl::StatusOr<SearchProblem> ApplyWhatIf(const SearchProblem& problem,
                                          const WhatIfScenario& scenario);

// Plans one problem. The report's caller supplies the same planner it used
// for the base plan (cost model and search options), so scenarios compare
// like with like.
using Replanner =
    std::function<absl::StatusOr<SearchResult>(const SearchProblem&)>;

// A replanner over the datasheet cost model of each problem's cluster.
// Only top_k = 1 is needed; the options' other fields are kept.
Replanner DatasheetReplanner(SearchOptions options);

struct WhatIfResult {
  WhatIfScenario scenario;
  int gpus = 0;                    // of the scenario's problem
  std::optional<RankedPlan> best;  // unset: no feasible plan (see error)
  std::string error;               // the planner's message when unset
};

// Plans every scenario (in order, one after the other).
std::vector<WhatIfResult> RunWhatIfs(const SearchProblem& base,
                                     const std::vector<WhatIfScenario>& scenarios,
                                     const Replanner& replan);

}  // namespace moetune::planner
