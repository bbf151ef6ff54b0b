// The default search must find the same plans as the exhaustive one (which
// scores every candidate of the space with the real step model), on several
// models and clusters: dense and MoE, GQA and MLA, MTP and uneven pipeline
// stages, 8-GPU and 72-GPU NVLink domains, one precision and all of them,
// ample and tight memory.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/framework_rules.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/search.h"
#include "planner/search_space.h"
#include "planner/step_model.h"
#include "planner/units.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::IsOk;
using ::moetune::testing::StatusIs;

struct Case {
  std::string model;
  std::string cluster;
  int gpus, seq, gbs;
  std::string fix;           // --fix string, narrows big spaces
  bool all_precisions = false;
  double memory_fraction = 1.0;
  Framework framework = Framework::kMegatron;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.model + "_" + info.param.cluster + "_" +
                  std::to_string(info.param.gpus) +
                  (info.param.framework == Framework::kMaxText ? "_maxtext" : "");
  for (char& c : n) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

class ExhaustiveEqualsDefaultTest : public ::testing::TestWithParam<Case> {};

TEST_P(ExhaustiveEqualsDefaultTest, SameTopPlans) {
  const Case& c = GetParam();
  SearchProblem problem;
  absl::StatusOr<ModelSpec> model = LoadModelPreset(c.model);
  ASSERT_THAT(model, IsOk());
  absl::StatusOr<ClusterSpec> cluster = LoadClusterPreset(c.cluster);
  ASSERT_THAT(cluster, IsOk());
  problem.model = *model;
  problem.cluster = *cluster;
  problem.shape = TrainingShape{c.gpus, c.seq, c.gbs};
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);

  SearchOptions options;
  options.top_k = 3;
  options.threads = 2;
  options.max_memory_fraction = c.memory_fraction;
  absl::StatusOr<FixedKnobs> fixed = ParseFixSpec(c.fix);
  ASSERT_THAT(fixed, IsOk());
  options.constraints.fixed = *fixed;
  if (c.all_precisions) {
    options.constraints.precisions = SupportedPrecisions(problem.cluster.gpu);
  }
  options.framework = c.framework;
  StackConstants stack;
  stack.framework = c.framework;
  absl::StatusOr<SearchResult> fast = Search(problem, cost, options, stack);
  options.exhaustive = true;
  absl::StatusOr<SearchResult> full = Search(problem, cost, options, stack);
  ASSERT_THAT(fast, IsOk());
  ASSERT_THAT(full, IsOk());
  std::cout << ToString(problem) << "\n  default: " << fast->candidates_evaluated
            << " scored in " << fast->search_seconds << " s; exhaustive: "
            << full->candidates_evaluated << " in " << full->search_seconds
            << " s\n  best: " << ToString(full->best.plan) << " -> "
            << full->best.prediction.tokens_per_sec_per_gpu << " tokens/s/GPU\n";

  if (c.framework == Framework::kMegatron) {
    EXPECT_EQ(full->candidates_evaluated, full->candidates_total);
  } else {
    // MaxText drops the layouts it cannot run before scoring: the rest is
    // every candidate.
    uint64_t refused = 0;
    for (const PruneCount& pc : full->pruned) {
      if (!pc.evaluated) {
        EXPECT_EQ(pc.rule, PruneRule::kFrameworkLayout) << pc.detail;
        refused += pc.candidates;
      }
    }
    EXPECT_GT(refused, 0u);
    EXPECT_EQ(full->candidates_evaluated + refused, full->candidates_total);
  }
  EXPECT_EQ(fast->candidates_total, full->candidates_total);
  EXPECT_LT(fast->candidates_evaluated, full->candidates_evaluated / 4);
  ASSERT_EQ(fast->top.size(), full->top.size());
  for (size_t i = 0; i < full->top.size(); ++i) {
    EXPECT_EQ(ToString(fast->top[i].plan), ToString(full->top[i].plan)) << i;
    EXPECT_DOUBLE_EQ(fast->top[i].prediction.tokens_per_sec_per_gpu,
                     full->top[i].prediction.tokens_per_sec_per_gpu)
        << i;
  }
  EXPECT_EQ(ToString(fast->best.plan), ToString(full->best.plan));
  EXPECT_LE(full->best.prediction.peak_memory_bytes, full->memory_limit_bytes);
  // The reported prediction is the step model's own for that plan.
  EXPECT_GT(full->best.prediction.tokens_per_sec_per_gpu, 0);
  EXPECT_FALSE(full->best.prediction.breakdown.empty());
  // Every plan reported is one the framework runs, and says whose it is.
  for (const SearchResult* r : {&*fast, &*full}) {
    for (const std::vector<RankedPlan>* plans : {&r->top, &r->pareto}) {
      for (const RankedPlan& rp : *plans) {
        EXPECT_EQ(rp.prediction.framework, c.framework);
        EXPECT_EQ(FrameworkViolation(c.framework, problem.model, rp.plan.parallel, rp.plan.knobs),
                  std::nullopt)
            << ToString(rp.plan);
        if (c.framework == Framework::kMaxText) {
          EXPECT_EQ(MaxTextLayoutViolation(problem.model, problem.shape, rp.plan.parallel),
                    std::nullopt)
              << ToString(rp.plan);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ExhaustiveEqualsDefaultTest,
    ::testing::Values(
        // Dense, GQA, 8-GPU nodes.
        Case{"llama3-8b", "h100-sxm", 16, 8192, 128, ""},
        // Dense and tight: 70B on 32 H100 within 90% of HBM.
        Case{"llama3-70b", "h100-sxm", 32, 4096, 64, "", false, 0.9},
        // MoE with GQA, all-to-all vs de-duplicated dispatch.
        Case{"mixtral-8x7b", "h100-sxm", 16, 4096, 256, ""},
        // Fine-grained MoE on Blackwell, every precision the GPU has.
        Case{"qwen3-30b-a3b", "b200", 8, 4096, 256, "", true},
        // MLA + MTP + 61 layers (uneven stages) on 72-GPU NVLink domains.
        Case{"deepseek-v3", "gb200-nvl72", 256, 4096, 1024, "tp=1,cp=1"},
        // MaxText's space (framework_rules.h): FSDP searched both ways, even
        // circular pipelines, named-checkpoint remat/offload only.
        Case{"mixtral-8x7b", "h100-sxm", 16, 4096, 256, "", false, 1.0, Framework::kMaxText},
        Case{"llama3-8b", "h100-sxm", 16, 8192, 128, "", false, 1.0, Framework::kMaxText},
        // The seed's problem (DeepSeek-V3 on 128 GB200, gbs 768).
        Case{"deepseek-v3", "gb200-nvl72", 128, 4096, 768, "tp=1,cp=1", false, 1.0,
             Framework::kMaxText}),
    Name);

// The default search drops a layout when WeightsFloorBytes() exceeds the
// limit: the floor must never exceed what the step model says any knob
// setting of the layout needs. Checked on every 7th layout of several
// problems, for every knob combination (every precision the GPU has).
TEST(SearchAssumptionsTest, WeightsFloorIsBelowStepModelMemory) {
  struct P {
    const char* model;
    const char* cluster;
    int gpus, seq, gbs;
    const char* fix;
  };
  for (const P& c : {P{"deepseek-v3", "gb200-nvl72", 256, 4096, 1024, "tp=1,cp=1"},
                     P{"qwen3-30b-a3b", "b200", 16, 4096, 256, ""},
                     P{"llama3-70b", "h100-sxm", 32, 4096, 64, "shard_params=true"}}) {
    SCOPED_TRACE(c.model);
    const ModelSpec model = *LoadModelPreset(c.model);
    const ClusterSpec cluster = *LoadClusterPreset(c.cluster);
    const TrainingShape shape{c.gpus, c.seq, c.gbs};
    absl::StatusOr<StepModel> step = StepModel::Create(
        model, cluster, shape, std::make_shared<DatasheetCostModel>(cluster));
    ASSERT_THAT(step, IsOk());
    SpaceConstraints constraints;
    constraints.fixed = *ParseFixSpec(c.fix);
    constraints.precisions = SupportedPrecisions(cluster.gpu);
    const KnobAxes axes = *BuildKnobAxes(model, cluster, constraints);
    const std::vector<ParallelConfig> layouts =
        EnumerateLayouts(model, cluster, shape, constraints.fixed, nullptr);
    ASSERT_FALSE(layouts.empty());
    int checked = 0;
    for (size_t i = 0; i < layouts.size(); i += 7) {
      const ParallelConfig& p = layouts[i];
      const double floor = WeightsFloorBytes(model, p, false);
      for (const Knobs& k : BuildKnobSet(axes, model, p.ep > 1).combos) {
        const Estimate e = step->Quick(p, k);
        if (e.reason != Infeasibility::kNone) continue;
        ASSERT_LE(floor, e.peak_memory_bytes) << ToString(p) << " " << ToString(k);
        ++checked;
      }
    }
    EXPECT_GT(checked, 0);
  }
}

// With the datasheet cost model and the pipeline split fixed, the knob axes
// other than overlap are ordered fastest first. The TP overlap is bounded
// value by value on TP layouts by design (its split GEMMs can cost more than
// it hides: no order holds). Two member axes change peak memory the way the
// search must see, both through Megatron-Core's layernorm recompute: the
// pre-MLP norm is recomputed and its output freed only where the router is
// not captured in a per-layer CUDA graph, or captured with the NCCL
// all-to-all, whose preprocess stays outside the graph
// (PreMlpNormRecomputed). So under selective layernorm recompute CUDA graphs
// off and the all-to-all need less memory than the faster setting, and the
// audit, which looks from every subgroup head (each recompute x offload
// setting), finds exactly those two; grouped GEMM changes speed only. (An
// audit from the group head and the full-recompute head alone sees neither
// effect on the combinations the framework runs: per-layer graphs are off
// under full recompute.) DeepSeek-V3 on 1,024 GB200, pp = 8 with 7 + 6 x 8
// + 6 layers.
TEST(SearchAssumptionsTest, AuditFindsTheNormRecomputeAxesWithExplicitStages) {
  SearchProblem problem;
  problem.model = *LoadModelPreset("deepseek-v3");
  problem.cluster = *LoadClusterPreset("gb200-nvl72");
  problem.shape = TrainingShape{1024, 4096, 8192};
  SearchOptions options;
  options.constraints.fixed =
      *ParseFixSpec("pp=8,vp=1,first_stage_layers=7,last_stage_layers=6");
  absl::StatusOr<SearchResult> r =
      Search(problem, std::make_shared<DatasheetCostModel>(problem.cluster), options);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->audit_failed_axes, ::testing::ElementsAre("tp_overlap"));
  EXPECT_THAT(r->audit_memory_axes,
              ::testing::UnorderedElementsAre("dispatcher", "cuda_graphs"));
  EXPECT_GT(r->audit_evaluations, 0u);

  // The mechanism by hand on one layout of that space (tp 2, ep 16, mbs 8,
  // recompute mla_up_proj + layernorm + moe_act): graphs on and the flex
  // dispatcher keep the pre-MLP norm's output, graphs off or the
  // all-to-all free it; without the layernorm recompute all three agree.
  absl::StatusOr<StepModel> step = StepModel::Create(
      problem.model, problem.cluster, problem.shape,
      std::make_shared<DatasheetCostModel>(problem.cluster));
  ASSERT_THAT(step, IsOk());
  ParallelConfig p;
  p.tp = 2, p.pp = 8, p.vp = 1, p.ep = 16, p.etp = 1, p.cp = 1, p.mbs = 8;
  p.first_stage_layers = 7, p.last_stage_layers = 6;
  Knobs fast;
  fast.recompute.mode = RecomputeMode::kSelective;
  fast.recompute.modules = kRecomputeMlaUpProj | kRecomputeLayerNorm | kRecomputeMoeAct;
  fast.overlap.ep_comm = false;  // Megatron: no EP A2A overlap without interleaving
  Knobs no_graphs = fast, all_to_all = fast;
  no_graphs.cuda_graphs = false;
  all_to_all.dispatcher = Dispatcher::kAllToAll;
  const double with = step->Quick(p, fast).peak_memory_bytes;
  EXPECT_LT(step->Quick(p, no_graphs).peak_memory_bytes, with);
  EXPECT_LT(step->Quick(p, all_to_all).peak_memory_bytes, with);
  for (Knobs* k : {&fast, &no_graphs, &all_to_all}) {
    k->recompute.modules = kRecomputeMlaUpProj | kRecomputeMoeAct;
  }
  EXPECT_EQ(step->Quick(p, no_graphs).peak_memory_bytes, step->Quick(p, fast).peak_memory_bytes);
  EXPECT_EQ(step->Quick(p, all_to_all).peak_memory_bytes, step->Quick(p, fast).peak_memory_bytes);
}

// When nothing fits, both modes say so (70B on 16 H100 within 90% of HBM).
TEST(ExhaustiveEqualsDefaultInfeasibleTest, BothReportNoFeasiblePlan) {
  SearchProblem problem;
  problem.model = *LoadModelPreset("llama3-70b");
  problem.cluster = *LoadClusterPreset("h100-sxm");
  problem.shape = TrainingShape{16, 4096, 64};
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  SearchOptions options;
  options.max_memory_fraction = 0.9;
  for (bool exhaustive : {false, true}) {
    options.exhaustive = exhaustive;
    EXPECT_THAT(Search(problem, cost, options),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         ::testing::HasSubstr("no plan fits in memory")));
  }
}

// Llama3-8B on one H100: no candidate fits (the fp32 Adam state alone is
// 12 B x 8e9 = 96 GB), but the least-memory one does with its optimizer
// state on the host; the error says so, and that the search never tries it.
// Asked for, the offload is priced and a plan comes back.
TEST(NoFeasiblePlanTest, SaysWhenTheOptimizerOffloadWouldFit) {
  SearchProblem problem;
  problem.model = *LoadModelPreset("llama3-8b");
  problem.cluster = *LoadClusterPreset("h100-sxm");
  problem.shape = TrainingShape{1, 4096, 8};
  auto cost = std::make_shared<DatasheetCostModel>(problem.cluster);
  SearchOptions options;
  EXPECT_THAT(Search(problem, cost, options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(
                           ::testing::HasSubstr("no plan fits in memory"),
                           ::testing::HasSubstr("with all of its optimizer state stepped on the "
                                                "host it fits in"),
                           ::testing::HasSubstr("--optimizer-offload-fraction 1, never searched"))));
  options.constraints.optimizer_offload_fraction = 1.0;
  absl::StatusOr<SearchResult> r = Search(problem, cost, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->best.plan.knobs.optimizer_offload_fraction, 1.0);
  EXPECT_TRUE(r->best.prediction.fits);
  // Where the offload cannot help (70B on 16 H100 above) the error has no hint.
  SearchProblem big = problem;
  big.model = *LoadModelPreset("llama3-70b");
  big.shape = TrainingShape{16, 4096, 64};
  SearchOptions tight;
  tight.max_memory_fraction = 0.05;
  EXPECT_THAT(Search(big, std::make_shared<DatasheetCostModel>(big.cluster), tight),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::Not(::testing::HasSubstr("optimizer state stepped"))));
}

}  // namespace
}  // namespace moetune::planner
