#include "planner/report/what_if.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/cost_model.h"

namespace moetune::planner {

std::string_view WhatIfKnobName(WhatIfKnob knob) {
  switch (knob) {
    case WhatIfKnob::kScaleOutBandwidth: return "scaleout_bandwidth";
    case WhatIfKnob::kNvlinkBandwidth: return "nvlink_bandwidth";
    case WhatIfKnob::kHbmBandwidth: return "hbm_bandwidth";
    case WhatIfKnob::kGpuCount: return "gpu_count";
  }
  return "unknown";
}

namespace {
std::string_view KnobLabel(WhatIfKnob knob) {
  switch (knob) {
    case WhatIfKnob::kScaleOutBandwidth: return "scale-out network";
    case WhatIfKnob::kNvlinkBandwidth: return "NVLink";
    case WhatIfKnob::kHbmBandwidth: return "HBM bandwidth";
    case WhatIfKnob::kGpuCount: return "GPU count";
  }
  return "unknown";
}
}  // namespace

std::string ToString(const WhatIfScenario& scenario) {
  return absl::StrFormat("%s x%g", std::string(KnobLabel(scenario.knob)),
                         scenario.factor);
}

std::vector<WhatIfScenario> DefaultWhatIfScenarios() {
  std::vector<WhatIfScenario> out;
  for (WhatIfKnob knob :
       {WhatIfKnob::kScaleOutBandwidth, WhatIfKnob::kNvlinkBandwidth,
        WhatIfKnob::kHbmBandwidth, WhatIfKnob::kGpuCount}) {
    out.push_back({knob, 0.5});
    out.push_back({knob, 2.0});
  }
  return out;
}

absl::StatusOr<SearchProblem> ApplyWhatIf(const SearchProblem& problem,
                                          const WhatIfScenario& scenario) {
  if (!(scenario.factor > 0) || !std::isfinite(scenario.factor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("what-if factor must be > 0, got ", scenario.factor));
  }
  SearchProblem out = problem;
  switch (scenario.knob) {
    case WhatIfKnob::kScaleOutBandwidth:
      out.cluster.scaleout_bytes_per_sec *= scenario.factor;
      break;
    case WhatIfKnob::kNvlinkBandwidth:
      out.cluster.nvlink_bytes_per_sec *= scenario.factor;
      break;
    case WhatIfKnob::kHbmBandwidth:
      out.cluster.gpu.hbm_bytes_per_sec *= scenario.factor;
      break;
    case WhatIfKnob::kGpuCount: {
      const double gpus = problem.shape.gpus * scenario.factor;
      if (gpus < 1 || std::fabs(gpus - std::round(gpus)) > 1e-9) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU count ", problem.shape.gpus, " x", scenario.factor,
            " is not a positive integer"));
      }
      out.shape.gpus = static_cast<int>(std::lround(gpus));
      break;
    }
  }
  if (scenario.knob != WhatIfKnob::kGpuCount) {
    out.cluster.name = absl::StrCat(problem.cluster.name, " [",
                                    ToString(scenario), "]");
  }
  return out;
}

Replanner DatasheetReplanner(SearchOptions options) {
  options.top_k = 1;
  options.progress = nullptr;
  return [options](const SearchProblem& problem)
             -> absl::StatusOr<SearchResult> {
    auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
    StackConstants stack;
    stack.framework = options.framework;  // the plan's framework, priced as such
    return Search(problem, std::move(cost), options, stack);
  };
}

std::vector<WhatIfResult> RunWhatIfs(
    const SearchProblem& base, const std::vector<WhatIfScenario>& scenarios,
    const Replanner& replan) {
  std::vector<WhatIfResult> out;
  out.reserve(scenarios.size());
  for (const WhatIfScenario& s : scenarios) {
    WhatIfResult r;
    r.scenario = s;
    r.gpus = base.shape.gpus;
    absl::StatusOr<SearchProblem> problem = ApplyWhatIf(base, s);
    if (!problem.ok()) {
      r.error = std::string(problem.status().message());
    } else {
      r.gpus = problem->shape.gpus;
      absl::StatusOr<SearchResult> result = replan(*problem);
      if (result.ok()) {
        r.best = result->best;
      } else {
        r.error = std::string(result.status().message());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace moetune::planner
