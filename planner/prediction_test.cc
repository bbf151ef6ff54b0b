#include "planner/prediction.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "planner/step_model.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

TEST(PredictionTest, TermKindsNameAndHide) {
  EXPECT_EQ(TermKindName(TermKind::kCommEpExposed), "comm.ep.exposed");
  EXPECT_EQ(TermKindName(TermKind::kPipelineBubble), "pipeline_bubble");
  EXPECT_TRUE(IsHidden(TermKind::kCommDpHidden));
  EXPECT_TRUE(IsHidden(TermKind::kOffloadHidden));
  EXPECT_FALSE(IsHidden(TermKind::kCommDpExposed));
  EXPECT_FALSE(IsHidden(TermKind::kComputeGroupedGemm));
}

TEST(PredictionTest, IntervalTextByHand) {
  PredictionInterval iv;
  EXPECT_EQ(IntervalText(iv), "");  // coverage 0: not computed, nothing printed
  iv = {0.8, 2272.54, 3820.96, "MoE rows", {}};
  EXPECT_EQ(IntervalText(iv), "80% interval 2272.5 .. 3821.0 tokens/s/GPU (MoE rows)");
  iv.unmeasured = {"activation offload", "natural routing"};
  EXPECT_EQ(IntervalText(iv),
            "80% interval 2272.5 .. 3821.0 tokens/s/GPU (MoE rows; activation offload, "
            "natural routing)");
}

TEST(PredictionTest, JsonCarriesTheContractFieldsAndTheResolvedConfig) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset("qwen3-30b-a3b");
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(m.ok() && c.ok());
  absl::StatusOr<StepModel> sm = StepModel::Create(
      *m, *c, TrainingShape{16, 4096, 512}, std::make_shared<DatasheetCostModel>(*c));
  ASSERT_TRUE(sm.ok()) << sm.status();
  ParallelConfig p;
  p.ep = 8;
  Knobs k;
  k.precision = Precision::kFp8;
  absl::StatusOr<Prediction> pr = sm->Predict(p, k);
  ASSERT_TRUE(pr.ok()) << pr.status();
  const nlohmann::json j = ToJson(*pr);
  for (const char* key : {"tokens_per_sec_per_gpu", "model_tflops_per_gpu", "step_time_s",
                          "mfu", "peak_memory_gib", "fits", "breakdown", "config", "memory",
                          "cost_source"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["cost_source"], "datasheet_prior");
  EXPECT_DOUBLE_EQ(j["peak_memory_gib"].get<double>(), pr->peak_memory_bytes / units::kGiB);
  EXPECT_EQ(j["config"]["parallel"]["dp"], 16);  // resolved: 16 / (1 x 1 x 1)
  EXPECT_EQ(j["config"]["parallel"]["ep"], 8);
  EXPECT_EQ(j["config"]["knobs"]["precision"], "fp8");
  EXPECT_EQ(j["config"]["knobs"]["dispatcher"], "fused_dedup");
  EXPECT_EQ(j["config"]["model"]["num_routed_experts"], 128);
  EXPECT_EQ(j["config"]["cluster"], "h100-sxm");
  ASSERT_FALSE(j["breakdown"].empty());
  for (const nlohmann::json& t : j["breakdown"]) {
    EXPECT_TRUE(t.contains("name") && t.contains("kind") && t.contains("seconds") &&
                t.contains("source") && t.contains("hidden"));
  }
  // The model round-trips through the native form in the config.
  absl::StatusOr<ModelSpec> back = ParseModelJson(j["config"]["model"].dump());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->TotalParams(), m->TotalParams());
}

}  // namespace
}  // namespace moetune::planner
