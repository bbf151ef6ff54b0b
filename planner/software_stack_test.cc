#include "planner/software_stack.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/prediction_interval.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

SearchProblem Problem(const char* model, const char* cluster, int gpus, int seq_len, int gbs) {
  SearchProblem problem;
  problem.model = *LoadModelPreset(model);
  problem.cluster = *LoadClusterPreset(cluster);
  problem.shape.gpus = gpus;
  problem.shape.seq_len = seq_len;
  problem.shape.global_batch = gbs;
  return problem;
}

// The best plan only, on one thread, at one precision.
SearchOptions BestOfOneThread(Precision precision) {
  SearchOptions options;
  options.top_k = 1;
  options.threads = 1;
  options.constraints.precisions = {precision};
  return options;
}

TEST(SoftwareStackTest, Parse) {
  absl::StatusOr<SoftwareStack> latest = ParseSoftwareStack("");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->container, "latest");
  EXPECT_EQ(latest->generation, kLatestStackGeneration);
  absl::StatusOr<SoftwareStack> old = ParseSoftwareStack("26.04.01");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->container, "26.04.01");
  EXPECT_EQ(old->generation, StackGeneration::k2602);
  EXPECT_EQ(ToString(*old), "26.04.01 (modelled as generation 26.02)");
  absl::StatusOr<SoftwareStack> current = ParseSoftwareStack("26.08");
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->generation, StackGeneration::k2606);
  EXPECT_THAT(ParseSoftwareStack("v26"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'v26'")));
}

TEST(SoftwareStackTest, ParseFramework) {
  EXPECT_EQ(*ParseFramework("megatron"), Framework::kMegatron);
  EXPECT_EQ(*ParseFramework("MaxText"), Framework::kMaxText);
  EXPECT_EQ(FrameworkName(Framework::kMaxText), "maxtext");
  EXPECT_EQ(SoftwareStack().framework, Framework::kMegatron);
  EXPECT_THAT(ParseFramework("nemo"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nemo' (known: megatron, maxtext)")));
}

TEST(SoftwareStackTest, OlderGenerationIsNeverFasterForMoe) {
  // Qwen3-30B-A3B on 8 GB300, the Megatron-Bridge job measured at 31,744
  // (26.04.01) and 45,275 tokens/s/GPU (26.06, its performance recipe with
  // full-iteration CUDA graphs): the 26.02 generation adds the MoE host
  // time that 26.06 hides under full-iteration graphs, so its best plan is
  // not faster. The default stack prices the graphs moetune's Megatron file
  // captures (attn, moe_router, moe_preprocess), where 26.06 hides nothing
  // either; latest is what Search() returns.
  const SearchProblem problem = Problem("qwen3-30b-a3b", "gb300-nvl72", 8, 4096, 512);
  const SearchOptions options = BestOfOneThread(Precision::kMxfp8);
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  absl::StatusOr<SearchResult> old =
      SearchForStack(problem, cost, options, StackGeneration::k2602);
  SoftwareStack full_iteration;
  full_iteration.cuda_graph_scope = CudaGraphScope::kFullIteration;
  absl::StatusOr<SearchResult> published =
      SearchForStack(problem, cost, options, full_iteration);
  absl::StatusOr<SearchResult> latest =
      SearchForStack(problem, cost, options, kLatestStackGeneration);
  absl::StatusOr<SearchResult> as_emitted = SearchForStack(problem, cost, options, SoftwareStack());
  absl::StatusOr<SearchResult> plain = Search(problem, cost, options);
  ASSERT_TRUE(old.ok() && published.ok() && latest.ok() && as_emitted.ok() && plain.ok());
  EXPECT_LT(old->best.prediction.tokens_per_sec_per_gpu,
            published->best.prediction.tokens_per_sec_per_gpu);
  EXPECT_LE(old->best.prediction.tokens_per_sec_per_gpu,
            latest->best.prediction.tokens_per_sec_per_gpu);
  EXPECT_LT(latest->best.prediction.tokens_per_sec_per_gpu,
            published->best.prediction.tokens_per_sec_per_gpu);
  EXPECT_DOUBLE_EQ(latest->best.prediction.tokens_per_sec_per_gpu,
                   plain->best.prediction.tokens_per_sec_per_gpu);
  EXPECT_DOUBLE_EQ(latest->best.prediction.tokens_per_sec_per_gpu,
                   as_emitted->best.prediction.tokens_per_sec_per_gpu);
}

TEST(SoftwareStackTest, ContainersOlderThanEveryGenerationAreSaidSo) {
  EXPECT_TRUE(*ContainerPredatesGenerations("25.11"));
  EXPECT_TRUE(*ContainerPredatesGenerations("26.01"));
  EXPECT_FALSE(*ContainerPredatesGenerations("26.02"));
  EXPECT_FALSE(*ContainerPredatesGenerations("26.08.01"));
  EXPECT_THAT(ContainerPredatesGenerations("NeMo 25.04"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'NeMo 25.04'")));
  absl::StatusOr<SoftwareStack> nemo2 = ParseSoftwareStack("25.04.01");
  ASSERT_TRUE(nemo2.ok());
  EXPECT_EQ(nemo2->generation, StackGeneration::k2602);
  EXPECT_EQ(ToString(*nemo2),
            "25.04.01 (older than every generation described; modelled as generation 26.02)");
  EXPECT_EQ(StackConstantsFor(*nemo2).predating_container, "25.04.01");
  EXPECT_EQ(StackConstantsFor(*ParseSoftwareStack("26.02")).predating_container, "");
  EXPECT_EQ(StackConstantsFor(SoftwareStack()).predating_container, "");
}

TEST(SoftwareStackTest, OlderContainerKeepsThePointAndWidensTheInterval) {
  // The same plan under 26.02 and under 25.11: one step (generation 26.02
  // prices both), but 25.11's interval is that of settings no published
  // 2026 run measured (the other-stack rows' errors), naming the container.
  const SearchProblem problem = Problem("llama3-70b", "gb200-nvl72", 64, 8192, 256);
  SearchOptions options = BestOfOneThread(Precision::kFp8);
  options.constraints.fixed.tp = 2;
  options.constraints.fixed.pp = 4;
  options.constraints.fixed.mbs = 1;
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  absl::StatusOr<SearchResult> measured =
      SearchForStack(problem, cost, options, *ParseSoftwareStack("26.02"));
  absl::StatusOr<SearchResult> older =
      SearchForStack(problem, cost, options, *ParseSoftwareStack("25.11"));
  ASSERT_TRUE(measured.ok() && older.ok());
  const Prediction& m = measured->best.prediction;
  const Prediction& o = older->best.prediction;
  EXPECT_DOUBLE_EQ(o.tokens_per_sec_per_gpu, m.tokens_per_sec_per_gpu);
  EXPECT_THAT(o.interval.unmeasured,
              ::testing::Contains("container 25.11 older than 26.02 (priced as generation 26.02)"));
  const PredictionInterval expected = IntervalFor(o.tokens_per_sec_per_gpu, false, {"any"});
  EXPECT_DOUBLE_EQ(o.interval.tokens_per_sec_per_gpu_low, expected.tokens_per_sec_per_gpu_low);
  EXPECT_DOUBLE_EQ(o.interval.tokens_per_sec_per_gpu_high, expected.tokens_per_sec_per_gpu_high);
  EXPECT_THAT(o.interval.basis, HasSubstr("other-stack rows"));
  EXPECT_LE(o.interval.tokens_per_sec_per_gpu_low, m.interval.tokens_per_sec_per_gpu_low);
  EXPECT_GE(o.interval.tokens_per_sec_per_gpu_high, m.interval.tokens_per_sec_per_gpu_high);
}

TEST(SoftwareStackTest, GraphScopeComesFromTheStack) {
  EXPECT_FALSE(StackConstantsFor(SoftwareStack()).features.graph_full_iteration);
  SoftwareStack s;
  s.cuda_graph_scope = CudaGraphScope::kFullIteration;
  EXPECT_TRUE(StackConstantsFor(s).features.graph_full_iteration);
}

TEST(SoftwareStackTest, MaxTextTakesItsContainerTags) {
  absl::StatusOr<SoftwareStack> latest = ParseSoftwareStack(Framework::kMaxText, "latest");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->framework, Framework::kMaxText);
  absl::StatusOr<SoftwareStack> seed = ParseSoftwareStack(Framework::kMaxText, "maxtext-2026-09-10");
  ASSERT_TRUE(seed.ok()) << seed.status();
  EXPECT_EQ(seed->container, "maxtext-2026-09-10");
  EXPECT_EQ(ToString(*seed), "MaxText maxtext-2026-09-10");
  EXPECT_EQ(StackConstantsFor(*seed).framework, Framework::kMaxText);
  for (const char* bad : {"26.04.01", "maxtext-2026-9-10", "maxtext-20260910", "jax-2026-09-10"}) {
    EXPECT_EQ(ParseSoftwareStack(Framework::kMaxText, bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  // Megatron keeps its own form.
  EXPECT_FALSE(ParseSoftwareStack(Framework::kMegatron, "maxtext-2026-09-10").ok());
  EXPECT_EQ(ParseSoftwareStack(Framework::kMegatron, "26.04.01")->generation,
            StackGeneration::k2602);
}

}  // namespace
}  // namespace moetune::planner
