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
  for (const ParallelConfig& p :
       {Layout(1, 1, 1), Layout(8, 1, 8), Layout(2, 4, 1), Layout(4, 2, 64)}) {
    EXPECT_EQ(ClassOf(RepresentativeLayout(ClassOf(p))).Index(), ClassOf(p).Index());
  }
  for (ParallelConfig p : {Layout(1, 1, 8), Layout(8, 1, 8)}) {
    p.etp = 4;
    EXPECT_EQ(ClassOf(RepresentativeLayout(ClassOf(p))).Index(), ClassOf(p).Index());
  }
}

}  // namespace
}  // namespace moetune::planner
