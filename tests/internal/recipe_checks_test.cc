#include "tests/internal/recipe_checks.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace moetune::tests {
namespace {

namespace planner = ::moetune::planner;

std::map<std::string, RecipeCheck> ById() {
  std::map<std::string, RecipeCheck> m;
  for (const RecipeCheck& c : PublicRecipeChecks()) {
    EXPECT_TRUE(m.emplace(c.id, c).second) << "duplicate id " << c.id;
  }
  return m;
}

// The Megatron-Bridge Qwen3-30B-A3B verification card (067f987df0) and the
// recipes its runs name: the performance recipes on GB200/GB300 run
// full-iteration graphs with forced balancing and EP overlap
// (perf_recipes/qwen/common.py _enable_hybridep_full_iteration_mxfp8); the
// functional ones natural routing and graphs scoped to moe_router +
// moe_preprocess; the H100 functional recipe has no EP overlap
// (recipes/qwen/h100/qwen3_moe.py moe_a2a_overlap False), the H100
// performance one EP overlap without delayed wgrad.
TEST(RecipeChecksTest, Qwen3CardRunsAsTheirRecipes) {
  const std::map<std::string, RecipeCheck> m = ById();
  for (const char* id : {"qwen3-30b-gb200-card-performance", "qwen3-30b-gb300-card-performance"}) {
    ASSERT_TRUE(m.count(id)) << id;
    const RecipeCheck& c = m.at(id);
    EXPECT_TRUE(c.knobs.cuda_graphs) << id;
    EXPECT_TRUE(c.features.graph_full_iteration) << id;
    EXPECT_EQ(c.knobs.routing, planner::Routing::kBalanced) << id;
    EXPECT_TRUE(c.knobs.overlap.ep_comm) << id;
  }
  EXPECT_EQ(m.at("qwen3-30b-gb300-card-performance").parallel.mbs, 8);
  EXPECT_EQ(m.at("qwen3-30b-gb300-card-performance").cluster_preset, "gb300-nvl72");

  const RecipeCheck& gb200 = m.at("qwen3-30b-gb200-card-functional");
  EXPECT_EQ(gb200.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(gb200.features.graph_full_iteration);
  EXPECT_FALSE(gb200.features.graph_attn);
  EXPECT_TRUE(gb200.knobs.overlap.ep_comm);

  const RecipeCheck& h100_perf = m.at("qwen3-30b-h100-card-performance");
  EXPECT_EQ(h100_perf.knobs.routing, planner::Routing::kBalanced);
  EXPECT_FALSE(h100_perf.features.graph_full_iteration);
  EXPECT_TRUE(h100_perf.knobs.overlap.ep_comm);
  EXPECT_FALSE(h100_perf.features.delay_wgrad_compute);

  const RecipeCheck& h100_func = m.at("qwen3-30b-h100-card-functional");
  EXPECT_EQ(h100_func.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(h100_func.features.graph_full_iteration);
  EXPECT_FALSE(h100_func.knobs.overlap.ep_comm);

  const RecipeCheck& sft = m.at("qwen3-30b-h100-card-sft-no-graphs");
  EXPECT_EQ(sft.knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(sft.knobs.cuda_graphs);
  EXPECT_EQ(sft.knobs.dispatcher, planner::Dispatcher::kAllToAll);
}

// The August 2026 performance cards, as their recipes read (Megatron-Bridge
// perf_recipes/{deepseek,qwen,gpt_oss}/* at the cards' bridge commits).
TEST(RecipeChecksTest, AugustCardsRunAsTheirRecipes) {
  const std::map<std::string, RecipeCheck> m = ById();
  // DeepSeek-V3: 256 GB200 TP1 PP4 VP4 EP64 with mla_up_proj recompute, 256
  // GB300 TP1 PP2 VP8 EP32 without; both the "Et*4|(t*4|)*14tmL" layout.
  const RecipeCheck& gb200 = m.at("dsv3-gb200-card-performance");
  EXPECT_EQ(gb200.shape.gpus, 256);
  EXPECT_EQ(gb200.shape.global_batch, 4096);
  EXPECT_EQ(gb200.parallel.pp * gb200.parallel.vp, 16);
  EXPECT_EQ(gb200.parallel.ep, 64);
  EXPECT_EQ(gb200.knobs.recompute.modules, planner::kRecomputeMlaUpProj);
  const RecipeCheck& gb300 = m.at("dsv3-gb300-card-performance");
  EXPECT_EQ(gb300.parallel.pp * gb300.parallel.vp, 16);
  EXPECT_EQ(gb300.parallel.ep, 32);
  EXPECT_EQ(gb300.knobs.recompute.mode, planner::RecomputeMode::kNone);
  for (const RecipeCheck* c : {&gb200, &gb300}) {
    // 4 + 14 x 4 + 1 = 61 decoder layers over pp x vp stages.
    EXPECT_EQ(*c->parallel.first_stage_layers, 4);
    EXPECT_EQ(*c->parallel.last_stage_layers, 1);
    EXPECT_TRUE(c->features.graph_full_iteration);
    EXPECT_TRUE(c->knobs.overlap.ep_comm);
    EXPECT_EQ(c->knobs.precision, planner::Precision::kMxfp8);
  }
  // DeepSeek-V3 on 1,024 H100: ETP1 (the card's topology), no graphs, no
  // EP / grad-reduce overlap, "Et|(tt|)*30mL": 1 + 30 x 2 + 0 = 61.
  const RecipeCheck& h100 = m.at("dsv3-h100-card-performance");
  EXPECT_EQ(h100.parallel.tp * h100.parallel.pp * h100.parallel.vp, 64);
  EXPECT_EQ(h100.parallel.etp, 1);
  EXPECT_EQ(*h100.parallel.first_stage_layers + 30 * 2 + *h100.parallel.last_stage_layers, 61);
  EXPECT_FALSE(h100.knobs.cuda_graphs);
  EXPECT_FALSE(h100.knobs.overlap.ep_comm);
  EXPECT_FALSE(h100.knobs.overlap.dp_comm);
  // GPT-OSS-120B: the GB200 BF16 card and the H100 functional card run the
  // NCCL all-to-all without CUDA graphs; only the functional one routes
  // naturally.
  EXPECT_EQ(m.at("gpt-oss-120b-gb200-card-performance").knobs.dispatcher,
            planner::Dispatcher::kAllToAll);
  EXPECT_EQ(m.at("gpt-oss-120b-gb200-card-performance").knobs.routing,
            planner::Routing::kBalanced);
  EXPECT_EQ(m.at("gpt-oss-120b-h100-card-functional").knobs.routing, planner::Routing::kNatural);
  EXPECT_FALSE(m.at("gpt-oss-120b-h100-card-functional").knobs.cuda_graphs);
  // Every card id names a card; no summary-table row is counted as one.
  int cards = 0;
  for (const auto& [id, c] : m) {
    const bool card = c.set == RecipeCheck::Set::kVerificationCard;
    EXPECT_EQ(card, id.find("-card-") != std::string::npos) << id;
    cards += card;
  }
  EXPECT_EQ(cards, 17);
}

// The pretraining cards of the three further models (GPT-OSS-20B,
// Moonlight-16B-A3B, Qwen3-8B), all 16 H100 without CUDA graphs, each as
// its recipe at the card's commit reads.
TEST(RecipeChecksTest, FurtherModelCardsRunAsTheirRecipes) {
  const std::map<std::string, RecipeCheck> m = ById();
  // gpt_oss_20b_pretrain_16gpu_h100_bf16_config: TP2 PP4 EP4 ETP1 (DP 2:
  // 2 x 2 = EP 4 x ETP 1), GBS 512, the 120B H100 recipe's knobs.
  const RecipeCheck& oss = m.at("gpt-oss-20b-h100-card-functional");
  EXPECT_EQ(oss.model_preset, "gpt-oss-20b");
  EXPECT_EQ(oss.shape.gpus, 16);
  EXPECT_EQ(oss.shape.global_batch, 512);
  EXPECT_EQ(oss.parallel.tp * oss.parallel.pp, 8);
  EXPECT_EQ(oss.parallel.ep, 4);
  EXPECT_EQ(oss.knobs.dispatcher, planner::Dispatcher::kAllToAll);
  EXPECT_FALSE(oss.knobs.overlap.ep_comm);
  EXPECT_EQ(oss.knobs.routing, planner::Routing::kNatural);
  // moonlight_16b_pretrain_16gpu_h100_bf16_config: TP1 EP8 (two expert-data
  // replicas), MBS 2, flex HybridEP with the EP overlap, no graphs, no
  // recompute, natural routing.
  const RecipeCheck& ml = m.at("moonlight-16b-h100-card-functional");
  EXPECT_EQ(ml.shape.global_batch, 1024);
  EXPECT_EQ(ml.parallel.tp, 1);
  EXPECT_EQ(ml.parallel.ep, 8);
  EXPECT_EQ(ml.parallel.mbs, 2);
  EXPECT_EQ(ml.knobs.dispatcher, planner::Dispatcher::kFusedDedup);
  EXPECT_TRUE(ml.knobs.overlap.ep_comm);
  EXPECT_FALSE(ml.knobs.cuda_graphs);
  EXPECT_EQ(ml.knobs.recompute.mode, planner::RecomputeMode::kNone);
  EXPECT_EQ(ml.knobs.routing, planner::Routing::kNatural);
  // qwen3_8b_pretrain_16gpu_h100_bf16_config: TP1 PP1 DP16, MBS 1, dense.
  const RecipeCheck& q = m.at("qwen3-8b-h100-card-functional");
  EXPECT_EQ(q.parallel.tp * q.parallel.pp * q.parallel.ep, 1);
  EXPECT_EQ(q.parallel.mbs, 1);
  EXPECT_FALSE(q.knobs.cuda_graphs);
  EXPECT_EQ(q.knobs.precision, planner::Precision::kBf16);
}

// The recipe-index runs as their YAML ARGS read (Megatron-LM
// examples/moe_recipes at 9c5258f109): DeepSeek-V3's layout fills 16
// virtual stages with 4 + 14 x 4 + 1 = 61 layers; Qwen3-235B's virtual
// stages hold 3 (H100) or 2 (B200) layers of 94 + embedding + loss.
TEST(RecipeChecksTest, RecipeIndexRunsAsTheirYaml) {
  const std::map<std::string, RecipeCheck> m = ById();
  for (const char* id : {"mlm-index-dsv3-gb200", "mlm-index-dsv3-gb300", "mlm-index-dsv3-b200"}) {
    const RecipeCheck& c = m.at(id);
    EXPECT_EQ(c.parallel.pp * c.parallel.vp, 16) << id;
    EXPECT_EQ(*c.parallel.first_stage_layers, 4) << id;
    EXPECT_EQ(*c.parallel.last_stage_layers, 1) << id;
    EXPECT_TRUE(c.knobs.overlap.ep_comm) << id;
    EXPECT_EQ(c.set, RecipeCheck::Set::kRecipeIndex) << id;
  }
  EXPECT_TRUE(m.at("mlm-index-dsv3-gb200").knobs.offload_activations);
  EXPECT_FALSE(m.at("mlm-index-dsv3-gb300").knobs.offload_activations);
  EXPECT_FALSE(m.at("mlm-index-dsv3-b200").knobs.cuda_graphs);
  const RecipeCheck& h100 = m.at("mlm-index-qwen3-235b-h100");
  EXPECT_EQ((94 + 2) / (h100.parallel.pp * h100.parallel.vp), 3);
  EXPECT_FALSE(h100.features.graph_attn);
  const RecipeCheck& b200 = m.at("mlm-index-qwen3-235b-b200");
  EXPECT_EQ((94 + 2) / (b200.parallel.pp * b200.parallel.vp), 2);
  EXPECT_EQ(b200.parallel.mbs, 3);
  const RecipeCheck& gb300 = m.at("mlm-index-qwen3-235b-gb300");
  EXPECT_TRUE(gb300.features.graph_full_iteration);
  EXPECT_EQ(gb300.generation, planner::StackGeneration::k2606);
}

// The ModelZoo Qwen3-235B-A22B GB200 / GB300 runs as their launch lines
// read (best_practice/qwen3/readme.md at e865051): NNODES x 4 GPUs, the
// embedding and the loss counted as layers (96 / (pp vp) per virtual
// stage, one fewer on the first and the last), A2A_OVERLAP=1 only on the
// two EP64 lines, --tp-comm-overlap only for BF16 (sbatch_benchmarking.sh),
// BF16 Adam moments for MXFP8, forced balancing everywhere.
TEST(RecipeChecksTest, ModelZooRunsAsTheirLaunchLines) {
  const std::map<std::string, RecipeCheck> m = ById();
  struct Want {
    const char* id;
    int gpus, seq, gbs, tp, cp, pp, vp, ep, mbs, layers_per_virtual_stage;
    bool ep_overlap, graphs;
    double tflops;
  };
  for (const Want& w : {
           Want{"modelzoo-qwen3-235b-gb200-bf16", 64 * 4, 4096, 8192, 1, 1, 8, 1, 8, 1, 12,
                false, true, 750},
           Want{"modelzoo-qwen3-235b-gb200-mxfp8", 64 * 4, 4096, 3072, 1, 1, 4, 6, 64, 3, 4,
                true, true, 919},
           Want{"modelzoo-qwen3-235b-gb200-128k", 32 * 4, 131072, 1024, 4, 4, 4, 12, 32, 1, 2,
                false, false, 1150},
           Want{"modelzoo-qwen3-235b-gb300-mxfp8", 16 * 4, 4096, 8192, 1, 1, 1, 1, 64, 1, 0,
                true, true, 1055},
       }) {
    const RecipeCheck& c = m.at(w.id);
    EXPECT_EQ(c.set, RecipeCheck::Set::kModelZoo) << w.id;
    EXPECT_EQ(c.model_preset, "qwen3-235b-a22b") << w.id;
    EXPECT_EQ(c.shape.gpus, w.gpus) << w.id;
    EXPECT_EQ(c.shape.seq_len, w.seq) << w.id;
    EXPECT_EQ(c.shape.global_batch, w.gbs) << w.id;
    EXPECT_EQ(c.parallel.tp, w.tp) << w.id;
    EXPECT_EQ(c.parallel.cp, w.cp) << w.id;
    EXPECT_EQ(c.parallel.pp, w.pp) << w.id;
    EXPECT_EQ(c.parallel.vp, w.vp) << w.id;
    EXPECT_EQ(c.parallel.ep, w.ep) << w.id;
    EXPECT_EQ(c.parallel.etp, 1) << w.id;
    EXPECT_EQ(c.parallel.mbs, w.mbs) << w.id;
    if (w.pp > 1) {
      EXPECT_EQ((94 + 2) / (w.pp * w.vp), w.layers_per_virtual_stage) << w.id;
      EXPECT_EQ(*c.parallel.first_stage_layers, w.layers_per_virtual_stage - 1) << w.id;
      EXPECT_EQ(*c.parallel.last_stage_layers, w.layers_per_virtual_stage - 1) << w.id;
    } else {
      EXPECT_FALSE(c.parallel.first_stage_layers.has_value()) << w.id;
    }
    EXPECT_EQ(c.knobs.overlap.ep_comm, w.ep_overlap) << w.id;
    EXPECT_EQ(c.knobs.cuda_graphs, w.graphs) << w.id;
    EXPECT_EQ(c.knobs.overlap.tp_comm, c.knobs.precision == planner::Precision::kBf16) << w.id;
    EXPECT_EQ(c.knobs.optimizer_states == planner::OptimizerStates::kBf16Moments,
              c.knobs.precision != planner::Precision::kBf16)
        << w.id;
    EXPECT_EQ(c.knobs.routing, planner::Routing::kBalanced) << w.id;
    EXPECT_EQ(c.knobs.dispatcher, planner::Dispatcher::kFusedDedup) << w.id;
    EXPECT_DOUBLE_EQ(c.measured_tflops_per_gpu, w.tflops) << w.id;
  }
  const RecipeCheck& off = m.at("modelzoo-qwen3-235b-gb200-mxfp8");
  EXPECT_TRUE(off.knobs.offload_activations);
  EXPECT_EQ(off.knobs.offload_modules, planner::kOffloadExpertFc1 | planner::kOffloadMoeAct);
  EXPECT_EQ(off.knobs.recompute.modules,
            planner::kRecomputeMoeAct | planner::kRecomputeLayerNorm);
}

// The release-tracker rows as the MoE hardware-configs card lists them
// (Megatron-Bridge skills/nemo-mbridge-perf-moe-hardware-configs/card.yaml
// at 067f987df0): layout, batch, dispatcher, and the 1F1B overlap, CUDA-graph
// scope and recompute only where the card lists them; every layer of a
// pipeline placed (DeepSeek-V3 61, Qwen3-235B 94 with the embedding and the
// loss counted as layers).
TEST(RecipeChecksTest, ReleaseTrackerRowsAsTheCardLists) {
  const std::map<std::string, RecipeCheck> m = ById();
  struct Want {
    const char* id;
    const char* model;
    const char* cluster;
    int gpus, gbs, tp, pp, vp, ep, mbs;
    bool ep_overlap, graphs;
    planner::RecomputeMode recompute;
    planner::MegatronFeatures::FlexBackend backend;
    double tflops;
  };
  using RM = planner::RecomputeMode;
  using FB = planner::MegatronFeatures::FlexBackend;
  int tracker_rows = 0;
  for (const auto& [id, c] : m) tracker_rows += c.set == RecipeCheck::Set::kReleaseTracker;
  EXPECT_EQ(tracker_rows, 8);
  for (const Want& w : {
           Want{"tracker-dsv3-h100-fp8block", "deepseek-v3", "h100-sxm", 1024, 8192, 2, 8, 4, 64,
                1, true, false, RM::kSelective, FB::kDeepEp, 368},
           Want{"tracker-dsv3-b200-bf16", "deepseek-v3", "b200", 256, 4096, 1, 8, 4, 32, 1,
                false, false, RM::kSelective, FB::kDeepEp, 520},
           Want{"tracker-dsv3-b200-mxfp8", "deepseek-v3", "b200", 256, 8192, 1, 8, 2, 32, 1, true,
                false, RM::kSelective, FB::kDeepEp, 800},
           Want{"tracker-dsv3-gb200", "deepseek-v3", "gb200-nvl72", 256, 8192, 1, 4, 4, 64, 1,
                true, true, RM::kNone, FB::kHybridEp, 1100},
           Want{"tracker-dsv3-gb300", "deepseek-v3", "gb300-nvl72", 256, 8192, 1, 4, 4, 64, 1,
                true, true, RM::kNone, FB::kHybridEp, 1200},
           Want{"tracker-qwen3-235b-b200-bf16", "qwen3-235b-a22b", "b200", 128, 2048, 2, 4, 12,
                16, 2, true, false, RM::kNone, FB::kDeepEp, 590},
           Want{"tracker-qwen3-235b-gb200-bf16", "qwen3-235b-a22b", "gb200-nvl72", 128, 1024, 1,
                4, 12, 32, 1, false, true, RM::kNone, FB::kHybridEp, 700},
           Want{"tracker-qwen3-30b-h100-32", "qwen3-30b-a3b", "h100-sxm", 32, 256, 1, 1, 1, 8, 4,
                false, false, RM::kFull, FB::kDeepEp, 210},
       }) {
    ASSERT_TRUE(m.count(w.id)) << w.id;
    const RecipeCheck& c = m.at(w.id);
    EXPECT_EQ(c.set, RecipeCheck::Set::kReleaseTracker) << w.id;
    EXPECT_EQ(c.model_preset, w.model) << w.id;
    EXPECT_EQ(c.cluster_preset, w.cluster) << w.id;
    EXPECT_EQ(c.shape.gpus, w.gpus) << w.id;
    EXPECT_EQ(c.shape.seq_len, 4096) << w.id;
    EXPECT_EQ(c.shape.global_batch, w.gbs) << w.id;
    EXPECT_EQ(c.parallel.tp, w.tp) << w.id;
    EXPECT_EQ(c.parallel.pp, w.pp) << w.id;
    EXPECT_EQ(c.parallel.vp, w.vp) << w.id;
    EXPECT_EQ(c.parallel.ep, w.ep) << w.id;
    EXPECT_EQ(c.parallel.etp, 1) << w.id;
    EXPECT_EQ(c.parallel.mbs, w.mbs) << w.id;
    EXPECT_EQ(c.knobs.overlap.ep_comm, w.ep_overlap) << w.id;
    EXPECT_EQ(c.knobs.cuda_graphs, w.graphs) << w.id;
    EXPECT_EQ(c.knobs.recompute.mode, w.recompute) << w.id;
    EXPECT_EQ(c.features.flex_backend, w.backend) << w.id;
    EXPECT_EQ(c.knobs.routing, planner::Routing::kBalanced) << w.id;
    EXPECT_DOUBLE_EQ(c.measured_tflops_per_gpu, w.tflops) << w.id;
  }
  // Where the stages' layers are fixed: "Et*3|(tt|)*29m|L" (3 layers first,
  // the MTP and the loss stages without any); the index recipe's
  // 4 + 14 x 4 + 1; Qwen3-235B's 94 + embedding + loss over 48 virtual
  // stages, 2 each, so 1 on the first and the last.
  const std::map<std::string, std::pair<int, int>> first_last = {
      {"tracker-dsv3-h100-fp8block", {3, 0}},
      {"tracker-dsv3-b200-mxfp8", {4, 1}},
      {"tracker-dsv3-gb200", {4, 1}},
      {"tracker-dsv3-gb300", {4, 1}},
      {"tracker-qwen3-235b-b200-bf16", {1, 1}},
      {"tracker-qwen3-235b-gb200-bf16", {1, 1}}};
  for (const auto& [id, fl] : first_last) {
    const RecipeCheck& c = m.at(id);
    EXPECT_EQ(*c.parallel.first_stage_layers, fl.first) << id;
    EXPECT_EQ(*c.parallel.last_stage_layers, fl.second) << id;
  }
  EXPECT_FALSE(m.at("tracker-dsv3-b200-bf16").parallel.first_stage_layers.has_value());
  EXPECT_EQ(m.at("tracker-dsv3-b200-mxfp8").features.deepep_num_sms, 24);
  EXPECT_EQ(m.at("tracker-dsv3-b200-bf16").features.deepep_num_sms, 20);
  EXPECT_EQ(m.at("tracker-dsv3-b200-bf16").knobs.recompute.modules,
            planner::kRecomputeMlaUpProj | planner::kRecomputeMlp | planner::kRecomputeMoeAct |
                planner::kRecomputeLayerNorm);
}

TEST(RecipeChecksTest, EverySetHasALabelAndATitle) {
  using S = RecipeCheck::Set;
  for (S set : {S::kVerificationCard, S::kRecipeIndex, S::kModelZoo, S::kReleaseTracker}) {
    EXPECT_STRNE(SetLabel(set), SetLabel(S::kOther));
    EXPECT_STRNE(SetTitle(set), SetTitle(S::kOther));
  }
  EXPECT_STREQ(SetLabel(S::kReleaseTracker), "release tracker");
}

TEST(RecipeChecksTest, EveryCheckHasASourceAndAMeasurement) {
  for (const RecipeCheck& c : PublicRecipeChecks()) {
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_FALSE(c.recipe.empty()) << c.id;
    // Exactly one measurement: tokens/s/GPU or (the recipe index) TFLOP/s/GPU.
    EXPECT_NE(c.measured_tokens_per_sec_per_gpu > 0, c.measured_tflops_per_gpu > 0) << c.id;
    EXPECT_GT(c.shape.gpus, 0) << c.id;
  }
}

}  // namespace
}  // namespace moetune::tests
