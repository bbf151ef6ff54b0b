#include "planner/run_defaults.h"

#include <algorithm>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/prediction_interval.h"
#include "planner/request.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

std::shared_ptr<const CostModel> Prior(const PlanRequest& r) {
  return std::make_shared<DatasheetCostModel>(r.cluster);
}

PlanRequest Request(const char* model, const char* cluster, TrainingShape shape,
                    const char* fix) {
  PlanRequest r;
  r.model = *LoadModelPreset(model);
  r.cluster = *LoadClusterPreset(cluster);
  r.shape = shape;
  r.threads = 1;
  r.constraints.fixed = *ParseFixSpec(fix);
  r.unpinned_knobs = UnpinnedKnobs::kRunDefaults;
  r.cuda_graph_scope_given = false;
  return r;
}

TEST(RunDefaultsTest, RecomputeModulesAreTheModelsOwn) {
  const uint32_t all = kRecomputeCoreAttn | kRecomputeMlaUpProj | kRecomputeLayerNorm |
                       kRecomputeMoeAct | kRecomputeMlp | kRecomputeMoe | kRecomputeSharedExperts;
  // Llama 3 (dense, GQA): no MLA, no MoE modules.
  EXPECT_EQ(RecomputeModulesOfModel(*LoadModelPreset("llama3-8b"), all),
            kRecomputeCoreAttn | kRecomputeLayerNorm | kRecomputeMlp);
  // Qwen3-30B-A3B: every layer MoE, no shared experts, GQA.
  EXPECT_EQ(RecomputeModulesOfModel(*LoadModelPreset("qwen3-30b-a3b"), all),
            kRecomputeCoreAttn | kRecomputeLayerNorm | kRecomputeMoeAct | kRecomputeMoe);
  // DeepSeek-V3: MLA, three dense layers, one shared expert: all of them.
  EXPECT_EQ(RecomputeModulesOfModel(*LoadModelPreset("deepseek-v3"), all), all);
}

TEST(RunDefaultsTest, GraphScopeIsTheStacksRecipes) {
  const ModelSpec moe = *LoadModelPreset("qwen3-30b-a3b");
  const ModelSpec dense = *LoadModelPreset("llama3-8b");
  SoftwareStack s2606 = *ParseSoftwareStack("26.06");
  SoftwareStack s2604 = *ParseSoftwareStack("26.04.01");
  // Megatron-Bridge's MXFP8 MoE recipes capture the whole iteration from
  // 26.06 on; its BF16 / FP8 current-scaling / NVFP4 ones scope the graphs.
  EXPECT_EQ(RunDefaultCudaGraphScope(s2606, moe, Precision::kMxfp8),
            CudaGraphScope::kFullIteration);
  EXPECT_EQ(RunDefaultCudaGraphScope(s2606, moe, Precision::kBf16), CudaGraphScope::kModules);
  EXPECT_EQ(RunDefaultCudaGraphScope(s2606, moe, Precision::kFp8), CudaGraphScope::kModules);
  EXPECT_EQ(RunDefaultCudaGraphScope(s2606, moe, Precision::kNvfp4), CudaGraphScope::kModules);
  EXPECT_EQ(RunDefaultCudaGraphScope(s2606, dense, Precision::kMxfp8), CudaGraphScope::kModules);
  EXPECT_EQ(RunDefaultCudaGraphScope(s2604, moe, Precision::kMxfp8), CudaGraphScope::kModules);
}

TEST(RunDefaultsTest, ALayoutNotPinnedIsLeftToTheSearch) {
  // No mbs: the request comes back as it was.
  PlanRequest r = Request("qwen3-30b-a3b", "h100-sxm", {16, 4096, 256}, "tp=1,pp=2,ep=8");
  EXPECT_FALSE(PinsRunLayout(r));
  absl::StatusOr<PlanRequest> out = WithRunDefaults(r, Prior(r));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->constraints.fixed.recompute.has_value());
  EXPECT_FALSE(out->constraints.fixed.cuda_graphs.has_value());
}

// The recompute is the first rung of the ladder whose predicted peak is
// within 84% of the GPU's memory (kRunDefaultMemoryHeadroom): each rung
// predicted on its own, fully pinned, says so
// (Llama 3.1 405B on 256 GB200, FP8, TP4 PP16 VP4: 793 tokens/s/GPU
// measured in Megatron-Bridge 26.02).
TEST(RunDefaultsTest, RecomputeIsTheLightestRungThatFits) {
  PlanRequest r = Request("llama3.1-405b", "gb200-nvl72", {256, 8192, 1536},
                          "tp=4,pp=16,vp=4,ep=1,mbs=1,precision=fp8");
  r.stack = *ParseSoftwareStack("26.02");
  ASSERT_TRUE(PinsRunLayout(r));
  absl::StatusOr<PlanRequest> out = WithRunDefaults(r, Prior(r));
  ASSERT_TRUE(out.ok()) << out.status();
  const FixedKnobs& f = out->constraints.fixed;
  ASSERT_TRUE(f.recompute.has_value());
  EXPECT_EQ(*f.offload_modules, 0u);
  EXPECT_EQ(*f.dispatcher, Dispatcher::kFusedDedup);
  EXPECT_TRUE(*f.cuda_graphs);
  EXPECT_FALSE(f.overlap_exact->ep_comm);
  EXPECT_TRUE(f.overlap_exact->tp_comm && f.overlap_exact->dp_comm && f.overlap_exact->pp_comm);
  EXPECT_EQ(*f.comm_streams, 2);
  EXPECT_EQ(*f.etp, 1);  // dense: no expert TP
  bool reached = false;
  for (Recompute rc : RecomputeLadder()) {
    rc.modules = RecomputeModulesOfModel(r.model, rc.modules);
    if (rc.mode == RecomputeMode::kSelective && rc.modules == 0) continue;
    PlanRequest one = *out;
    one.unpinned_knobs = UnpinnedKnobs::kSearch;
    one.constraints.fixed.recompute = rc;
    absl::StatusOr<Prediction> p = PredictPinned(one, Prior(one));
    ASSERT_TRUE(p.ok()) << p.status();
    const bool fits = p->peak_memory_bytes <= kRunDefaultMemoryHeadroom * p->hbm_bytes;
    if (rc.mode == f.recompute->mode && rc.modules == f.recompute->modules) {
      EXPECT_TRUE(fits);
      reached = true;
      break;
    }
    EXPECT_FALSE(fits) << RecomputeModulesName(rc.modules) << " fits but a heavier rung was chosen";
  }
  EXPECT_TRUE(reached);
  // PredictPinned with run defaults is that plan.
  absl::StatusOr<Prediction> defaults = PredictPinned(r, Prior(r));
  absl::StatusOr<Prediction> pinned = PredictPinned(*out, Prior(r));
  ASSERT_TRUE(defaults.ok() && pinned.ok());
  EXPECT_EQ(defaults->tokens_per_sec_per_gpu, pinned->tokens_per_sec_per_gpu);
  EXPECT_EQ(defaults->knobs.recompute.modules, f.recompute->modules);
}

TEST(RunDefaultsTest, DefaultsTheFrameworkWouldNotRunAreTurnedOffNotRefused) {
  // NVFP4 with TP 4: Transformer Engine has no userbuffers TP overlap for
  // NVFP4 (framework_rules.h kTpCommOverlapWithNvfp4): the default overlap
  // is normalised off, not refused as a pin would be.
  PlanRequest r = Request("llama3.1-405b", "gb300-nvl72", {256, 8192, 1536},
                          "tp=4,pp=8,vp=4,ep=1,mbs=1,precision=nvfp4");
  absl::StatusOr<PlanRequest> out = WithRunDefaults(r, Prior(r));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->constraints.fixed.overlap_exact->tp_comm);
  EXPECT_TRUE(PredictPinned(r, Prior(r)).ok());
}

// etp defaults to tp (Megatron's default); when that expert grid cannot fill
// tp x cp x dp the refusal names the default and the way out. DeepSeek-V3 on
// 1,024 H100, TP2 PP16 EP64 (the DGX Cloud layout): dp = 1024 / 32 = 32,
// tp x dp = 64, ep x etp = 64 x 2 = 128.
TEST(RunDefaultsTest, AnExpertGridTheDefaultEtpCannotFillSaysSo) {
  PlanRequest r = Request("deepseek-v3", "h100-sxm", {1024, 4096, 8192},
                          "tp=2,pp=16,ep=64,mbs=1");
  absl::StatusOr<PlanRequest> out = WithRunDefaults(r, Prior(r));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::AllOf(::testing::HasSubstr("ep*etp=128 does not divide tp*cp*dp=64"),
                               ::testing::HasSubstr("etp was not given"),
                               ::testing::HasSubstr("--etp 1")));
  // With etp given as 1 the same layout is predicted.
  r.constraints.fixed.etp = 1;
  EXPECT_TRUE(PredictPinned(r, Prior(r)).ok());
}

// The execution knobs a request leaves to the run defaults are named as the
// flags that would pin them, and the prediction's interval says so: it takes
// the errors of runs priced the same way (the other-stack rows through the
// run defaults, ShippedIntervalTable().unmeasured) instead of the class's.
// `r` with every execution knob pinned to the settings given.
PlanRequest Pinned(PlanRequest r, bool graphs, CudaGraphScope scope, Dispatcher dispatcher,
                   Overlap overlap) {
  FixedKnobs& f = r.constraints.fixed;
  f.cuda_graphs = graphs, f.dispatcher = dispatcher, f.grouped_gemm = true;
  f.overlap_exact = overlap, f.overlap = overlap.tp_comm || overlap.ep_comm ||
                                         overlap.dp_comm || overlap.pp_comm;
  f.comm_streams = 2;
  r.cuda_graph_scope_given = true;
  r.stack.cuda_graph_scope = scope;
  return r;
}

TEST(RunDefaultsTest, KnobsNotGivenWidenTheIntervalOverWhatTheyCouldBe) {
  PlanRequest r = Request("qwen3-30b-a3b", "gb200-nvl72", {8, 4096, 512},
                          "tp=1,pp=1,ep=8,mbs=4,precision=mxfp8");
  r.constraints.routing = Routing::kBalanced;
  EXPECT_THAT(RunKnobsNotGiven(r),
              ::testing::ElementsAre("--cuda-graphs", "--cuda-graph-scope", "--dispatcher",
                                     "--grouped-gemm", "--overlap", "--comm-streams"));
  absl::StatusOr<Prediction> guessed = PredictPinned(r, Prior(r));
  ASSERT_TRUE(guessed.ok()) << guessed.status();
  EXPECT_THAT(guessed->interval.unmeasured,
              ::testing::ElementsAre(::testing::StartsWith("knobs not given (--cuda-graphs")));

  // The same run with the knobs given: the defaults (26.06 MXFP8 MoE:
  // full-iteration graphs, HybridEP, every overlap but the EP A2A one),
  // and the two ends of what they could be.
  Overlap defaults;
  defaults.ep_comm = false;
  Overlap none;
  none.tp_comm = none.ep_comm = none.dp_comm = none.pp_comm = false;
  const Overlap all;
  const PlanRequest given = Pinned(r, true, CudaGraphScope::kFullIteration,
                                   Dispatcher::kFusedDedup, defaults);
  const PlanRequest slow = Pinned(r, false, CudaGraphScope::kModules, Dispatcher::kAllToAll, none);
  const PlanRequest fast =
      Pinned(r, true, CudaGraphScope::kFullIteration, Dispatcher::kFusedDedup, all);
  for (const PlanRequest* q : {&given, &slow, &fast}) EXPECT_TRUE(RunKnobsNotGiven(*q).empty());
  absl::StatusOr<Prediction> at_defaults = PredictPinned(given, Prior(given));
  absl::StatusOr<Prediction> at_slow = PredictPinned(slow, Prior(slow));
  absl::StatusOr<Prediction> at_fast = PredictPinned(fast, Prior(fast));
  ASSERT_TRUE(at_defaults.ok()) << at_defaults.status();
  ASSERT_TRUE(at_slow.ok()) << at_slow.status();
  ASSERT_TRUE(at_fast.ok()) << at_fast.status();

  // The prediction is the defaults'; nothing guessed there, the MoE rows'
  // interval.
  EXPECT_DOUBLE_EQ(guessed->tokens_per_sec_per_gpu, at_defaults->tokens_per_sec_per_gpu);
  EXPECT_TRUE(at_defaults->interval.unmeasured.empty());
  const IntervalTable& t = ShippedIntervalTable();
  EXPECT_NEAR(at_defaults->interval.tokens_per_sec_per_gpu_low,
              at_defaults->tokens_per_sec_per_gpu / (1 + t.moe.q90), 1e-6);
  // Eager with NCCL all-to-all and no overlap is far slower on this
  // small-expert model (host-bound MoE layers), and outside what the
  // published rows measured: its interval has the wider errors.
  EXPECT_LT(at_slow->tokens_per_sec_per_gpu, 0.7 * at_defaults->tokens_per_sec_per_gpu);
  EXPECT_THAT(at_slow->interval.unmeasured, ::testing::Contains("cuda_graphs off"));
  EXPECT_GE(at_fast->tokens_per_sec_per_gpu, at_defaults->tokens_per_sec_per_gpu);

  // The guessed run's interval is the union of the three.
  EXPECT_NEAR(guessed->interval.tokens_per_sec_per_gpu_low,
              std::min({at_defaults->interval.tokens_per_sec_per_gpu_low,
                        at_slow->interval.tokens_per_sec_per_gpu_low,
                        at_fast->interval.tokens_per_sec_per_gpu_low}),
              1e-6);
  EXPECT_NEAR(guessed->interval.tokens_per_sec_per_gpu_high,
              std::max({at_defaults->interval.tokens_per_sec_per_gpu_high,
                        at_slow->interval.tokens_per_sec_per_gpu_high,
                        at_fast->interval.tokens_per_sec_per_gpu_high}),
              1e-6);
  EXPECT_THAT(guessed->interval.basis, ::testing::HasSubstr("(eager "));

  // Recomputing the whole MoE layer: Megatron-Core refuses the EP A2A
  // overlap with it (and the moe_router graph), so the graphed end is every
  // other overlap, priced rather than left out.
  PlanRequest moe_recompute = r;
  moe_recompute.constraints.fixed.recompute =
      Recompute{RecomputeMode::kSelective, kRecomputeMoe, 0};
  absl::StatusOr<Prediction> refused_ep = PredictPinned(moe_recompute, Prior(moe_recompute));
  ASSERT_TRUE(refused_ep.ok()) << refused_ep.status();
  EXPECT_THAT(refused_ep->interval.basis, ::testing::HasSubstr("graphed "));
  EXPECT_THAT(refused_ep->interval.basis, ::testing::Not(::testing::HasSubstr("refused")));

  // A dense model has no MoE knobs to guess; the search path guesses none.
  PlanRequest dense = Request("llama3-70b", "gb200-nvl72", {64, 8192, 128}, "tp=2,pp=4,mbs=1");
  EXPECT_THAT(RunKnobsNotGiven(dense),
              ::testing::ElementsAre("--cuda-graphs", "--overlap", "--comm-streams"));
  dense.unpinned_knobs = UnpinnedKnobs::kSearch;
  EXPECT_TRUE(RunKnobsNotGiven(dense).empty());
}

TEST(RunDefaultsTest, RoutingNotGivenWidensTheIntervalOverTheOtherRouting) {
  // Every knob pinned (Qwen3-30B-A3B on 16 H100, EP 16 across two nodes,
  // scoped graphs, HybridEP, no EP overlap), so only the routing is a guess.
  Overlap defaults;
  defaults.ep_comm = false;
  PlanRequest natural =
      Pinned(Request("qwen3-30b-a3b", "h100-sxm", {16, 4096, 256}, "tp=1,pp=1,ep=16,mbs=1"),
             true, CudaGraphScope::kModules, Dispatcher::kFusedDedup, defaults);
  natural.constraints.routing = Routing::kNatural;
  ASSERT_TRUE(RunKnobsNotGiven(natural).empty());
  PlanRequest balanced = natural;
  balanced.constraints.routing = Routing::kBalanced;
  PlanRequest unsaid = natural;
  unsaid.routing_given = false;

  absl::StatusOr<Prediction> at_natural = PredictPinned(natural, Prior(natural));
  absl::StatusOr<Prediction> at_balanced = PredictPinned(balanced, Prior(balanced));
  absl::StatusOr<Prediction> guessed = PredictPinned(unsaid, Prior(unsaid));
  ASSERT_TRUE(at_natural.ok()) << at_natural.status();
  ASSERT_TRUE(at_balanced.ok()) << at_balanced.status();
  ASSERT_TRUE(guessed.ok()) << guessed.status();

  // Natural routing waits for the busiest EP rank: slower than forced
  // balance, here by more than the natural interval reaches.
  EXPECT_LT(at_natural->tokens_per_sec_per_gpu, at_balanced->tokens_per_sec_per_gpu);
  EXPECT_GT(at_balanced->interval.tokens_per_sec_per_gpu_high,
            at_natural->interval.tokens_per_sec_per_gpu_high);
  // Said: nothing of routing in the interval.
  EXPECT_THAT(at_natural->interval.unmeasured,
              ::testing::Not(::testing::Contains("routing not given (--routing)")));
  EXPECT_THAT(at_natural->interval.basis, ::testing::Not(::testing::HasSubstr("routing not")));

  // Not said: the point is the request's routing (natural), the interval
  // the union of both routings' intervals, and the basis names the other.
  EXPECT_DOUBLE_EQ(guessed->tokens_per_sec_per_gpu, at_natural->tokens_per_sec_per_gpu);
  EXPECT_NEAR(guessed->interval.tokens_per_sec_per_gpu_low,
              std::min(at_natural->interval.tokens_per_sec_per_gpu_low,
                       at_balanced->interval.tokens_per_sec_per_gpu_low),
              1e-6);
  EXPECT_NEAR(guessed->interval.tokens_per_sec_per_gpu_high,
              std::max(at_natural->interval.tokens_per_sec_per_gpu_high,
                       at_balanced->interval.tokens_per_sec_per_gpu_high),
              1e-6);
  EXPECT_THAT(guessed->interval.unmeasured, ::testing::Contains("routing not given (--routing)"));
  EXPECT_THAT(guessed->interval.basis,
              ::testing::HasSubstr("routing not given: widened over balanced routing"));

  // A dense model has no router: nothing to widen.
  PlanRequest dense = Request("llama3-70b", "gb200-nvl72", {64, 8192, 128}, "tp=2,pp=4,mbs=1");
  absl::StatusOr<Prediction> dense_said = PredictPinned(dense, Prior(dense));
  dense.routing_given = false;
  absl::StatusOr<Prediction> dense_unsaid = PredictPinned(dense, Prior(dense));
  ASSERT_TRUE(dense_said.ok()) << dense_said.status();
  ASSERT_TRUE(dense_unsaid.ok()) << dense_unsaid.status();
  EXPECT_EQ(dense_unsaid->interval.tokens_per_sec_per_gpu_high,
            dense_said->interval.tokens_per_sec_per_gpu_high);
  EXPECT_EQ(dense_unsaid->interval.basis, dense_said->interval.basis);
}

}  // namespace
}  // namespace moetune::planner
