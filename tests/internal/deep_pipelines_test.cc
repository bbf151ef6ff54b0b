#include "tests/internal/deep_pipelines.h"

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

TEST(DeepPipelines, LayoutsFillTheirGpus) {
  for (const LayoutGroup& g : H100DeepPipelineGroups()) {
    ASSERT_FALSE(g.cases.empty()) << g.title;
    for (const LayoutCase& c : g.cases) {
      const planner::ParallelConfig& p = c.parallel;
      EXPECT_EQ(p.tp * p.pp * p.dp * p.cp, g.shape.gpus) << g.title << " " << c.name;
      // Expert parallelism spans the data-parallel x tensor ranks of a stage.
      EXPECT_EQ((p.dp * p.tp) % p.ep, 0) << g.title << " " << c.name;
    }
  }
}

TEST(DeepPipelines, TokensPerSecondFromStepTime) {
  planner::TrainingShape s;
  s.gpus = 256, s.seq_len = 4096, s.global_batch = 2048;
  // 2048 x 4096 / (19.7 s x 256) = 1663.35 (the ModelZoo 245 TF row:
  // x 147.9 GFLOP/token = 246 TFLOPS).
  EXPECT_NEAR(TokensPerSecPerGpu(s, 19.7), 1663.35, 0.01);
}

}  // namespace
}  // namespace moetune::tests
