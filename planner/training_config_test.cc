#include "planner/training_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::IsOk;
using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

ModelSpec TinyMoe() {
  ModelSpec m;
  m.name = "tiny-moe";
  m.num_layers = 8;
  m.hidden_size = 1024;
  m.vocab_size = 32000;
  m.num_attention_heads = 16;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  m.v_head_dim = 64;
  m.ffn_hidden_size = 4096;
  m.num_routed_experts = 32;
  m.moe_top_k = 4;
  m.moe_ffn_hidden_size = 512;
  return m;
}

TEST(TrainingConfigTest, EnumRoundTrips) {
  for (RecomputeMode m :
       {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull}) {
    EXPECT_EQ(*ParseRecomputeMode(RecomputeModeName(m)), m);
  }
  for (Dispatcher d : {Dispatcher::kAllToAll, Dispatcher::kFusedDedup}) {
    EXPECT_EQ(*ParseDispatcher(DispatcherName(d)), d);
  }
  EXPECT_EQ(*ParseDispatcher("DeepEP"), Dispatcher::kFusedDedup);
  const uint32_t modules = kRecomputeCoreAttn | kRecomputeMoeAct;
  EXPECT_EQ(RecomputeModulesName(modules), "core_attn,moe_act");
  EXPECT_EQ(*ParseRecomputeModules("core_attn, moe_act"), modules);
  EXPECT_EQ(*ParseOffloadModules(OffloadModulesName(kOffloadExpertFc1 |
                                                    kOffloadMoeAct)),
            kOffloadExpertFc1 | kOffloadMoeAct);
  EXPECT_EQ(*ParseObjective("SFT"), Objective::kFinetune);
  for (OptimizerStates o : {OptimizerStates::kFp32, OptimizerStates::kBf16Moments}) {
    EXPECT_EQ(*ParseOptimizerStates(OptimizerStatesName(o)), o);
  }
  EXPECT_EQ(*ParseOptimizerStates("Precision_Aware"), OptimizerStates::kBf16Moments);
  // Printed only when not the default, so fp32 plans print as before.
  Knobs k;
  EXPECT_THAT(ToString(k), Not(HasSubstr("optimizer_states")));
  k.optimizer_states = OptimizerStates::kBf16Moments;
  EXPECT_THAT(ToString(k), HasSubstr(" optimizer_states=bf16"));
}

TEST(TrainingConfigTest, ParseErrorsNameTheValue) {
  EXPECT_THAT(ParseRecomputeMode("partial"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'partial'")));
  EXPECT_THAT(ParseDispatcher("ring"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ring'")));
  EXPECT_THAT(ParseRecomputeModules("core_attn,attention"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'attention'")));
  EXPECT_THAT(ParseOffloadModules("weights"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'weights'")));
  EXPECT_THAT(ParseOptimizerStates("fp8"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'fp8'")));
}

// Regression (fix_spec_fuzzer): "recompute=\n\n\n+" parsed as a selective
// recompute of no module, which printed as "recompute=" and did not parse.
TEST(TrainingConfigTest, ModuleListsOfOnlySeparatorsAreRefused) {
  EXPECT_THAT(ParseRecomputeModules(",").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no recompute module")));
  EXPECT_THAT(ParseOffloadModules(" , \n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no offload module")));
  absl::StatusOr<uint32_t> two = ParseRecomputeModules("layernorm, ,moe_act");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, kRecomputeLayerNorm | kRecomputeMoeAct);
}

TEST(TrainingConfigTest, DerivedDpAndMicroBatches) {
  const TrainingShape shape{64, 4096, 512};
  ParallelConfig p;
  p.tp = 2;
  p.pp = 4;
  // dp = 64 / (2 * 4 * 1) = 8; micro-batches = 512 / (1 * 8) = 64.
  EXPECT_EQ(ResolvedDp(shape, p), 8);
  EXPECT_EQ(NumMicroBatches(shape, p), 64);
  EXPECT_THAT(Validate(TinyMoe(), shape, p), IsOk());
}

TEST(TrainingConfigTest, InvalidLayoutsHaveOneLineReasons) {
  const ModelSpec m = TinyMoe();
  const TrainingShape shape{64, 4096, 512};
  struct Case {
    ParallelConfig p;
    Infeasibility reason;
    const char* message;
  };
  auto make = [](int tp, int pp, int ep, int cp, int mbs) {
    ParallelConfig p;
    p.tp = tp;
    p.pp = pp;
    p.ep = ep;
    p.cp = cp;
    p.mbs = mbs;
    return p;
  };
  ParallelConfig vp_no_pp = make(1, 1, 1, 1, 1);
  vp_no_pp.vp = 2;
  ParallelConfig wrong_dp = make(1, 1, 1, 1, 1);
  wrong_dp.dp = 3;
  const Case cases[] = {
      {make(3, 1, 1, 1, 1), Infeasibility::kGpusNotDivisible, "gpus=64"},
      {make(32, 1, 1, 1, 1), Infeasibility::kTpDoesNotDivideHeads,
       "tp=32 does not divide num_attention_heads=16"},
      {make(1, 1, 64, 1, 1), Infeasibility::kEpDoesNotDivideExperts,
       "ep=64 does not divide num_routed_experts=32"},
      {make(1, 16, 1, 1, 1), Infeasibility::kTooFewLayers, "num_layers=8"},
      {make(1, 4, 32, 1, 1), Infeasibility::kExpertLayoutMismatch,
       "ep*etp=32 does not divide tp*cp*dp=16"},
      {make(1, 1, 1, 1, 3), Infeasibility::kBatchNotDivisible,
       "global_batch=512"},
      {vp_no_pp, Infeasibility::kVpWithoutPp, "vp=2 needs pp > 1"},
      {wrong_dp, Infeasibility::kGpusNotDivisible, "tp*pp*cp*dp"},
      {make(0, 1, 1, 1, 1), Infeasibility::kNonPositiveValue, "positive"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckLayout(m, shape, c.p), c.reason) << ToString(c.p);
    EXPECT_THAT(Validate(m, shape, c.p),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(c.message)))
        << ToString(c.p);
  }
  ModelSpec dense = m;
  dense.num_routed_experts = 0;
  EXPECT_THAT(Validate(dense, shape, make(1, 1, 2, 1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("on dense model")));
}

TEST(TrainingConfigTest, UnevenStages) {
  const ModelSpec m = TinyMoe();  // 8 layers
  const TrainingShape shape{4, 4096, 16};
  ParallelConfig p;
  p.pp = 4;
  p.first_stage_layers = 1;
  p.last_stage_layers = 1;  // 6 layers left for 2 middle stages: fine
  EXPECT_THAT(Validate(m, shape, p), IsOk());
  p.first_stage_layers = 5;
  p.last_stage_layers = 2;  // 1 layer left for 2 middle stages
  EXPECT_THAT(Validate(m, shape, p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("leave too few")));
}

}  // namespace
}  // namespace moetune::planner
