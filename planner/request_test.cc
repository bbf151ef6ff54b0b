#include "planner/request.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/framework_rules.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

PlanRequest Small() {
  PlanRequest r;
  r.model = *LoadModelPreset("qwen3-30b-a3b");
  r.cluster = *LoadClusterPreset("h100-sxm");
  r.shape = {16, 4096, 256};
  r.threads = 1;
  return r;
}

std::shared_ptr<const CostModel> Prior(const PlanRequest& r) {
  return std::make_shared<DatasheetCostModel>(r.cluster);
}

TEST(PredictPinnedTest, IsTheSearchWithThePins) {
  PlanRequest r = Small();
  r.constraints.fixed = *ParseFixSpec("tp=1,pp=2,vp=2,ep=8,recompute=none");
  absl::StatusOr<Prediction> p = PredictPinned(r, Prior(r));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->parallel.pp, 2);
  EXPECT_EQ(p->parallel.ep, 8);
  EXPECT_EQ(p->knobs.recompute.mode, RecomputeMode::kNone);
  // The same request searched: its best plan is the prediction.
  absl::StatusOr<SearchResult> s = PlanSearch(r, Prior(r));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->best.prediction.tokens_per_sec_per_gpu, p->tokens_per_sec_per_gpu);
}

TEST(PredictPinnedTest, ExactOverlapPinAndImbalanceArePriced) {
  PlanRequest r = Small();
  r.constraints.fixed = *ParseFixSpec("tp=1,pp=1,ep=8,overlap=dp+ep");
  r.constraints.moe_load_imbalance = 1.25;
  absl::StatusOr<Prediction> p = PredictPinned(r, Prior(r));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->knobs.overlap.ep_comm);
  EXPECT_TRUE(p->knobs.overlap.dp_comm);
  EXPECT_FALSE(p->knobs.overlap.tp_comm);
  EXPECT_FALSE(p->knobs.overlap.pp_comm);
  EXPECT_EQ(p->knobs.moe_load_imbalance, 1.25);
  r.constraints.moe_load_imbalance = 1.0;
  absl::StatusOr<Prediction> balanced = PredictPinned(r, Prior(r));
  ASSERT_TRUE(balanced.ok());
  EXPECT_GT(balanced->tokens_per_sec_per_gpu, p->tokens_per_sec_per_gpu);
}

TEST(PredictPinnedTest, RefusedPinsNameTheRule) {
  PlanRequest r = Small();
  r.constraints.fixed = *ParseFixSpec("pp=2,vp=2,ep=8,overlap=false");
  EXPECT_THAT(PredictPinned(r, Prior(r)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Megatron-Core: the interleaved schedule")));
}

TEST(LoadArgTest, PresetOrFile) {
  EXPECT_TRUE(LoadModelArg("deepseek-v3").ok());
  EXPECT_THAT(LoadModelArg("no-such-model"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("known:")));
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/bad.json";
  std::ofstream(path) << "{\"model_type\": \"llama\"}";
  EXPECT_THAT(LoadModelArg(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("bad.json: missing field")));
  const std::string good = std::string(std::getenv("TEST_TMPDIR")) + "/m.json";
  std::ofstream(good) << ModelSpecToNativeJson(*LoadModelPreset("llama3-8b"));
  absl::StatusOr<ModelSpec> m = LoadModelArg(good);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_layers, 32);
  EXPECT_EQ(m->arch.rope_theta, 500000.0);  // the architecture round-trips
  EXPECT_EQ(m->name, "llama3-8b");          // its own name, kept
  EXPECT_TRUE(LoadClusterArg("gb200-nvl72").ok());
  // A config.json that names no model is named by where it lies.
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/Qwen2.5-7B";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST, true);
  std::ofstream(dir + "/config.json") << R"({"model_type": "qwen2", "hidden_size": 3584,
      "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "vocab_size": 152064})";
  absl::StatusOr<ModelSpec> q = LoadModelArg(dir + "/config.json");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->name, "Qwen2.5-7B");
}

TEST(LoadArgTest, ModelNameFromPath) {
  EXPECT_EQ(ModelNameFromPath("/m/glm-4.5.json"), "glm-4.5");
  EXPECT_EQ(ModelNameFromPath("models/Qwen2.5-7B/config.json"), "Qwen2.5-7B");
  EXPECT_EQ(ModelNameFromPath("config.json"), "config");
  EXPECT_EQ(ModelNameFromPath("./config.json"), "config");
  EXPECT_EQ(ModelNameFromPath("my-model"), "my-model");
}

TEST(FixSpecTest, OverlapComponentsRoundTrip) {
  absl::StatusOr<FixedKnobs> f = ParseFixSpec("overlap=tp+pp");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->overlap_exact.has_value());
  EXPECT_TRUE(f->overlap_exact->tp_comm);
  EXPECT_FALSE(f->overlap_exact->ep_comm);
  EXPECT_EQ(f->overlap, true);
  EXPECT_EQ(ToString(*f), "overlap=tp+pp");
  EXPECT_EQ(ParseFixSpec("overlap=none")->overlap, false);
  EXPECT_THAT(ParseFixSpec("overlap=tp+xx"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tp, ep, dp, pp")));
}

TEST(PredictPinnedTest, MaxTextPinsGoThroughMaxTextsRules) {
  PlanRequest r = Small();
  r.stack = *ParseSoftwareStack(Framework::kMaxText, "maxtext-2026-09-10");
  // Megatron accepts recompute=none; MaxText recomputes unnamed tensors.
  r.constraints.fixed = *ParseFixSpec("tp=1,pp=1,ep=8,recompute=none");
  EXPECT_THAT(PredictPinned(r, Prior(r)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("MaxText: every tensor without a named checkpoint")));
  // Uneven stages: Megatron runs them, MaxText has no key for them.
  r.constraints.fixed = *ParseFixSpec("pp=2,vp=1,first_stage_layers=23,last_stage_layers=25");
  EXPECT_THAT(PredictPinned(r, Prior(r)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("MaxText: every pipeline stage")));
  // What MaxText runs: a prediction marked as MaxText's, its knobs normalized
  // (norms and the MoE activation recomputed).
  r.constraints.fixed = *ParseFixSpec("tp=1,pp=1,ep=8");
  absl::StatusOr<Prediction> p = PredictPinned(r, Prior(r));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->framework, Framework::kMaxText);
  EXPECT_EQ(FrameworkViolation(Framework::kMaxText, r.model, p->parallel, p->knobs), std::nullopt);
  EXPECT_EQ(MaxTextLayoutViolation(r.model, r.shape, p->parallel), std::nullopt);
  // Megatron's request is unchanged by the field.
  PlanRequest m = Small();
  m.constraints.fixed = *ParseFixSpec("tp=1,pp=1,ep=8");
  absl::StatusOr<Prediction> mp = PredictPinned(m, Prior(m));
  ASSERT_TRUE(mp.ok());
  EXPECT_EQ(mp->framework, Framework::kMegatron);
}

}  // namespace
}  // namespace moetune::planner
