// Test fixture: a hand-made search result with round numbers, so the golden
// files can be checked by hand (see report_fixture.cc for the arithmetic).
#pragma once

#include "planner/report/report.h"

namespace moetune::planner::report_internal {

// "toy-moe <v2> & co" on 64 GPUs of a hand-written cluster; a mixed
// calibrated/prior prediction; pp=4 vp=2 with 32 micro-batches; 3 top plans,
// 4 Pareto points, 8 what-if scenarios (one infeasible); calibration info
// with a fitting time 2.5 days before generated_at.
ReportInput ToyMoeReport();

// A dense model without pipeline parallelism (pp=1), datasheet priors only,
// one top plan, no what-ifs and no calibration info.
ReportInput DenseNoPipelineReport();

}  // namespace moetune::planner::report_internal
