#include "planner/framework_rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/model_spec.h"

namespace moetune::planner {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

ModelSpec Moe(int mtp_layers = 1) {
  ModelSpec m = *LoadModelPreset("deepseek-v3");
  m.mtp_layers = mtp_layers;
  return m;
}

ParallelConfig Layout(int pp, int vp, int ep) {
  ParallelConfig p;
  p.pp = pp;
  p.vp = vp;
  p.ep = ep;
  return p;
}

Knobs FullRecompute() {
  Knobs k;
  k.recompute.mode = RecomputeMode::kFull;
  return k;
}

Knobs Selective(uint32_t modules) {
  Knobs k;
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = modules;
  return k;
}

// Each rule, from the smallest knob change that breaks it.
TEST(MegatronViolationTest, DefaultKnobsAreAcceptedWhereTheScheduleAllows) {
  EXPECT_EQ(MegatronViolation(Moe(), Layout(4, 2, 8), Knobs{}), std::nullopt);
  EXPECT_EQ(MegatronViolation(Moe(), Layout(1, 1, 8), Knobs{}), std::nullopt);
}

TEST(MegatronViolationTest, EpOverlapNeedsInterleavingWhenPipelined) {
  EXPECT_THAT(MegatronViolation(Moe(), Layout(8, 1, 8), Knobs{}),
              Optional(FrameworkRule::kEpOverlapNeedsInterleaving));
  Knobs off;
  off.overlap.ep_comm = false;
  EXPECT_EQ(MegatronViolation(Moe(), Layout(8, 1, 8), off), std::nullopt);
  // ep = 1: no EP communication, the flag is not emitted.
  EXPECT_EQ(MegatronViolation(Moe(), Layout(8, 1, 1), Knobs{}), std::nullopt);
}

TEST(MegatronViolationTest, EpOverlapConflicts) {
  Knobs full = FullRecompute();
  full.cuda_graphs = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), full),
              Optional(FrameworkRule::kEpOverlapWithFullRecompute));
  Knobs moe = Selective(kRecomputeMoe);
  moe.cuda_graphs = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), moe),
              Optional(FrameworkRule::kEpOverlapWithMoeRecompute));
  EXPECT_THAT(MegatronViolation(Moe(/*mtp_layers=*/2), Layout(1, 1, 8), Knobs{}),
              Optional(FrameworkRule::kEpOverlapWithDeepMtp));
}

TEST(MegatronViolationTest, GraphsAndRecompute) {
  Knobs full = FullRecompute();
  full.overlap.ep_comm = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), full),
              Optional(FrameworkRule::kGraphsWithFullRecompute));
  Knobs moe = Selective(kRecomputeMoe);
  moe.overlap.ep_comm = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), moe),
              Optional(FrameworkRule::kGraphsWithMoeRecompute));
}

TEST(MegatronViolationTest, FullIterationGraphsHaveNoPerLayerExclusions) {
  // TransformerConfig.__post_init__ asserts these for per-layer graphs only:
  // full recompute needs cuda_graph_impl full_iteration, the moe recompute
  // clash is for transformer_engine's moe_router graph, and CPU offloading
  // runs under full_iteration graphs.
  Knobs full = FullRecompute();
  full.overlap.ep_comm = false;
  EXPECT_EQ(MegatronViolation(Moe(), Layout(1, 1, 8), full, /*full_iteration_graphs=*/true),
            std::nullopt);
  Knobs moe = Selective(kRecomputeMoe);
  moe.overlap.ep_comm = false;
  EXPECT_EQ(MegatronViolation(Moe(), Layout(1, 1, 8), moe, true), std::nullopt);
  const ModelSpec llama = *LoadModelPreset("llama3-70b");
  Knobs layers;  // CUDA graphs on
  layers.offload_layers = 40;
  EXPECT_EQ(MegatronViolation(llama, Layout(1, 1, 1), layers, true), std::nullopt);
  // The rules that do not involve graphs still hold.
  Knobs ep = FullRecompute();
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), ep, true),
              Optional(FrameworkRule::kEpOverlapWithFullRecompute));
  // Normalization keeps unpinned graphs on under the whole-iteration graph
  // (and turns the EP overlap off, which full recompute excludes anyway).
  const NormalizedKnobs kept = NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, ep, true);
  EXPECT_EQ(kept.violation, std::nullopt);
  EXPECT_TRUE(kept.knobs.cuda_graphs);
  EXPECT_FALSE(kept.knobs.overlap.ep_comm);
  EXPECT_FALSE(NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, ep).knobs.cuda_graphs);
}

TEST(MegatronViolationTest, ModulesNeedTheirFeature) {
  Knobs act = Selective(kRecomputeMoeAct);
  act.grouped_gemm = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), act),
              Optional(FrameworkRule::kMoeActRecomputeNeedsGroupedGemm));
  ModelSpec dense = *LoadModelPreset("llama3-8b");
  EXPECT_THAT(MegatronViolation(dense, Layout(1, 1, 1), Selective(kRecomputeMlaUpProj)),
              Optional(FrameworkRule::kMlaUpProjRecomputeNeedsMla));
  Knobs attn_proj;
  attn_proj.offload_activations = true;
  attn_proj.offload_modules = kOffloadAttnProj;
  EXPECT_THAT(MegatronViolation(dense, Layout(1, 1, 1), attn_proj),
              Optional(FrameworkRule::kAttnProjOffloadNeedsCoreAttn));
  Knobs inside = Selective(kRecomputeMoe);
  inside.cuda_graphs = false;
  inside.overlap.ep_comm = false;
  inside.offload_activations = true;
  inside.offload_modules = kOffloadMoeAct;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(1, 1, 8), inside),
              Optional(FrameworkRule::kOffloadInsideRecomputedMoe));
}

TEST(MegatronViolationTest, InterleavedPp2NeedsP2pOverlap) {
  Knobs k;
  k.overlap.pp_comm = false;
  EXPECT_THAT(MegatronViolation(Moe(), Layout(2, 2, 1), k),
              Optional(FrameworkRule::kInterleavedPp2NeedsP2pOverlap));
  EXPECT_EQ(MegatronViolation(Moe(), Layout(4, 2, 1), k), std::nullopt);
}

TEST(MegatronViolationTest, TpCommOverlapHasNoNvfp4Path) {
  // NVFP4 at tp 2 with the TP overlap on: refused when pinned, turned off when
  // searched; FP8 keeps it; tp 1 has nothing to overlap.
  ParallelConfig p = Layout(1, 1, 8);
  p.tp = 2;
  Knobs k;
  k.precision = Precision::kNvfp4;
  EXPECT_THAT(MegatronViolation(Moe(), p, k), Optional(FrameworkRule::kTpCommOverlapWithNvfp4));
  const NormalizedKnobs searched = NormalizeForMegatron(Moe(), p, FixedKnobs{}, k);
  EXPECT_EQ(searched.violation, std::nullopt);
  EXPECT_FALSE(searched.knobs.overlap.tp_comm);
  FixedKnobs pinned;
  pinned.overlap = true;
  EXPECT_THAT(NormalizeForMegatron(Moe(), p, pinned, k).violation,
              Optional(FrameworkRule::kTpCommOverlapWithNvfp4));
  k.precision = Precision::kFp8;
  EXPECT_EQ(MegatronViolation(Moe(), p, k), std::nullopt);
  k.precision = Precision::kNvfp4;
  p.tp = 1;
  EXPECT_EQ(MegatronViolation(Moe(), p, k), std::nullopt);
}

TEST(MegatronViolationTest, MoeBiasNeedsEtp1) {
  const ModelSpec oss = *LoadModelPreset("gpt-oss-120b");
  ParallelConfig p = Layout(1, 1, 8);
  EXPECT_EQ(MegatronViolation(oss, p, Knobs{}), std::nullopt);
  p.etp = 2;
  EXPECT_THAT(MegatronViolation(oss, p, Knobs{}), Optional(FrameworkRule::kMoeBiasNeedsEtp1));
  EXPECT_EQ(MegatronViolation(Moe(), p, Knobs{}), std::nullopt);  // no biases
}

TEST(NormalizeForMegatronTest, TurnsOffWhatTheFrameworkCannotCombine) {
  const NormalizedKnobs n =
      NormalizeForMegatron(Moe(), Layout(4, 2, 8), FixedKnobs{}, FullRecompute());
  EXPECT_EQ(n.violation, std::nullopt);
  EXPECT_FALSE(n.knobs.overlap.ep_comm);
  EXPECT_FALSE(n.knobs.cuda_graphs);
  EXPECT_TRUE(n.knobs.overlap.tp_comm);  // untouched
  EXPECT_EQ(n.knobs.recompute.mode, RecomputeMode::kFull);

  Knobs act = Selective(kRecomputeMoeAct);
  act.grouped_gemm = false;
  EXPECT_TRUE(NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, act)
                  .knobs.grouped_gemm);

  Knobs inside = Selective(kRecomputeMoe | kRecomputeCoreAttn);
  inside.offload_activations = true;
  inside.offload_modules = kOffloadMoeAct | kOffloadExpertFc1 | kOffloadCoreAttn;
  const NormalizedKnobs m = NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, inside);
  EXPECT_EQ(m.violation, std::nullopt);
  EXPECT_EQ(m.knobs.offload_modules, uint32_t{kOffloadCoreAttn});
}

TEST(NormalizeForMegatronTest, P2pOverlapFollowsTheSchedule) {
  // Non-interleaved: Megatron turns P2P overlap off itself, pinned or not.
  FixedKnobs pinned;
  pinned.overlap = true;
  Knobs k;
  k.overlap.ep_comm = false;
  EXPECT_FALSE(NormalizeForMegatron(Moe(), Layout(8, 1, 8), pinned, k).knobs.overlap.pp_comm);
  // Interleaved pp = 2 needs it: on unless overlap is pinned off.
  Knobs none;
  none.overlap = Overlap{false, false, false, false, 1};
  EXPECT_TRUE(NormalizeForMegatron(Moe(), Layout(2, 2, 1), FixedKnobs{}, none)
                  .knobs.overlap.pp_comm);
  FixedKnobs off;
  off.overlap = false;
  EXPECT_THAT(NormalizeForMegatron(Moe(), Layout(2, 2, 1), off, none).violation,
              Optional(FrameworkRule::kInterleavedPp2NeedsP2pOverlap));
}

TEST(NormalizeForMegatronTest, PinnedConflictsAreViolations) {
  FixedKnobs pinned;
  pinned.overlap = true;
  EXPECT_THAT(NormalizeForMegatron(Moe(), Layout(8, 1, 8), pinned, Knobs{}).violation,
              Optional(FrameworkRule::kEpOverlapNeedsInterleaving));
  FixedKnobs graphs;
  graphs.cuda_graphs = true;
  Knobs full = FullRecompute();
  EXPECT_THAT(NormalizeForMegatron(Moe(), Layout(1, 1, 8), graphs, full).violation,
              Optional(FrameworkRule::kGraphsWithFullRecompute));
}

// The rank-order rule (parallel_state.py initialize_model_parallel): in
// order tp-cp-ep-pp-dp a pipeline group strides over tp x cp dense ranks and
// etp x ep expert ranks; Megatron asserts they agree when pp > 1.
TEST(MegatronLayoutTest, DpOutermostNeedsMatchingGrids) {
  // DeepSeek-V3, tp 1, ep 64, pp 8: stride 1 vs 64 -> refused in that order.
  ParallelConfig p = Layout(8, 1, 64);
  EXPECT_EQ(MegatronLayoutViolations(Moe(), p), 0u);  // default order: pp outermost
  p.dp_outermost = true;
  EXPECT_THAT(FirstRule(MegatronLayoutViolations(Moe(), p)),
              Optional(FrameworkRule::kDpOutermostExpertGrid));
  // tp 2 x cp 2 = 4 = ep 4 x etp 1: the groups agree.
  p.tp = 2, p.cp = 2, p.ep = 4, p.etp = 1;
  EXPECT_EQ(MegatronLayoutViolations(Moe(), p), 0u);
  // tp 2 x cp 2 = 4 vs ep 2 x etp 1 = 2: refused.
  p.ep = 2;
  EXPECT_NE(MegatronLayoutViolations(Moe(), p), 0u);
  // pp 1: no pipeline groups, both orders the same.
  p.pp = 1;
  EXPECT_EQ(MegatronLayoutViolations(Moe(), p), 0u);
  // A dense model: the emitter sizes its unused expert grid (etp = tp x cp).
  ParallelConfig dense = Layout(8, 8, 1);
  dense.tp = 4, dense.cp = 2, dense.dp_outermost = true;
  EXPECT_EQ(MegatronLayoutViolations(*LoadModelPreset("llama3.1-405b"), dense), 0u);
  EXPECT_TRUE(IsLayoutRule(FrameworkRule::kDpOutermostExpertGrid));
  EXPECT_THAT(RuleText(FrameworkRule::kDpOutermostExpertGrid),
              HasSubstr("Megatron-Core: --use-tp-pp-dp-mapping (dp_outermost) with pp > 1 "
                        "needs the expert grid to match the dense one"));
  EXPECT_THAT(RuleText(FrameworkRule::kDpOutermostExpertGrid),
              HasSubstr("megatron/core/parallel_state.py"));
}

TEST(RuleTextTest, NamesTheFlagAndTheCheck) {
  EXPECT_THAT(RuleText(FrameworkRule::kEpOverlapNeedsInterleaving),
              HasSubstr("Megatron-Core: --overlap-moe-expert-parallel-comm needs "
                        "virtual pipeline stages when pp > 1 (megatron/core/"
                        "transformer/transformer_config.py"));
  EXPECT_THAT(RuleText(FrameworkRule::kInterleavedPp2NeedsP2pOverlap),
              HasSubstr("megatron/training/arguments.py, validate_args"));
  for (int r = 0; r < kNumFrameworkRules; ++r) {
    EXPECT_FALSE(RuleInfo(static_cast<FrameworkRule>(r)).name.empty()) << r;
  }
}

TEST(RuleLayoutClassTest, RepresentativeHasTheSameClass) {
  for (const ParallelConfig& p : {Layout(1, 1, 1), Layout(8, 1, 8), Layout(2, 4, 1),
                                  Layout(4, 2, 64), Layout(8, 4, 1)}) {
    EXPECT_EQ(ClassOf(RepresentativeLayout(ClassOf(p))).Index(), ClassOf(p).Index());
  }
  for (ParallelConfig p : {Layout(1, 1, 8), Layout(8, 1, 8)}) {
    p.etp = 4;
    EXPECT_EQ(ClassOf(RepresentativeLayout(ClassOf(p))).Index(), ClassOf(p).Index());
  }
  for (ParallelConfig p : {Layout(1, 1, 8), Layout(2, 4, 1)}) {
    p.tp = 4;
    EXPECT_EQ(ClassOf(RepresentativeLayout(ClassOf(p))).Index(), ClassOf(p).Index());
  }
}

// --- MaxText ---------------------------------------------------------------

TrainingShape Shape(int gpus, int gbs) {
  TrainingShape t;
  t.gpus = gpus;
  t.seq_len = 4096;
  t.global_batch = gbs;
  return t;
}

Knobs MaxTextDefault(const ModelSpec& m) {
  // What MaxText always recomputes: norms, and the MoE activation.
  return Selective(kRecomputeLayerNorm | (m.IsMoe() ? uint32_t{kRecomputeMoeAct} : 0u));
}

TEST(MaxTextLayoutTest, TheSeedLayoutRuns) {
  // DeepSeek-V3 on 128 GPUs: FSDP 16 x EP 8, no pipeline.
  ParallelConfig p = Layout(1, 1, 8);
  p.dp = 128;
  p.shard_params = true;
  p.mbs = 6;
  EXPECT_EQ(MaxTextLayoutViolation(Moe(), Shape(128, 768), p), std::nullopt);
}

TEST(MaxTextLayoutTest, EachLayoutRule) {
  // etp != tp: the expert FFN dim shards over the tensor axis.
  ParallelConfig etp = Layout(1, 1, 8);
  etp.etp = 2;
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), etp),
              Optional(FrameworkRule::kMaxTextEtpIsTp));
  // ep not inside dp: 128 GPUs, tp 8 -> dp 16, ep 32.
  ParallelConfig ep = Layout(1, 1, 32);
  ep.tp = ep.etp = 8;
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), ep),
              Optional(FrameworkRule::kMaxTextExpertAxisInData));
  // DeepSeek-V3 pipelines its 58 MoE layers (61 - 3 dense): pp 2 divides,
  // pp 2 x vp 2 = 4 does not.
  EXPECT_EQ(MaxTextPipelinedLayers(Moe()), 58);
  EXPECT_EQ(MaxTextLayoutViolation(Moe(), Shape(128, 768), Layout(2, 1, 8)), std::nullopt);
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), Layout(2, 2, 8)),
              Optional(FrameworkRule::kMaxTextPipelineEvenStages));
  ParallelConfig uneven = Layout(2, 1, 8);
  uneven.first_stage_layers = 29;
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), uneven),
              Optional(FrameworkRule::kMaxTextPipelineNoUnevenStages));
  // 128 GPUs, pp 2 -> dp 64; gbs 64 at mbs 1: 1 micro-batch, not a multiple of 2.
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 64), Layout(2, 1, 8)),
              Optional(FrameworkRule::kMaxTextPipelineMicrobatches));
  // Every rule a layout breaks, pipeline first.
  ParallelConfig both = Layout(2, 2, 8);
  both.etp = 2;
  const uint32_t broken = MaxTextLayoutViolations(Moe(), Shape(128, 768), both);
  EXPECT_NE(broken & (1u << static_cast<int>(FrameworkRule::kMaxTextEtpIsTp)), 0u);
  EXPECT_THAT(FirstRule(broken), Optional(FrameworkRule::kMaxTextPipelineEvenStages));
}

TEST(MaxTextKnobsTest, NamedCheckpointsOnly) {
  EXPECT_EQ(MaxTextViolation(Moe(), Layout(1, 1, 8), MaxTextDefault(Moe())), std::nullopt);
  EXPECT_EQ(MaxTextViolation(Moe(), Layout(1, 1, 8), FullRecompute()), std::nullopt);
  EXPECT_THAT(MaxTextViolation(Moe(), Layout(1, 1, 8), Knobs{}),
              Optional(FrameworkRule::kMaxTextUnnamedAlwaysRemat));
  EXPECT_THAT(MaxTextViolation(Moe(), Layout(1, 1, 8), Selective(kRecomputeLayerNorm)),
              Optional(FrameworkRule::kMaxTextUnnamedAlwaysRemat));  // moe_act missing
  Knobs norm = MaxTextDefault(Moe());
  norm.offload_activations = true;
  norm.offload_modules = kOffloadMlpNorm;
  EXPECT_THAT(MaxTextViolation(Moe(), Layout(1, 1, 8), norm),
              Optional(FrameworkRule::kMaxTextOffloadNeedsName));
  Knobs full = FullRecompute();
  full.offload_activations = true;
  full.offload_modules = kOffloadExpertFc1;
  EXPECT_THAT(MaxTextViolation(Moe(), Layout(1, 1, 8), full),
              Optional(FrameworkRule::kMaxTextFullRematNoOffload));
}

TEST(MaxTextKnobsTest, NormalizeChangesOnlyWhatIsNotPinned) {
  Knobs k;  // recompute none, offload all
  k.offload_activations = true;
  k.offload_modules = kOffloadMlpNorm | kOffloadExpertFc1;
  const NormalizedKnobs n = NormalizeForMaxText(Moe(), Layout(1, 1, 8), FixedKnobs{}, k);
  EXPECT_EQ(n.violation, std::nullopt);
  EXPECT_EQ(n.knobs.recompute.mode, RecomputeMode::kSelective);
  EXPECT_EQ(n.knobs.recompute.modules, kRecomputeLayerNorm | kRecomputeMoeAct);
  EXPECT_EQ(n.knobs.offload_modules, uint32_t{kOffloadExpertFc1});
  FixedKnobs pinned;
  pinned.recompute = Recompute{};
  EXPECT_THAT(NormalizeForMaxText(Moe(), Layout(1, 1, 8), pinned, k).violation,
              Optional(FrameworkRule::kMaxTextUnnamedAlwaysRemat));
  // The generic forms dispatch on the framework.
  EXPECT_THAT(FrameworkViolation(Framework::kMaxText, Moe(), Layout(1, 1, 8), Knobs{}),
              Optional(FrameworkRule::kMaxTextUnnamedAlwaysRemat));
  EXPECT_EQ(FrameworkViolation(Framework::kMegatron, Moe(), Layout(1, 1, 8), Knobs{}),
            std::nullopt);
}

TEST(MaxTextRematTest, TheSeedsCustomPolicy) {
  // The seed: up-projections of the experts offloaded, attention context
  // recomputed, the rest saved on device.
  Knobs k = Selective(kRecomputeLayerNorm | kRecomputeMoeAct | kRecomputeCoreAttn);
  k.offload_activations = true;
  k.offload_modules = kOffloadExpertFc1;
  const MaxTextRemat r = MaxTextRematOf(Moe(), k);
  EXPECT_EQ(r.remat_policy, "custom");
  auto policy = [&r](std::string_view name) -> std::string_view {
    for (const MaxTextRematName& n : r.names) {
      if (n.name == name) return n.policy;
    }
    return "absent";
  };
  EXPECT_EQ(policy("decoder_layer_input"), "device");
  EXPECT_EQ(policy("context"), "remat");
  EXPECT_EQ(policy("moe_mlpwi_0"), "offload");
  EXPECT_EQ(policy("moe_mlpwi_1"), "offload");
  EXPECT_EQ(policy("moe_mlpwo"), "device");
  EXPECT_EQ(policy("mla_q"), "device");
  EXPECT_EQ(policy("query_proj"), "absent");  // MLA: no separate q projection
  EXPECT_EQ(MaxTextRematOf(Moe(), FullRecompute()).remat_policy, "full");
  EXPECT_TRUE(MaxTextRematOf(Moe(), FullRecompute()).names.empty());
}

TEST(RuleTextTest, MaxTextRulesSayMaxText) {
  EXPECT_THAT(RuleText(FrameworkRule::kMaxTextPipelineEvenStages),
              HasSubstr("MaxText: pp x vp (stages x num_pipeline_repeats) must divide"));
  EXPECT_THAT(RuleText(FrameworkRule::kMaxTextPipelineEvenStages), HasSubstr("configs/types.py"));
  for (int r = 0; r < kNumFrameworkRules; ++r) {
    const FrameworkRule rule = static_cast<FrameworkRule>(r);
    EXPECT_EQ(RuleInfo(rule).framework == Framework::kMaxText,
              RuleText(rule).rfind("MaxText: ", 0) == 0)
        << r;
  }
}

// MaxText has no rank order: a pin of dp_outermost is refused by its rule,
// named first whatever else the layout breaks.
TEST(MaxTextLayoutTest, NoRankOrder) {
  ParallelConfig p = Layout(1, 1, 8);
  p.dp = 128;
  p.shard_params = true;
  p.dp_outermost = true;
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), p),
              Optional(FrameworkRule::kMaxTextNoRankOrder));
  p.etp = 2;  // also breaks kMaxTextEtpIsTp
  EXPECT_THAT(MaxTextLayoutViolation(Moe(), Shape(128, 768), p),
              Optional(FrameworkRule::kMaxTextNoRankOrder));
  EXPECT_THAT(FirstRule(FrameworkLayoutViolations(Framework::kMaxText, Moe(), Shape(128, 768), p)),
              Optional(FrameworkRule::kMaxTextNoRankOrder));
  EXPECT_THAT(RuleText(FrameworkRule::kMaxTextNoRankOrder), HasSubstr("MaxText: dp_outermost"));
}

// BF16 Adam moments are Megatron's precision-aware optimizer; MaxText's
// optax Adam has no such setting, so the plan is refused by name, while
// Megatron takes it with any layout (FSDP included).
TEST(MaxTextKnobsTest, Bf16OptimizerStatesRefused) {
  Knobs k;
  k.recompute.mode = RecomputeMode::kFull;  // MaxText's always-remat rule satisfied
  EXPECT_EQ(MaxTextViolation(Moe(), Layout(1, 1, 8), k), std::nullopt);
  k.optimizer_states = OptimizerStates::kBf16Moments;
  EXPECT_THAT(MaxTextViolation(Moe(), Layout(1, 1, 8), k),
              Optional(FrameworkRule::kMaxTextOptimizerStatesFp32));
  EXPECT_THAT(RuleText(FrameworkRule::kMaxTextOptimizerStatesFp32),
              HasSubstr("MaxText: optimizer_states=bf16"));
  ParallelConfig fsdp = Layout(1, 1, 8);
  fsdp.shard_params = true;
  Knobs megatron;
  megatron.optimizer_states = OptimizerStates::kBf16Moments;
  EXPECT_EQ(MegatronViolation(Moe(), fsdp, megatron), std::nullopt);
}

// Layer-wise CPU offloading (--cpu-offloading-num-layers): each of
// Megatron's four conditions from the smallest change that breaks it, the
// layer bound, what normalization switches off, and MaxText's refusal.
TEST(MegatronViolationTest, LayerOffloadConditions) {
  const ModelSpec llama = *LoadModelPreset("llama3-70b");  // 80 layers
  Knobs k;
  k.cuda_graphs = false;
  k.offload_layers = 40;
  EXPECT_EQ(MegatronViolation(llama, Layout(1, 1, 1), k), std::nullopt);
  EXPECT_THAT(MegatronViolation(llama, Layout(4, 1, 1), k),
              Optional(FrameworkRule::kLayerOffloadNeedsPp1));
  Knobs rc = k;
  rc.recompute = Selective(kRecomputeCoreAttn).recompute;
  EXPECT_THAT(MegatronViolation(llama, Layout(1, 1, 1), rc),
              Optional(FrameworkRule::kLayerOffloadWithRecompute));
  Knobs fine = k;
  fine.offload_activations = true;
  fine.offload_modules = kOffloadCoreAttn;
  EXPECT_THAT(MegatronViolation(llama, Layout(1, 1, 1), fine),
              Optional(FrameworkRule::kLayerOffloadWithModuleOffload));
  Knobs graphs = k;
  graphs.cuda_graphs = true;
  EXPECT_THAT(MegatronViolation(llama, Layout(1, 1, 1), graphs),
              Optional(FrameworkRule::kLayerOffloadWithGraphs));
  Knobs all = k;
  all.offload_layers = 80;
  EXPECT_THAT(MegatronViolation(llama, Layout(1, 1, 1), all),
              Optional(FrameworkRule::kLayerOffloadTooManyLayers));
  all.offload_layers = 79;
  EXPECT_EQ(MegatronViolation(llama, Layout(1, 1, 1), all), std::nullopt);
  EXPECT_THAT(RuleText(FrameworkRule::kLayerOffloadNeedsPp1),
              HasSubstr("--cpu-offloading-num-layers (layer-wise CPU offloading) needs pp = 1"));
  // Unpinned graphs and fine-grained offload are switched off; pinned, the
  // conflict is reported.
  Knobs defaults;  // CUDA graphs on
  defaults.offload_layers = 40;
  defaults.offload_activations = true;
  defaults.offload_modules = kOffloadCoreAttn;
  const NormalizedKnobs n = NormalizeForMegatron(llama, Layout(1, 1, 1), FixedKnobs{}, defaults);
  EXPECT_EQ(n.violation, std::nullopt);
  EXPECT_FALSE(n.knobs.cuda_graphs);
  EXPECT_FALSE(n.knobs.offload_activations);
  EXPECT_TRUE(NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, Knobs{})
                  .knobs.overlap.ep_comm);
  Knobs moe = defaults;
  moe.offload_layers = 10;
  EXPECT_FALSE(NormalizeForMegatron(Moe(), Layout(1, 1, 8), FixedKnobs{}, moe)
                   .knobs.overlap.ep_comm);  // TE's synchronizer vs combined 1F1B
  FixedKnobs pinned;
  pinned.cuda_graphs = true;
  EXPECT_THAT(NormalizeForMegatron(llama, Layout(1, 1, 1), pinned, defaults).violation,
              Optional(FrameworkRule::kLayerOffloadWithGraphs));
  Knobs full = FullRecompute();
  full.offload_layers = 40;
  EXPECT_THAT(MaxTextViolation(llama, Layout(1, 1, 1), full),
              Optional(FrameworkRule::kMaxTextNoLayerOffload));
  // The optimizer-state CPU offload has no MaxText setting either.
  Knobs host_adam = FullRecompute();
  host_adam.optimizer_offload_fraction = 0.5;
  EXPECT_THAT(MaxTextViolation(llama, Layout(1, 1, 1), host_adam),
              Optional(FrameworkRule::kMaxTextNoOptimizerOffload));
  EXPECT_THAT(RuleText(FrameworkRule::kMaxTextNoOptimizerOffload),
              HasSubstr("optimizer_offload_fraction"));
}

}  // namespace
}  // namespace moetune::planner
