#include "planner/report/what_if.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::testing::HasSubstr;
using ::moetune::testing::StatusIs;

SearchProblem Problem(const std::string& model, const std::string& cluster,
                      int gpus) {
  SearchProblem p;
  p.model = *LoadModelPreset(model);
  p.cluster = *LoadClusterPreset(cluster);
  p.shape.gpus = gpus;
  p.shape.seq_len = 4096;
  p.shape.global_batch = 256;
  return p;
}

TEST(WhatIfTest, DefaultScenarios) {
  const std::vector<WhatIfScenario> s = DefaultWhatIfScenarios();
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(ToString(s[0]), "scale-out network x0.5");
  EXPECT_EQ(ToString(s[3]), "NVLink x2");
  EXPECT_EQ(ToString(s[7]), "GPU count x2");
}

TEST(WhatIfTest, AppliesOneFactor) {
  const SearchProblem base = Problem("llama3-8b", "h100-sxm", 16);
  MOETUNE_ASSERT_OK_AND_ASSIGN(SearchProblem p,
                       ApplyWhatIf(base, {WhatIfKnob::kScaleOutBandwidth, 0.5}));
  EXPECT_DOUBLE_EQ(p.cluster.scaleout_bytes_per_sec,
                   base.cluster.scaleout_bytes_per_sec / 2);
  EXPECT_DOUBLE_EQ(p.cluster.nvlink_bytes_per_sec,
                   base.cluster.nvlink_bytes_per_sec);
  EXPECT_EQ(p.cluster.name, "h100-sxm [scale-out network x0.5]");
  MOETUNE_ASSERT_OK_AND_ASSIGN(p, ApplyWhatIf(base, {WhatIfKnob::kNvlinkBandwidth, 2}));
  EXPECT_DOUBLE_EQ(p.cluster.nvlink_bytes_per_sec,
                   2 * base.cluster.nvlink_bytes_per_sec);
  MOETUNE_ASSERT_OK_AND_ASSIGN(p, ApplyWhatIf(base, {WhatIfKnob::kHbmBandwidth, 2}));
  EXPECT_DOUBLE_EQ(p.cluster.gpu.hbm_bytes_per_sec,
                   2 * base.cluster.gpu.hbm_bytes_per_sec);
  EXPECT_DOUBLE_EQ(p.cluster.gpu.hbm_bytes, base.cluster.gpu.hbm_bytes);
  MOETUNE_ASSERT_OK_AND_ASSIGN(p, ApplyWhatIf(base, {WhatIfKnob::kGpuCount, 0.5}));
  EXPECT_EQ(p.shape.gpus, 8);
  EXPECT_EQ(p.shape.global_batch, 256);  // same batch, fewer GPUs
  EXPECT_EQ(p.cluster.name, "h100-sxm");
}

TEST(WhatIfTest, RejectsBadFactors) {
  const SearchProblem base = Problem("llama3-8b", "h100-sxm", 3);
  EXPECT_THAT(ApplyWhatIf(base, {WhatIfKnob::kGpuCount, 0.5}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("GPU count 3 x0.5 is not a positive integer")));
  EXPECT_THAT(ApplyWhatIf(base, {WhatIfKnob::kNvlinkBandwidth, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("factor must be > 0, got 0")));
}

// RunWhatIfs hands each modified problem to the replanner and keeps its
// answer or its error.
TEST(WhatIfTest, RunsEachScenarioThroughTheReplanner) {
  const SearchProblem base = Problem("llama3-8b", "h100-sxm", 16);
  std::vector<SearchProblem> seen;
  Replanner fake = [&seen](const SearchProblem& p) -> absl::StatusOr<SearchResult> {
    seen.push_back(p);
    if (p.shape.gpus == 32) {
      return absl::FailedPreconditionError("no plan fits in memory");
    }
    SearchResult r;
    r.best.prediction.tokens_per_sec_per_gpu = p.cluster.nvlink_bytes_per_sec / 1e9;
    return r;
  };
  const std::vector<WhatIfResult> out =
      RunWhatIfs(base, DefaultWhatIfScenarios(), fake);
  ASSERT_EQ(out.size(), 8u);
  ASSERT_EQ(seen.size(), 8u);
  EXPECT_EQ(seen[6].shape.gpus, 8);
  EXPECT_EQ(out[6].gpus, 8);
  ASSERT_TRUE(out[3].best.has_value());
  EXPECT_DOUBLE_EQ(out[3].best->prediction.tokens_per_sec_per_gpu,
                   2 * base.cluster.nvlink_bytes_per_sec / 1e9);
  EXPECT_FALSE(out[7].best.has_value());
  EXPECT_EQ(out[7].gpus, 32);
  EXPECT_EQ(out[7].error, "no plan fits in memory");
}

// With the real search: more HBM bandwidth or a faster network never makes
// the best plan slower (the space is the same and no candidate gets slower),
// and halving HBM bandwidth changes the answer measurably.
TEST(WhatIfTest, RealSearchFasterHardwareNeverSlower) {
  const SearchProblem base = Problem("qwen3-30b-a3b", "h100-sxm", 32);
  SearchOptions options;
  options.threads = 1;
  const Replanner replan = DatasheetReplanner(options);
  MOETUNE_ASSERT_OK_AND_ASSIGN(SearchResult b, replan(base));
  const double base_tps = b.best.prediction.tokens_per_sec_per_gpu;
  const std::vector<WhatIfResult> out = RunWhatIfs(
      base,
      {{WhatIfKnob::kHbmBandwidth, 2}, {WhatIfKnob::kScaleOutBandwidth, 2},
       {WhatIfKnob::kNvlinkBandwidth, 2}, {WhatIfKnob::kHbmBandwidth, 0.5}},
      replan);
  for (size_t i = 0; i < 3; ++i) {
    const WhatIfResult& w = out[i];
    ASSERT_TRUE(w.best.has_value()) << ToString(w.scenario) << ": " << w.error;
    EXPECT_GE(w.best->prediction.tokens_per_sec_per_gpu, base_tps * (1 - 1e-9))
        << ToString(w.scenario);
  }
  ASSERT_TRUE(out[3].best.has_value()) << out[3].error;
  EXPECT_LT(out[3].best->prediction.tokens_per_sec_per_gpu, base_tps);
}

// And a slower network never makes the best plan faster. This caught a
// search miss on 2026-11-29 (the unconstrained search, default and
// exhaustive, skipped tp=2 pp=1 ep=8 dp=16 mbs=16 recompute=full for
// qwen3-30b-a3b on 32 H100, so halving the scale-out bandwidth "improved"
// the best plan from 11,751.1 to 11,852.4 tokens/s/GPU); the search work
// fixed it the same day.
TEST(WhatIfTest, RealSearchSlowerNetworkNeverFaster) {
  const SearchProblem base = Problem("qwen3-30b-a3b", "h100-sxm", 32);
  SearchOptions options;
  options.threads = 1;
  const Replanner replan = DatasheetReplanner(options);
  MOETUNE_ASSERT_OK_AND_ASSIGN(SearchResult b, replan(base));
  const std::vector<WhatIfResult> out =
      RunWhatIfs(base, {{WhatIfKnob::kScaleOutBandwidth, 0.5}}, replan);
  ASSERT_TRUE(out[0].best.has_value()) << out[0].error;
  EXPECT_LE(out[0].best->prediction.tokens_per_sec_per_gpu,
            b.best.prediction.tokens_per_sec_per_gpu * (1 + 1e-9));
}

}  // namespace
}  // namespace moetune::planner
