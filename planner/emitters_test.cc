// Golden-file tests of the config emitters. Each case is a plan with a
// hand-written prediction (fixed round numbers, so the goldens do not move
// when the step model is retuned); every emitter's output is compared with
// planner/testdata/golden/<case>.<format> after dropping the lines that
// carry the generation time ("generated_at"). See
// planner/testdata/golden/README.md to add a case or regenerate.
#include "planner/emitters.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/framework_rules.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct GoldenCase {
  std::string name;
  Prediction prediction;
  ClusterSpec cluster;
};

Prediction BasePrediction(const std::string& model, const ClusterSpec& cluster,
                          TrainingShape shape) {
  Prediction p;
  absl::StatusOr<ModelSpec> m = LoadModelPreset(model);
  EXPECT_TRUE(m.ok()) << m.status();
  p.model = *m;
  p.cluster_name = cluster.name;
  p.cluster = cluster;
  p.shape = shape;
  p.hbm_bytes = cluster.gpu.hbm_bytes;
  // Round figures; only their formatting is under test.
  p.step_time_s = 10.0;
  p.tokens_per_sec_per_gpu = 1000.0;
  p.model_flops_per_token = 300e9;
  p.model_tflops_per_gpu = 300.0;
  p.mfu = 0.25;
  p.memory.weights_bytes = 40 * units::kGiB;
  p.memory.grads_bytes = 20 * units::kGiB;
  p.memory.optimizer_bytes = 10 * units::kGiB;
  p.memory.activations_bytes = 30 * units::kGiB;
  p.memory.comm_buffers_bytes = 2 * units::kGiB;
  p.memory.reserve_bytes = 3 * units::kGiB;
  p.peak_memory_bytes = p.memory.Total();
  p.fits = p.peak_memory_bytes <= p.hbm_bytes;
  // The last pipeline stage: fewer in-flight activations.
  p.last_stage_memory = p.memory;
  p.last_stage_memory.activations_bytes = 20 * units::kGiB;
  p.last_stage_memory_bytes = p.last_stage_memory.Total();
  p.breakdown = {
      {"attention.core", TermKind::kComputeAttention, 2.0, CostSource::kDatasheetPrior},
      {"gemm.dense", TermKind::kComputeDenseGemm, 4.0, CostSource::kDatasheetPrior},
      {"moe.dispatch", TermKind::kCommEpHidden, 1.5, CostSource::kDatasheetPrior},
      {"pipeline.bubble", TermKind::kPipelineBubble, 1.0, CostSource::kDatasheetPrior},
  };
  return p;
}

ClusterSpec Cluster(const std::string& name) {
  absl::StatusOr<ClusterSpec> c = LoadClusterPreset(name);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

std::vector<GoldenCase> Cases() {
  std::vector<GoldenCase> cases;
  {
    // DeepSeek-V3 on 256 GB200: MLA, MTP, 61 layers over pp 4 x vp 4 with
    // explicit first/last stages, EP 64 with DeepEP, selective recompute and
    // MoE activation offload, BF16, BF16 Adam moments (the Megatron-Bridge
    // recipe's precision-aware optimizer).
    const ClusterSpec c = Cluster("gb200-nvl72");
    Prediction p = BasePrediction("deepseek-v3", c, {256, 4096, 1024});
    p.parallel.tp = 1;
    p.parallel.pp = 4;
    p.parallel.vp = 4;
    p.parallel.ep = 64;
    p.parallel.etp = 1;
    p.parallel.cp = 1;
    p.parallel.dp = 64;
    p.parallel.mbs = 1;
    p.parallel.first_stage_layers = 4;
    p.parallel.last_stage_layers = 1;
    p.knobs.recompute = {RecomputeMode::kSelective,
                         kRecomputeMlaUpProj | kRecomputeLayerNorm | kRecomputeMoeAct, 0};
    p.knobs.offload_activations = true;
    p.knobs.offload_modules = kOffloadExpertFc1 | kOffloadMoeAct;
    p.knobs.dispatcher = Dispatcher::kFusedDedup;
    p.knobs.overlap.num_comm_streams = 1;
    p.knobs.precision = Precision::kBf16;
    p.knobs.optimizer_states = OptimizerStates::kBf16Moments;
    // An interval on a setting no published run measured: every text
    // output prints it under the headline.
    p.interval = {0.8, 700.0, 1100.0, "settings no published run measured", {"activation offload"}};
    // The offloaded activations' pinned host memory: a header line.
    p.host_offload_bytes = 40.0 * units::kGiB;
    cases.push_back({"deepseek_v3_gb200_256", p, c});
  }
  {
    // Llama 3 8B on 16 H100: TP 2 with sequence parallelism, CP 2, full
    // recompute, no overlap, no CUDA graphs, FP8.
    const ClusterSpec c = Cluster("h100-sxm");
    Prediction p = BasePrediction("llama3-8b", c, {16, 8192, 128});
    p.parallel.tp = 2;
    p.parallel.cp = 2;
    p.parallel.dp = 4;
    p.parallel.mbs = 1;
    p.knobs.recompute = {RecomputeMode::kFull, 0, 0};
    p.knobs.overlap = Overlap{false, false, false, false, 1};
    p.knobs.cuda_graphs = false;
    p.knobs.precision = Precision::kFp8;
    cases.push_back({"llama3_8b_h100_16", p, c});
  }
  {
    // Mixtral 8x7B on 64 B200: even pipeline with interleaving (32 layers /
    // (pp 2 x vp 2)), ETP 2, all-to-all dispatch, a loop of GEMMs, FSDP,
    // NVFP4.
    const ClusterSpec c = Cluster("b200");
    Prediction p = BasePrediction("mixtral-8x7b", c, {64, 4096, 512});
    p.parallel.tp = 2;
    p.parallel.pp = 2;
    p.parallel.vp = 2;
    p.parallel.ep = 8;
    p.parallel.etp = 2;
    p.parallel.dp = 16;
    p.parallel.mbs = 2;
    p.parallel.shard_params = true;
    p.knobs.dispatcher = Dispatcher::kAllToAll;
    p.knobs.grouped_gemm = false;
    p.knobs.overlap.num_comm_streams = 2;
    p.knobs.precision = Precision::kNvfp4;
    // As the search plans it: NVFP4 has no TP comm overlap
    // (FrameworkRule::kTpCommOverlapWithNvfp4).
    p.knobs.overlap.tp_comm = false;
    cases.push_back({"mixtral_8x7b_b200_64", p, c});
  }
  {
    // Llama 3.1 405B on 512 GB200, the MLPerf Training v5.1 layout
    // (tests/internal/scale_anchors.cc): tp 4 x cp 2 x pp 8 x vp 8, one
    // layer on the first and last virtual stage, data parallel outermost
    // (TP_PP_DP_MAPPING=True), NVFP4 without TP comm overlap, no recompute.
    const ClusterSpec c = Cluster("gb200-nvl72");
    Prediction p = BasePrediction("llama3.1-405b", c, {512, 8192, 1152});
    p.parallel.tp = 4;
    p.parallel.pp = 8;
    p.parallel.vp = 8;
    p.parallel.cp = 2;
    p.parallel.dp = 8;
    p.parallel.mbs = 1;
    p.parallel.first_stage_layers = 1;
    p.parallel.last_stage_layers = 1;
    p.parallel.dp_outermost = true;
    p.knobs.precision = Precision::kNvfp4;
    p.knobs.overlap.tp_comm = false;
    cases.push_back({"llama31_405b_gb200_512_dp_outermost", p, c});
  }
  {
    // Moonlight-16B-A3B on 16 H100, the verification card's layout (TP1 EP8
    // MBS2): MLA without q LoRA and with plain RoPE (no YaRN), so the file
    // turns Megatron's RoPE fusion off (MLA fuses only YaRN); no recompute,
    // no CUDA graphs, BF16.
    const ClusterSpec c = Cluster("h100-sxm");
    Prediction p = BasePrediction("moonlight-16b-a3b", c, {16, 4096, 1024});
    p.parallel.ep = 8;
    p.parallel.etp = 1;
    p.parallel.dp = 16;
    p.parallel.mbs = 2;
    p.knobs.cuda_graphs = false;
    p.knobs.overlap.tp_comm = false;
    p.knobs.precision = Precision::kBf16;
    cases.push_back({"moonlight_16b_h100_16", p, c});
  }
  {
    // Megatron-Bridge's Llama3-70B GB300 FP8 recipe (llama3_workload_base_
    // configs.py LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_CS_V2): Megatron-FSDP,
    // tp 1, pp 1, mbs 2, the first 20 layers' activations offloaded to host
    // memory, no recompute, no CUDA graphs.
    const ClusterSpec c = Cluster("gb300-nvl72");
    Prediction p = BasePrediction("llama3-70b", c, {64, 8192, 256});
    p.parallel.dp = 64;
    p.parallel.mbs = 2;
    p.parallel.shard_params = true;
    p.knobs.offload_layers = 20;
    p.knobs.cuda_graphs = false;
    p.knobs.precision = Precision::kFp8;
    cases.push_back({"llama3_70b_gb300_64_layer_offload", p, c});
  }
  return cases;
}

// MaxText plans (framework maxtext): the mapping onto MaxText's mesh and
// keys is framework_rules.h's.
std::vector<GoldenCase> MaxTextCases() {
  std::vector<GoldenCase> cases;
  {
    // The seed run (issue 14): DeepSeek-V3 on 128 GB200 (2 slices of 64),
    // FSDP 16 x EP 8, per-device batch 6, no accumulation, custom remat with
    // the MoE up-projections (moe_mlpwi_0/1) offloaded, FP8, TE grouped GEMM
    // and NCCL-EP dispatch, two collective streams.
    const ClusterSpec c = Cluster("gb200-nvl72");
    Prediction p = BasePrediction("deepseek-v3", c, {128, 4096, 768});
    p.framework = Framework::kMaxText;
    p.parallel.ep = 8;
    p.parallel.dp = 128;
    p.parallel.mbs = 6;
    p.parallel.shard_params = true;
    p.knobs.recompute = {RecomputeMode::kSelective,
                         kRecomputeLayerNorm | kRecomputeMoeAct | kRecomputeCoreAttn, 0};
    p.knobs.offload_activations = true;
    p.knobs.offload_modules = kOffloadExpertFc1;
    p.knobs.dispatcher = Dispatcher::kFusedDedup;
    p.knobs.overlap.num_comm_streams = 2;
    p.knobs.precision = Precision::kFp8;
    cases.push_back({"deepseek_v3_gb200_128_maxtext", p, c});
  }
  {
    // Llama 3 8B on 16 H100 (2 slices of 8): TP 2, a circular pipeline of
    // pp 4 x 2 repeats (32 layers, 4 per stage visit), 16 micro-batches,
    // full remat, no overlap, no command buffers, BF16.
    const ClusterSpec c = Cluster("h100-sxm");
    Prediction p = BasePrediction("llama3-8b", c, {16, 8192, 64});
    p.framework = Framework::kMaxText;
    p.parallel.tp = 2;
    p.parallel.pp = 4;
    p.parallel.vp = 2;
    p.parallel.dp = 2;
    p.parallel.mbs = 2;
    p.knobs.recompute = {RecomputeMode::kFull, 0, 0};
    p.knobs.overlap = Overlap{false, false, false, false, 1};
    p.knobs.cuda_graphs = false;
    p.interval = {0.8, 900.0, 1100.0, "dense rows", {}};
    cases.push_back({"llama3_8b_h100_16_maxtext", p, c});
  }
  return cases;
}

std::string Strip(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("generated_at") != std::string::npos) continue;
    out += line + "\n";
  }
  return out;
}

std::string Emit(const GoldenCase& c, const std::string& format,
                 const EmitContext& ctx) {
  if (format == "plan.json") return EmitCanonicalJson(c.prediction, ctx);
  if (format == "megatron.sh") return EmitMegatronArgs(c.prediction, ctx);
  if (format == "maxtext.yaml") {
    absl::StatusOr<MaxTextConfig> m = EmitMaxText(c.prediction, c.cluster, ctx);
    EXPECT_TRUE(m.ok()) << c.name << ": " << m.status();
    return m.ok() ? RenderMaxText(*m) : std::string();
  }
  return EmitText(c.prediction, ctx);
}

const char* const kFormats[] = {"plan.json", "megatron.sh", "txt"};
const char* const kMaxTextFormats[] = {"plan.json", "maxtext.yaml", "txt"};

// MOETUNE_UPDATE_GOLDEN=1 bazel run //planner:emitters_test rewrites the
// goldens in the source tree (bazel run sets BUILD_WORKSPACE_DIRECTORY).
TEST(EmittersGoldenTest, MatchesGoldenFiles) {
  EmitContext ctx;
  ctx.generated_at = "2026-11-29T18:00:00Z";  // stripped before comparing
  const char* update = std::getenv("MOETUNE_UPDATE_GOLDEN");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  std::vector<std::pair<GoldenCase, std::string>> all;
  for (const GoldenCase& c : Cases()) {
    for (const char* format : kFormats) all.push_back({c, format});
  }
  for (const GoldenCase& c : MaxTextCases()) {
    for (const char* format : kMaxTextFormats) all.push_back({c, format});
  }
  for (const auto& [c, format] : all) {
    {
      const std::string rel =
          std::string("planner/testdata/golden/") + c.name + "." + format;
      const std::string actual = Emit(c, format, ctx);
      if (update != nullptr && workspace != nullptr) {
        std::ofstream(std::string(workspace) + "/" + rel) << actual;
        continue;
      }
      std::ifstream in(rel);
      ASSERT_TRUE(in.good()) << "missing golden " << rel
                             << " (see planner/testdata/golden/README.md)";
      std::stringstream golden;
      golden << in.rdbuf();
      EXPECT_EQ(Strip(actual), Strip(golden.str())) << rel;
    }
  }
}

// The rank order (ParallelConfig::dp_outermost): Megatron's flag only when
// set; a dense model's expert grid sized tp x cp (FrameworkRule::
// kDpOutermostExpertGrid); JSON records it; MaxText refuses it by its rule.
TEST(EmittersTest, DpOutermostIsWrittenOnlyWhenSet) {
  const std::vector<GoldenCase> cases = Cases();
  for (const GoldenCase& c : cases) {
    const std::string sh = EmitMegatronArgs(c.prediction, {});
    const nlohmann::json j = nlohmann::json::parse(EmitCanonicalJson(c.prediction, {}));
    EXPECT_EQ(j["plan"]["parallel"]["dp_outermost"], c.prediction.parallel.dp_outermost) << c.name;
    if (c.prediction.parallel.dp_outermost) {
      EXPECT_THAT(sh, HasSubstr("  --use-tp-pp-dp-mapping\n")) << c.name;
      EXPECT_EQ(j["plan"]["parallel"]["rank_order"], "tp-cp-ep-pp-dp") << c.name;
    } else {
      EXPECT_THAT(sh, Not(HasSubstr("--use-tp-pp-dp-mapping"))) << c.name;
      EXPECT_EQ(j["plan"]["parallel"]["rank_order"], "tp-cp-ep-dp-pp") << c.name;
    }
  }
  const GoldenCase& l405 = cases[3];
  ASSERT_EQ(l405.name, "llama31_405b_gb200_512_dp_outermost");
  ASSERT_TRUE(l405.prediction.parallel.dp_outermost);
  const std::string sh = EmitMegatronArgs(l405.prediction, {});
  // Dense, pp 8, cp 2: expert grid 4 x 2 = 8, so its pipeline groups (stride
  // etp x ep = 8) are the dense ones (stride tp x cp = 8).
  EXPECT_THAT(sh, HasSubstr("  --expert-tensor-parallel-size 8\n"));
  EXPECT_THAT(sh, HasSubstr("# layout: tp=4 pp=8 vp=8 ep=1 etp=1 cp=2 dp=8 mbs=1 "
                            "first_stage_layers=1 last_stage_layers=1 rank_order=tp-cp-ep-pp-dp"));
  // Without cp the default expert grid (etp = tp) already matches: no flag.
  Prediction no_cp = l405.prediction;
  no_cp.parallel.cp = 1;
  no_cp.parallel.dp = 16;
  EXPECT_THAT(EmitMegatronArgs(no_cp, {}), Not(HasSubstr("--expert-tensor-parallel-size")));

  Prediction mt = MaxTextCases()[1].prediction;
  mt.parallel.dp_outermost = true;
  absl::StatusOr<MaxTextConfig> refused = EmitMaxText(mt, Cluster("h100-sxm"), {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("MaxText: dp_outermost"));
}

TEST(EmittersTest, TimeLivesOnlyOnGeneratedAtLines) {
  const GoldenCase c = Cases()[0];
  EmitContext a, b;
  a.generated_at = "2026-01-01T00:00:00Z";
  b.generated_at = "2027-06-30T12:34:56Z";
  for (const char* format : kFormats) {
    const std::string x = Emit(c, format, a);
    const std::string y = Emit(c, format, b);
    EXPECT_NE(x, y) << format;
    EXPECT_EQ(Strip(x), Strip(y)) << format;
  }
  const GoldenCase m = MaxTextCases()[0];
  const std::string x = Emit(m, "maxtext.yaml", a);
  const std::string y = Emit(m, "maxtext.yaml", b);
  EXPECT_NE(x, y);
  EXPECT_EQ(Strip(x), Strip(y));
}

TEST(EmittersTest, CanonicalJsonCarriesPlanAndPrediction) {
  const GoldenCase c = Cases()[0];
  const nlohmann::json j =
      nlohmann::json::parse(EmitCanonicalJson(c.prediction, EmitContext{}));
  EXPECT_EQ(j["format"], "moetune.plan.v1");
  EXPECT_EQ(j["plan"]["parallel"]["ep"], 64);
  EXPECT_EQ(j["plan"]["parallel"]["first_stage_layers"], 4);
  EXPECT_EQ(j["plan"]["knobs"]["dispatcher"], "fused_dedup");
  EXPECT_DOUBLE_EQ(j["prediction"]["tokens_per_sec_per_gpu"].get<double>(), 1000.0);
  EXPECT_FALSE(j.contains("generated_at"));
}

TEST(EmittersTest, MegatronFlagsFollowThePlan) {
  const std::vector<GoldenCase> cases = Cases();
  for (const GoldenCase& c : cases) {
    EXPECT_EQ(MegatronViolation(c.prediction.model, c.prediction.parallel,
                                c.prediction.knobs),
              std::nullopt)
        << c.name << ": a golden plan the framework refuses";
  }
  const std::string dsv3 = EmitMegatronArgs(cases[0].prediction, {});
  EXPECT_THAT(dsv3, HasSubstr("  --pipeline-model-parallel-size 4\n"));
  // 61 layers over 16 virtual stages: 4 first, 1 last, 56 = 14 x 4 between;
  // embedding first, MTP and loss last.
  EXPECT_THAT(dsv3, HasSubstr("  --pipeline-model-parallel-layout "
                              "'Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|"
                              "t*4|t*4|tmL'\n"));
  EXPECT_THAT(dsv3, Not(HasSubstr("--decoder-first-pipeline-num-layers")));
  EXPECT_THAT(dsv3, Not(HasSubstr("--num-virtual-stages-per-pipeline-rank")));
  EXPECT_THAT(dsv3, Not(HasSubstr("--num-layers-per-virtual-pipeline-stage")));
  // NVL72: HybridEP, the backend that uses the multi-node NVLink domain.
  EXPECT_THAT(dsv3, HasSubstr("  --moe-token-dispatcher-type flex\n"
                              "  --moe-flex-dispatcher-backend hybridep\n"));
  EXPECT_THAT(dsv3, Not(HasSubstr("--moe-enable-deepep")));
  EXPECT_THAT(dsv3, HasSubstr("  --recompute-granularity selective\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --recompute-modules mla_up_proj layernorm moe_act\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --offload-modules expert_fc1 moe_act\n"));
  EXPECT_THAT(dsv3, HasSubstr("\nexport NVTE_CPU_OFFLOAD_V1=1\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --moe-layer-freq '([0]*3+[1]*58)'\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --mtp-num-layers 1\n"));
  EXPECT_THAT(dsv3, Not(HasSubstr("--sequence-parallel")));  // tp = 1
  // EP A2A overlap (interleaved pipeline): never with shared-expert overlap.
  EXPECT_THAT(dsv3, HasSubstr("  --overlap-moe-expert-parallel-comm\n  --delay-wgrad-compute\n"));
  EXPECT_THAT(dsv3, Not(HasSubstr("--moe-shared-expert-overlap")));
  // The architecture of the Hugging Face model.
  EXPECT_THAT(dsv3, HasSubstr("  --moe-router-score-function sigmoid\n"
                              "  --moe-router-enable-expert-bias\n"
                              "  --moe-router-topk-scaling-factor 2.5\n"
                              "  --moe-router-num-groups 8\n"
                              "  --moe-router-group-topk 4\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --rope-type yarn\n  --rotary-scaling-factor 40\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --norm-epsilon 1e-06\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --attention-dropout 0.0\n  --hidden-dropout 0.0\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --grad-reduce-in-bf16\n"));
  EXPECT_THAT(dsv3, HasSubstr("  --cuda-graph-modules attn moe_router moe_preprocess\n"));
  EXPECT_THAT(dsv3, Not(HasSubstr("--cuda-graph-scope")));
  EXPECT_THAT(dsv3, Not(HasSubstr("CUDA_DEVICE_MAX_CONNECTIONS")));  // Blackwell
  // The memory figure's allocator; beside TE graphs Megatron requires NCCL
  // not to register graph buffers.
  EXPECT_THAT(dsv3, HasSubstr("\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                              "export NCCL_GRAPH_REGISTER=0\n"));

  const std::string llama = EmitMegatronArgs(cases[1].prediction, {});
  EXPECT_THAT(llama, HasSubstr("  --sequence-parallel\n"));
  EXPECT_THAT(llama, HasSubstr("  --recompute-granularity full\n  --recompute-method uniform\n"));
  EXPECT_THAT(llama, HasSubstr("  --fp8-format hybrid\n  --fp8-recipe tensorwise\n"));
  EXPECT_THAT(llama, HasSubstr("  --cuda-graph-impl none\n"));
  EXPECT_THAT(llama, Not(HasSubstr("--overlap-grad-reduce")));
  EXPECT_THAT(llama, Not(HasSubstr("--num-experts")));
  EXPECT_THAT(llama, HasSubstr("  --rotary-base 500000\n"));
  EXPECT_THAT(llama, Not(HasSubstr("--rotary-percent")));
  Prediction partial = cases[1].prediction;  // GLM-4.5 rotates half of each head
  partial.model.arch.rotary_percent = 0.5;
  EXPECT_THAT(EmitMegatronArgs(partial, {}),
              HasSubstr("  --rotary-base 500000\n  --rotary-percent 0.5\n"));
  // Hopper with TP and CP, no FSDP: one hardware queue.
  EXPECT_THAT(llama, HasSubstr("\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
  // No CUDA graphs: the allocator setting alone.
  EXPECT_THAT(llama, HasSubstr("\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"));
  EXPECT_THAT(llama, Not(HasSubstr("NCCL_GRAPH_REGISTER")));

  const std::string mixtral = EmitMegatronArgs(cases[2].prediction, {});
  EXPECT_THAT(mixtral, HasSubstr("  --num-layers-per-virtual-pipeline-stage 8\n"));
  EXPECT_THAT(mixtral, Not(HasSubstr("--pipeline-model-parallel-layout")));
  EXPECT_THAT(mixtral, HasSubstr("  --moe-token-dispatcher-type alltoall\n"));
  EXPECT_THAT(mixtral, Not(HasSubstr("--moe-grouped-gemm")));
  EXPECT_THAT(mixtral, HasSubstr("  --fp4-format e2m1\n  --fp4-recipe nvfp4\n"));
  // TP 2 with NVFP4: TE's userbuffers has no NVFP4 path (the flag would
  // fail at the first all-gather), so the plan has the TP overlap off and
  // the file says why -- and says so even for a plan built with the knob on.
  EXPECT_FALSE(cases[2].prediction.knobs.overlap.tp_comm);
  EXPECT_THAT(mixtral, Not(HasSubstr("  --tp-comm-overlap\n")));
  Prediction knob_on = cases[2].prediction;
  knob_on.knobs.overlap.tp_comm = true;
  EXPECT_THAT(EmitMegatronArgs(knob_on, {}), Not(HasSubstr("  --tp-comm-overlap\n")));
  EXPECT_THAT(mixtral, HasSubstr("  # no --tp-comm-overlap: Transformer Engine userbuffers has no "
                                 "NVFP4 path\n"));
  EXPECT_THAT(mixtral, HasSubstr("  --use-megatron-fsdp\n"));
  EXPECT_THAT(mixtral, HasSubstr("  --ckpt-format fsdp_dtensor\n"));
  for (const std::string& other : {dsv3, llama, mixtral}) {
    EXPECT_THAT(other, Not(HasSubstr("--cpu-offloading")));
  }

  // Layer-wise offload: the count, and none of what Megatron refuses with it.
  const std::string l70 = EmitMegatronArgs(cases[5].prediction, {});
  EXPECT_THAT(l70, HasSubstr("  --cpu-offloading-num-layers 20\n"));
  EXPECT_THAT(l70, HasSubstr("  --cuda-graph-impl none\n"));
  EXPECT_THAT(l70, Not(HasSubstr("--recompute-granularity")));
  EXPECT_THAT(l70, Not(HasSubstr("--fine-grained-activation-offloading")));
  EXPECT_THAT(l70, Not(HasSubstr("NVTE_CPU_OFFLOAD_V1")));
  EXPECT_THAT(EmitCanonicalJson(cases[5].prediction, {}), HasSubstr("\"offload_layers\": 20"));
}

// The EP A2A overlap with the EP group inside one 8-GPU node (the Moonlight
// H100 case: EP8, ETP1): the file says what the evidence says beside the
// flag, and where the plan leaves the overlap off, why that is no loss.
// Across nodes (EP 8 x ETP 2 = 16 ranks on B200: the Mixtral case) or on
// NVL72 (DeepSeek-V3 GB200) it says nothing.
TEST(EmittersTest, InNodeEpOverlapSaysWhatTheEvidenceSays) {
  const std::vector<GoldenCase> cases = Cases();
  const GoldenCase* moonlight = nullptr;
  for (const GoldenCase& c : cases) {
    if (c.name == "moonlight_16b_h100_16") moonlight = &c;
  }
  ASSERT_NE(moonlight, nullptr);
  ASSERT_TRUE(moonlight->prediction.knobs.overlap.ep_comm);
  const std::string on = EmitMegatronArgs(moonlight->prediction, {});
  EXPECT_THAT(on, HasSubstr("  --overlap-moe-expert-parallel-comm\n"
                            "  # the EP A2A overlap as given: inside one 8-GPU node it hides "
                            "no exchange in the step model and adds its schedule's host work, "
                            "and Megatron-Bridge PR 1760"));
  Prediction off = moonlight->prediction;
  off.knobs.overlap.ep_comm = false;
  const std::string without = EmitMegatronArgs(off, {});
  EXPECT_THAT(without, Not(HasSubstr("  --overlap-moe-expert-parallel-comm\n")));
  EXPECT_THAT(without, HasSubstr("  # no --overlap-moe-expert-parallel-comm: inside one 8-GPU "
                                 "node it hides no exchange"));
  for (const GoldenCase& c : cases) {
    if (&c == moonlight) continue;
    EXPECT_THAT(EmitMegatronArgs(c.prediction, {}), Not(HasSubstr("PR 1760"))) << c.name;
  }
}

// Qwen2 / Qwen2-MoE have a bias on q, k and v only: Megatron builds it with
// --add-qkv-bias beside --disable-bias-linear (a model without it would not
// take the Hugging Face weights). Graphed attention with any bias keeps the
// weight gradients undelayed (Megatron's validate_args refuses
// --delay-wgrad-compute there: "CUDA graph with delay_wgrad_compute doesn't
// support attn bias for now").
TEST(EmittersTest, QkvBiasIsBuiltAndKeepsWgradUndelayedUnderGraphs) {
  const std::vector<GoldenCase> cases = Cases();
  Prediction qkv = cases[0].prediction;  // DeepSeek-V3: EP overlap, graphed attention
  ASSERT_TRUE(qkv.knobs.cuda_graphs);
  EXPECT_THAT(EmitMegatronArgs(qkv, {}), HasSubstr("  --delay-wgrad-compute\n"));
  EXPECT_THAT(EmitMegatronArgs(qkv, {}), Not(HasSubstr("--add-qkv-bias")));
  qkv.model.qkv_bias = true;
  const std::string with = EmitMegatronArgs(qkv, {});
  EXPECT_THAT(with, HasSubstr("  --disable-bias-linear\n  --add-qkv-bias\n"));
  EXPECT_THAT(with, Not(HasSubstr("  --delay-wgrad-compute\n")));
  EXPECT_THAT(with, HasSubstr("# --delay-wgrad-compute left off: CUDA-graphed attention with "
                              "biases"));
  // Every linear layer biased (GPT-3, GPT-OSS): Megatron's default, no flag.
  qkv.model.attention_bias = true;
  const std::string all = EmitMegatronArgs(qkv, {});
  EXPECT_THAT(all, Not(HasSubstr("--disable-bias-linear")));
  EXPECT_THAT(all, Not(HasSubstr("--add-qkv-bias")));
}

// Qwen2-MoE's router and shared expert as Megatron builds them: softmax
// before the top-k (--moe-router-pre-softmax) and the shared expert's gate.
TEST(EmittersTest, RouterPreSoftmaxAndSharedExpertGate) {
  Prediction p = Cases()[0].prediction;  // DeepSeek-V3: one shared expert
  const std::string plain = EmitMegatronArgs(p, {});
  EXPECT_THAT(plain, Not(HasSubstr("--moe-router-pre-softmax")));
  EXPECT_THAT(plain, Not(HasSubstr("--moe-shared-expert-gate")));
  p.model.arch.router_pre_softmax = true;
  p.model.arch.shared_expert_gate = true;
  const std::string qwen2 = EmitMegatronArgs(p, {});
  EXPECT_THAT(qwen2, HasSubstr("  --moe-shared-expert-intermediate-size 2048\n"
                               "  --moe-shared-expert-gate\n"));
  EXPECT_THAT(qwen2, HasSubstr("  --moe-router-pre-softmax\n"));
}

// Forced balance is Megatron's benchmark-only router mode: emitted for a
// plan priced as a benchmark (the goldens), never for real training.
TEST(EmittersTest, ForcedBalanceOnlyForBenchmarkRouting) {
  GoldenCase c = Cases()[0];
  const std::string bench = EmitMegatronArgs(c.prediction, {});
  EXPECT_THAT(bench, HasSubstr("  --moe-router-force-load-balancing\n"));
  c.prediction.knobs.routing = Routing::kNatural;
  c.prediction.moe_load_imbalance_priced = 1.33;
  const std::string real = EmitMegatronArgs(c.prediction, {});
  EXPECT_THAT(real, Not(HasSubstr("--moe-router-force-load-balancing")));
  EXPECT_THAT(real, HasSubstr("busiest expert-parallel rank at 1.33x"));
  // An explicit imbalance is real training too.
  c.prediction.knobs.routing = Routing::kBalanced;
  c.prediction.knobs.moe_load_imbalance = 1.2;
  EXPECT_THAT(EmitMegatronArgs(c.prediction, {}),
              Not(HasSubstr("--moe-router-force-load-balancing")));
}

TEST(EmittersTest, MegatronLayoutPlacesWhatTheStepModelPriced) {
  GoldenCase c = Cases()[0];
  // The step model's own split (Prediction::stage_layers) wins over
  // first/last; equal stages need no layout string.
  c.prediction.parallel.first_stage_layers.reset();
  c.prediction.parallel.last_stage_layers.reset();
  c.prediction.stage_layers = {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2};
  EXPECT_THAT(EmitMegatronArgs(c.prediction, {}),
              HasSubstr("'Et*3|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|"
                        "t*2mL'"));
  c.prediction.parallel.vp = 2;
  c.prediction.parallel.pp = 2;
  c.prediction.model.num_layers = 64;
  c.prediction.stage_layers = {16, 16, 16, 16};
  const std::string even = EmitMegatronArgs(c.prediction, {});
  EXPECT_THAT(even, HasSubstr("  --num-layers-per-virtual-pipeline-stage 16\n"));
  EXPECT_THAT(even, Not(HasSubstr("--pipeline-model-parallel-layout")));
}

TEST(FixedStageLayersTest, SplitsAsTheStepModelDoes) {
  ModelSpec m;
  m.num_layers = 61;
  ParallelConfig p;
  p.pp = 4;
  p.vp = 4;
  EXPECT_TRUE(FixedStageLayers(m, p).empty());  // 61 % 16 != 0, no first/last
  p.first_stage_layers = 3;
  p.last_stage_layers = 2;
  // 56 layers over 14 middle stages: 4 each.
  std::vector<int> want(16, 4);
  want.front() = 3;
  want.back() = 2;
  EXPECT_EQ(FixedStageLayers(m, p), want);
  p.last_stage_layers = 1;  // 57 over 14: the first middle stage takes 5
  want.back() = 1;
  want[1] = 5;
  EXPECT_EQ(FixedStageLayers(m, p), want);
  m.num_layers = 64;
  p.first_stage_layers.reset();
  p.last_stage_layers.reset();
  EXPECT_EQ(FixedStageLayers(m, p), std::vector<int>(16, 4));
}

TEST(EmittersTest, MaxTextModelConfigOnlyForThePresetItself) {
  GoldenCase c = MaxTextCases()[0];
  absl::StatusOr<MaxTextConfig> preset = EmitMaxText(c.prediction, c.cluster, {});
  ASSERT_TRUE(preset.ok());
  EXPECT_THAT(preset->yaml, HasSubstr("\nmodel_name: deepseek3-671b\nmtp_num_layers: 1\n"));
  EXPECT_THAT(preset->yaml, Not(HasSubstr("base_emb_dim")));
  // A model that only borrows the name: its own shape, no MaxText config.
  c.prediction.model.num_layers = 60;
  absl::StatusOr<MaxTextConfig> own = EmitMaxText(c.prediction, c.cluster, {});
  ASSERT_TRUE(own.ok());
  EXPECT_THAT(own->yaml, Not(HasSubstr("model_name:")));
  EXPECT_THAT(own->yaml, HasSubstr("# no MaxText model config for 'deepseek-v3'"));
  EXPECT_THAT(own->yaml, HasSubstr("\nbase_emb_dim: 7168\n"));
  EXPECT_THAT(own->yaml, HasSubstr("\nbase_num_decoder_layers: 60\n"));
  EXPECT_THAT(own->yaml, HasSubstr("\nattention_type: mla\nq_lora_rank: 1536\n"));
  EXPECT_THAT(own->yaml, HasSubstr("\nnum_experts: 256\nnum_experts_per_tok: 8\n"));
  // What the keys cannot say is named for the decoder block to supply.
  EXPECT_THAT(own->yaml, HasSubstr("# not said by the keys above (the decoder block must have "
                                   "it): q/k norms, sigmoid router scores\n"));
  c.prediction.model.qkv_bias = true;
  c.prediction.model.arch.rotary_percent = 0.5;
  EXPECT_THAT(EmitMaxText(c.prediction, c.cluster, {})->yaml,
              HasSubstr("it): q/k/v biases, q/k norms, RoPE on 0.5 of each head, sigmoid"));
}

TEST(EmittersTest, MaxTextRefusesAMegatronPlan) {
  EXPECT_EQ(EmitMaxText(Cases()[0].prediction, Cases()[0].cluster, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A MaxText plan MaxText's rules refuse: first/last stage sizes.
  GoldenCase c = MaxTextCases()[1];
  c.prediction.parallel.first_stage_layers = 3;
  EXPECT_THAT(std::string(EmitMaxText(c.prediction, c.cluster, {}).status().message()),
              HasSubstr("MaxText: every pipeline stage holds"));
}

// Hand-checkable mapping of the seed run: 128 GPUs in slices of 64 (the
// fewest equal parts inside a 72-GPU NVLink domain); fsdp 16 = dp 128 / ep 8,
// split 8 on ICI x 2 on DCN (DCN takes data/fsdp before expert); expert 8 on
// ICI; 768 sequences = 6 per GPU x 128, one accumulation step.
TEST(EmittersTest, MaxTextSeedMeshAndBatch) {
  const GoldenCase c = MaxTextCases()[0];
  absl::StatusOr<MaxTextConfig> m = EmitMaxText(c.prediction, c.cluster, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(MaxTextSlices(128, c.cluster), 2);
  for (const char* line :
       {"ici_fsdp_parallelism: 8\n", "dcn_fsdp_parallelism: 2\n", "ici_expert_parallelism: 8\n",
        "dcn_expert_parallelism: 1\n", "ici_data_parallelism: 1\n",
        "DCN = across 2 slices\n",
        "per_device_batch_size: 6\n", "gradient_accumulation_steps: 1\n",
        "remat_policy: custom\n", "moe_mlpwi_0: offload\n", "moe_mlpwi_1: offload\n",
        "moe_mlpwo: device\n", "context: remat\n", "quantization: te_fp8_currentscaling\n",
        "capacity_factor: -1.0\n"}) {
    EXPECT_THAT(m->yaml, HasSubstr(line));
  }
  EXPECT_THAT(m->xla_flags,
              HasSubstr("--xla_gpu_experimental_parallel_collective_overlap_limit=2"));
  EXPECT_THAT(m->xla_flags, HasSubstr("--xla_gpu_enable_host_memory_offloading=true"));
  // 1 - 3 GiB reserve / HBM (GB200: 186 GB = 173.2 GiB): 0.982 -> 0.98.
  EXPECT_THAT(m->environment, ::testing::Contains("XLA_PYTHON_CLIENT_MEM_FRACTION=0.98"));

  // Llama: 16 H100 in 2 slices of 8; pipeline 4 goes to DCN first (2), the
  // rest on ICI: pipeline 2 x tensor 2 x data 2 = 8. 32 layers / (4 x 2) =
  // 4 per stage visit; 64 / (2 x 2) = 16 micro-batches, a multiple of 4.
  const GoldenCase l = MaxTextCases()[1];
  absl::StatusOr<MaxTextConfig> ml = EmitMaxText(l.prediction, l.cluster, {});
  ASSERT_TRUE(ml.ok()) << ml.status();
  for (const char* line :
       {"ici_pipeline_parallelism: 2\n", "dcn_pipeline_parallelism: 2\n",
        "ici_tensor_parallelism: 2\n", "ici_data_parallelism: 2\n",
        "num_layers_per_pipeline_stage: 4\n", "num_pipeline_repeats: 2\n",
        "num_pipeline_microbatches: 16\n", "per_device_batch_size: 4\n",
        "remat_policy: full\n", "quantization: \"\"\n"}) {
    EXPECT_THAT(ml->yaml, HasSubstr(line));
  }
  EXPECT_THAT(ml->xla_flags, HasSubstr("--xla_gpu_enable_latency_hiding_scheduler=false"));
  EXPECT_THAT(ml->xla_flags, HasSubstr("--xla_gpu_enable_command_buffer="));
}

}  // namespace
}  // namespace moetune::planner
