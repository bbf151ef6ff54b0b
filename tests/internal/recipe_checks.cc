#include "tests/internal/recipe_checks.h"

#include <string>
#include <tuple>
#include <utility>

namespace moetune::tests {

namespace planner = ::moetune::planner;

namespace {

// ddp.check_for_nan_in_grad / check_for_large_grads (Megatron-LM
// param_and_grad_buffer.py check_grads: one L2 norm per gradient bucket,
// checked by the rerun state machine before the DP reduce-scatter) and
// check_for_nan_in_loss: one read of the rank's gradients per step (~5.1 G
// BF16 values, ~10 GB: ~1.5 ms at 7 TB/s on GB200) plus a host check per
// bucket, against a 12.4 s step: under 0.1%, not priced.
constexpr char kSafetyChecks[] = "per-step NaN / large-gradient checks (< 0.1% of the step)";

planner::Knobs RecipeKnobs(planner::Precision precision) {
  planner::Knobs k;
  k.precision = precision;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kFusedDedup;  // flex, HybridEP
  k.cuda_graphs = true;
  return k;
}

// Megatron-Bridge examples/model_verification_cards/qwen3-30b-a3b/card.yaml
// (commit 067f987df0; base container nemo:26.06): 8 GB200 (2 nodes x 4),
// TP1 PP1 CP1 EP8 ETP1, GBS 512, MBS 4, seq 4096, MXFP8.
RecipeCheck Qwen3Gb200(const char* id, const char* recipe, double measured) {
  RecipeCheck c;
  c.id = id;
  c.source =
      "NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/qwen3-30b-a3b/card.yaml";
  c.recipe = recipe;
  c.model_preset = "qwen3-30b-a3b";
  c.cluster_preset = "gb200-nvl72";
  c.shape.gpus = 8;
  c.shape.seq_len = 4096;
  c.shape.global_batch = 512;
  c.parallel.ep = 8;
  c.parallel.mbs = 4;
  c.generation = planner::StackGeneration::k2606;
  c.knobs = RecipeKnobs(planner::Precision::kMxfp8);
  // The performance recipe's scope (full-iteration graphs, static token
  // budget); the functional and H100 recipes below set it off.
  c.features.graph_full_iteration = true;
  c.measured_tokens_per_sec_per_gpu = measured;
  c.set = RecipeCheck::Set::kVerificationCard;
  return c;
}

// The same card, 16 H100 (2 nodes x 8): TP1 PP1 EP16, GBS 1024, MBS 1,
// BF16, HybridEP, CUDA graphs scoped to moe_router + moe_preprocess.
RecipeCheck Qwen3H100(const char* id, const char* recipe, double measured) {
  RecipeCheck c = Qwen3Gb200(id, recipe, measured);
  c.cluster_preset = "h100-sxm";
  c.shape.gpus = 16;
  c.shape.global_batch = 1024;
  c.parallel.ep = 16;
  c.parallel.mbs = 1;
  c.knobs = RecipeKnobs(planner::Precision::kBf16);
  c.features.graph_attn = false;
  c.features.graph_full_iteration = false;  // cuda_graph_impl transformer_engine, scoped
  return c;
}

// Megatron-Bridge docs/performance-summary.md (26.08) and
// performance-summary-archive.md (26.06, 26.06.01), commit 067f987df0:
// GPT-OSS-120B, 64 GPUs, MXFP8, GBS 1280, MBS 4, seq 4096, TP1 PP1. The
// recipes (src/megatron/bridge/perf_recipes/gpt_oss/{gb200,gb300}/gpt_oss.py,
// _apply_gpt_oss_120b_full_iter_fp8mx_configs in gpt_oss/common.py):
// full-iteration CUDA graphs, HybridEP, EP overlap, forced load balancing,
// fp8_dot_product_attention = True.
RecipeCheck GptOss(const char* id, const char* cluster, int ep, const char* container,
                   double measured) {
  RecipeCheck c;
  c.id = id;
  c.source = std::string("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary") +
             (std::string(container) == "26.08" ? ".md" : "-archive.md") + ", " + container +
             " NeMo container";
  c.recipe =
      "full-iteration CUDA graphs, HybridEP 32 SMs, EP overlap, forced balancing, "
      "fp8_dot_product_attention";
  c.model_preset = "gpt-oss-120b";
  c.cluster_preset = cluster;
  c.shape.gpus = 64;
  c.shape.seq_len = 4096;
  c.shape.global_batch = 1280;
  c.parallel.ep = ep;
  c.parallel.mbs = 4;
  c.generation = planner::StackGeneration::k2606;
  c.knobs = RecipeKnobs(planner::Precision::kMxfp8);
  c.features.graph_full_iteration = true;  // the recipe's full-iteration graphs
  // No recompute: the base recipe gpt_oss_120b_pretrain_config
  // (recipes/gpt_oss/h100/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_h100_bf16_
  // config) sets recompute_granularity None and the GB200/GB300 recipes add
  // none (they set moe_paged_stash and offload_modules = []).
  c.knobs.recompute.mode = planner::RecomputeMode::kNone;
  c.fp8_attention = true;
  // The 26.06.01 regression (below) shows these recipes run cuDNN's CuTeDSL
  // fused grouped MLP, which the step model prices as separate grouped
  // GEMMs and activation kernels.
  c.not_modelled =
      "FP8 attention's own speed through cuDNN (fp8_dot_product_attention): priced as "
      "fused BF16 attention; cuDNN's CuTeDSL fused grouped MLP";
  c.measured_tokens_per_sec_per_gpu = measured;
  return c;
}

// Megatron-Bridge model verification cards (examples/model_verification_
// cards/<model>/card.yaml at 067f987df0, 2026-08-22): the canonical
// pretrain_performance recipes, 50 mock-data steps, forced balancing, the
// mean of steps 41-50. Each card names the Bridge commit its recipe was
// read at (below, per check).
constexpr char kCardsDir[] = "NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/";

// The job of an August 2026 check: seq 4096, forced balancing, the flex
// dispatcher and CUDA graphs (RecipeKnobs), no recompute, no TP comm
// overlap; the callers set the rest of what their recipe runs.
RecipeCheck Aug2026Check(const char* id, std::string source, const char* recipe,
                         const char* model, const char* cluster, int gpus, int gbs,
                         planner::Precision precision, RecipeCheck::Set set) {
  RecipeCheck c;
  c.id = id;
  c.source = std::move(source);
  c.recipe = recipe;
  c.model_preset = model;
  c.cluster_preset = cluster;
  c.shape.gpus = gpus;
  c.shape.seq_len = 4096;
  c.shape.global_batch = gbs;
  c.generation = planner::StackGeneration::k2606;  // nemo:26.06 / 26.08 containers
  c.knobs = RecipeKnobs(precision);
  c.knobs.recompute.mode = planner::RecomputeMode::kNone;
  c.knobs.overlap.tp_comm = false;
  c.set = set;
  return c;
}

// The Blackwell DeepSeek-V3 and Qwen3-235B-A22B performance recipes turn
// on, with full-iteration graphs, what the step model has no mechanism
// for: paged stashing with a static expert-rank capacity (factor 1.5) and
// TE's CuTeDSL fused grouped MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1).
constexpr char kFullIterationNotModelled[] =
    "paged stash (expert-rank capacity 1.5), CuTeDSL fused grouped MLP";

// MXFP8, HybridEP (32 SMs), full-iteration CUDA graphs, EP overlap with
// delayed wgrad, forced balancing, no TP comm overlap, DP overlap (deepseek/
// common.py _enable_deepseek_full_iteration_mxfp8, qwen/common.py
// _enable_hybridep_full_iteration_mxfp8).
RecipeCheck FullIterationCard(const char* id, const char* model, const char* source,
                              const char* recipe, const char* cluster, int gpus, int gbs,
                              double measured) {
  RecipeCheck c = Aug2026Check(id, std::string(kCardsDir) + source, recipe, model, cluster, gpus,
                               gbs, planner::Precision::kMxfp8,
                               RecipeCheck::Set::kVerificationCard);
  c.features.graph_full_iteration = true;
  c.not_modelled = kFullIterationNotModelled;
  c.measured_tokens_per_sec_per_gpu = measured;
  return c;
}

// DeepSeek-V3 (card bridge_commit 79308d0d99, nemo:26.08.rc5): the
// Blackwell recipes' pipeline layout "Et*4|(t*4|)*14tmL" (embedding and 4
// layers first, 14 stages of 4, then one layer with MTP and the loss).
RecipeCheck Dsv3BlackwellCard(const char* id, const char* recipe, const char* cluster, int pp,
                              int vp, int ep, double measured) {
  RecipeCheck c = FullIterationCard(id, "deepseek-v3", "deepseek-v3/card.yaml (recipes at 79308d0d99)",
                                    recipe, cluster, 256, 4096, measured);
  c.parallel.pp = pp;
  c.parallel.vp = vp;
  c.parallel.ep = ep;
  c.parallel.first_stage_layers = 4;
  c.parallel.last_stage_layers = 1;
  return c;
}

// Megatron-LM examples/moe_recipes (dev, 9c5258f109, 2026-08-11): the
// Recipe Index's median TFLOP/s/GPU and each recipe's YAML ARGS. All force
// load balancing, run MXFP8 (or BF16) with the flex dispatcher and the EP
// A2A overlap with delay_wgrad_compute, and no TP comm overlap; those on
// pytorch:26.03 are priced as the 26.02 generation (the container's), the
// one full-iteration recipe on 26.04 as 26.06 (as the MLPerf v6.0 anchors
// on 26.04 containers are).
constexpr char kRecipeIndexSource[] =
    "NVIDIA/Megatron-LM@9c5258f109 (dev) examples/moe_recipes/README.md (Recipe Index) and ";

RecipeCheck RecipeIndexCheck(const char* id, const char* yaml, const char* recipe,
                             const char* model, const char* cluster, int gpus, int gbs,
                             planner::Precision precision, double measured_tflops) {
  RecipeCheck c = Aug2026Check(id, std::string(kRecipeIndexSource) + yaml, recipe, model,
                               cluster, gpus, gbs, precision, RecipeCheck::Set::kRecipeIndex);
  c.generation = planner::StackGeneration::k2602;  // pytorch:26.03
  c.knobs.overlap.ep_comm = true;
  c.measured_tflops_per_gpu = measured_tflops;
  return c;
}

// DeepSeek-V3's index recipes: layout "Et*4|(tttt|)*14tmL" (16 virtual
// stages: embedding and 4 layers, 14 x 4, then one layer with MTP and the
// loss).
RecipeCheck Dsv3IndexCheck(const char* id, const char* yaml, const char* recipe,
                           const char* cluster, int pp, int ep, int gbs, double tflops) {
  RecipeCheck c = RecipeIndexCheck(id, yaml, recipe, "deepseek-v3", cluster, 256, gbs,
                                   planner::Precision::kMxfp8, tflops);
  c.parallel.pp = pp;
  c.parallel.vp = 16 / pp;
  c.parallel.ep = ep;
  c.parallel.first_stage_layers = 4;
  c.parallel.last_stage_layers = 1;
  return c;
}

// Megatron-MoE-ModelZoo's Qwen3-235B-A22B runs on GB200 / GB300
// (yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md at e865051,
// 2026-05-16, "GB200" and "GB300" tables, published as TFLOP/s/GPU on
// Megatron-LM's count): each launch line's knobs on top of what
// sbatch_benchmarking.sh and model_configs/benchmarking/Qwen3-235B-A22B.yaml
// set for every run -- HybridEP with 32 SMs (DISPATCHER=hybridep), forced
// balancing (--moe-router-force-load-balancing on every line), ETP 1,
// sequence parallelism, distributed optimizer with grad-reduce and
// param-gather overlap, the embedding and the loss counted as layers in the
// pipeline split (96 / (pp vp) per virtual stage, one layer fewer on the
// first and the last); MXFP8 runs add BF16 Adam moments
// (--use-precision-aware-optimizer --exp-avg-dtype bf16) and FP8 parameter
// gathers, BF16 runs --tp-comm-overlap; A2A_OVERLAP=1 adds
// --overlap-moe-expert-parallel-comm --delay-wgrad-compute. Megatron-LM dev
// of May 2026, priced as the 26.02 generation (as the ModelZoo knob
// ladders are).
constexpr char kModelZooQwen3Source[] =
    "yanring/Megatron-MoE-ModelZoo@e8650517 best_practice/qwen3/readme.md";

RecipeCheck ModelZooQwen3Check(const char* id, const char* recipe, const char* cluster,
                               int gpus, int seq, int gbs, planner::Precision precision,
                               int pp, int vp, int ep, int mbs, double measured_tflops) {
  RecipeCheck c;
  c.id = id;
  c.source = kModelZooQwen3Source;
  c.recipe = recipe;
  c.model_preset = "qwen3-235b-a22b";
  c.cluster_preset = cluster;
  c.shape.gpus = gpus;
  c.shape.seq_len = seq;
  c.shape.global_batch = gbs;
  c.parallel.pp = pp;
  c.parallel.vp = vp;
  c.parallel.ep = ep;
  c.parallel.etp = 1;
  c.parallel.mbs = mbs;
  if (pp > 1) {
    const int per_virtual_stage = 96 / (pp * vp);
    c.parallel.first_stage_layers = per_virtual_stage - 1;
    c.parallel.last_stage_layers = per_virtual_stage - 1;
  }
  c.generation = planner::StackGeneration::k2602;
  c.knobs = RecipeKnobs(precision);
  c.knobs.recompute.mode = planner::RecomputeMode::kNone;
  c.knobs.overlap.ep_comm = false;
  c.knobs.overlap.tp_comm = precision == planner::Precision::kBf16;
  if (precision != planner::Precision::kBf16) {
    c.knobs.optimizer_states = planner::OptimizerStates::kBf16Moments;
  }
  c.measured_tflops_per_gpu = measured_tflops;
  c.set = RecipeCheck::Set::kModelZoo;
  return c;
}

// Megatron-Bridge skills/nemo-mbridge-perf-moe-hardware-configs/card.yaml
// (commit 067f987df0, validated 2026-07-31), best_configs: "representative
// point-in-time" rows from NVIDIA's MCore Release Performance Tracker, each
// with its layout, batch, dispatcher, forced balancing and TFLOP/s/GPU as the
// card rounds it ("~520": read as +-2-5%). The card lists a CUDA-graph
// scope, the 1F1B EP overlap (overlap_1f1b) and a recompute only where a row
// ran them, so a row without one is priced without it; the container is not
// given (the rows price alike as 26.02 and 26.06: moetune predict --stack),
// nor TP comm overlap (off, as in the recipe index's recipes) or
// DeepEP's SM count where unlisted (Megatron's default 20). Two rows are left
// out: DeepSeek-V3 (no MTP) on 256 GB200 at TP1 PP8 VP4 EP32 GBS 2048 is the
// layout and job of the GB200 optimization guide's ladder in runs.json (970
// at its last step), and Qwen3-30B-A3B on 16 H100 is the verification card's
// performance run.
constexpr char kTrackerSource[] =
    "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-moe-hardware-configs/"
    "card.yaml (best_configs, MCore Release Performance Tracker, validated 2026-07-31)";

RecipeCheck TrackerCheck(const char* id, const char* recipe, const char* model,
                         const char* cluster, int gpus, int gbs, planner::Precision precision,
                         int tp, int pp, int vp, int ep, int mbs, double measured_tflops) {
  RecipeCheck c = Aug2026Check(id, kTrackerSource, recipe, model, cluster, gpus, gbs, precision,
                               RecipeCheck::Set::kReleaseTracker);
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.vp = vp;
  c.parallel.ep = ep;
  c.parallel.etp = 1;
  c.parallel.mbs = mbs;
  c.knobs.cuda_graphs = false;
  c.knobs.overlap.ep_comm = false;
  c.features.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
  c.features.deepep_num_sms = 20;
  c.measured_tflops_per_gpu = measured_tflops;
  return c;
}

struct SetNames {
  RecipeCheck::Set set;
  const char* label;
  const char* title;
};

constexpr SetNames kSetNames[] = {
    {RecipeCheck::Set::kVerificationCard, "verification cards",
     "Megatron-Bridge verification cards (Jul-Aug 2026)"},
    {RecipeCheck::Set::kRecipeIndex, "recipe index",
     "Megatron-LM recipe index (Aug 2026, runs outside the knob ladders)"},
    {RecipeCheck::Set::kModelZoo, "ModelZoo",
     "Megatron-MoE-ModelZoo Qwen3-235B-A22B GB200 / GB300 (May 2026)"},
    {RecipeCheck::Set::kReleaseTracker, "release tracker",
     "MCore release tracker rows of the MoE hardware-configs card (Jul 2026, rounded)"},
};

const SetNames* NamesOf(RecipeCheck::Set set) {
  for (const SetNames& n : kSetNames) {
    if (n.set == set) return &n;
  }
  return nullptr;
}

}  // namespace

const char* SetLabel(RecipeCheck::Set set) {
  const SetNames* n = NamesOf(set);
  return n ? n->label : "other checks";
}

const char* SetTitle(RecipeCheck::Set set) {
  const SetNames* n = NamesOf(set);
  return n ? n->title : "other checks";
}

std::vector<RecipeCheck> PublicRecipeChecks() {
  std::vector<RecipeCheck> v;
  {
    // pretrain_performance.GB200: recipe
    // qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config (perf_recipes/qwen/
    // gb200/qwen3_moe.py): forced balancing, full-iteration CUDA graphs
    // (_enable_hybridep_full_iteration_mxfp8), EP overlap; 40,322.898
    // tokens/s/GPU (6,501 ms per step).
    v.push_back(Qwen3Gb200("qwen3-30b-gb200-card-performance",
                           "full-iteration CUDA graphs, forced balancing, EP overlap", 40322.898));
  }
  {
    // pretrain_performance.GB300: qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config
    // (perf_recipes/qwen/gb300/qwen3_moe.py): the GB200 recipe above at MBS 8
    // on GB300; 44,773.361 tokens/s/GPU (5,855 ms per step).
    RecipeCheck c = Qwen3Gb200("qwen3-30b-gb300-card-performance",
                               "full-iteration CUDA graphs, forced balancing, EP overlap, MBS 8",
                               44773.361);
    c.cluster_preset = "gb300-nvl72";
    c.parallel.mbs = 8;
    v.push_back(c);
  }
  {
    // pretrain.GB200: recipe qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_
    // functional_config (recipes/qwen/gb200/qwen3_moe.py): CUDA graphs
    // scoped to moe_router + moe_preprocess (attention and the routed
    // experts run eagerly), natural routing, EP overlap with delayed wgrad,
    // NaN / large-gradient checks; 21,205.047 tokens/s/GPU (12,362 ms).
    RecipeCheck c = Qwen3Gb200("qwen3-30b-gb200-card-functional",
                               "graphs scoped moe_router+moe_preprocess, natural routing, "
                               "EP overlap, NaN/large-grad checks",
                               21205.047);
    c.features.graph_attn = false;
    c.features.graph_full_iteration = false;
    c.knobs.routing = planner::Routing::kNatural;
    c.not_modelled = kSafetyChecks;
    v.push_back(c);
  }
  {
    // pretrain_performance.H100: qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config:
    // forced balancing, scoped graphs (moe_router, moe_preprocess), EP
    // overlap; 13,011.378 tokens/s/GPU.
    // The perf recipe (perf_recipes/qwen/h100/qwen3_moe.py) takes the
    // functional one below and turns on forced balancing, EP overlap with
    // delay_wgrad_compute = False, and moe_permute_fusion_into_hybridep.
    RecipeCheck c = Qwen3H100("qwen3-30b-h100-card-performance",
                              "graphs scoped moe_router+moe_preprocess, forced balancing, EP "
                              "overlap without delayed wgrad",
                              13011.378);
    c.features.delay_wgrad_compute = false;
    v.push_back(c);
  }
  {
    // pretrain.H100: recipe qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config
    // (recipes/qwen/h100/qwen3_moe.py; the card's qwen3_30b_a3b_pretrain_config
    // alias resolves to it): natural routing, moe_a2a_overlap = False and
    // CommOverlapConfig(tp_comm_overlap=True) -- no EP overlap -- and the
    // safety checks; 8,654.602 tokens/s/GPU.
    RecipeCheck c = Qwen3H100("qwen3-30b-h100-card-functional",
                              "graphs scoped moe_router+moe_preprocess, natural routing, "
                              "no EP overlap, NaN/large-grad checks",
                              8654.602);
    c.knobs.routing = planner::Routing::kNatural;
    c.knobs.overlap.ep_comm = false;
    c.not_modelled = kSafetyChecks;
    v.push_back(c);
  }
  {
    // sft.H100: recipe qwen3_30b_a3b_sft_16gpu_h100_bf16_config
    // (recipes/qwen/h100/qwen3_moe.py): cuda_graph_impl "none", the NCCL
    // all-to-all dispatcher, no A2A overlap, comm_overlap None, router
    // fusion; seq 2048 (offline-packed), GBS 32, MBS 1, EP16, natural
    // routing; 1,206 ms per step, 3,395.451 tokens/s/GPU (token slots).
    RecipeCheck c = Qwen3H100("qwen3-30b-h100-card-sft-no-graphs",
                              "no CUDA graphs, alltoall, no comm overlap, natural routing, "
                              "packed SFT",
                              3395.451);
    c.shape.seq_len = 2048;
    c.shape.global_batch = 32;
    c.shape.objective = planner::Objective::kFinetune;
    c.knobs.cuda_graphs = false;
    c.knobs.dispatcher = planner::Dispatcher::kAllToAll;
    c.knobs.overlap.tp_comm = false;
    c.knobs.overlap.ep_comm = false;
    c.features.graph_attn = true;  // irrelevant without graphs
    c.knobs.routing = planner::Routing::kNatural;
    c.not_modelled = std::string(kSafetyChecks) + ", packed-sequence (THD) bookkeeping";
    v.push_back(c);
  }
  v.push_back(GptOss("gpt-oss-120b-gb300-ep16-26.06", "gb300-nvl72", 16, "26.06", 33166));
  v.push_back(GptOss("gpt-oss-120b-gb300-ep16-26.08", "gb300-nvl72", 16, "26.08", 33024));
  v.push_back(GptOss("gpt-oss-120b-gb200-ep64-26.06", "gb200-nvl72", 64, "26.06", 28947));
  v.push_back(GptOss("gpt-oss-120b-gb200-ep64-26.08", "gb200-nvl72", 64, "26.08", 28672));
  {
    // 26.06.01: the archive's footnote, "Performance regression in GPT-OSS
    // 120B pre-training is a known issue (NVIDIA/cudnn-frontend issue 256)";
    // 20,288 (GB300) and 18,304 (GB200). That issue (2026-05-27) is not
    // attention: cuDNN frontend's CuTeDSL block-scaled MoE grouped GEMM with
    // the fused GLU backward (grouped_gemm_dglu_wrapper_sm100, the kernel
    // behind the recipes' fused grouped MLP) became 10x slower from frontend
    // 1.23 to 1.24 on GB200-class GPUs, for GPT-OSS-20B and DeepSeek-V3.
    // The drop, +1.57 s (GB300) / +1.65 s (GB200) per step, puts that
    // kernel's normal time near 0.17-0.18 s per step if the whole 10x
    // applied -- about 3x what the model prices for the GEMM it fuses (fc2's
    // dgrad, 1/9 of the routed experts' 0.44 / 0.57 s): a hint that the
    // GPT-OSS MXFP8 recipes' error (+28..+36% with their knobs) sits in the
    // experts' MLP rather than in the attention.
    RecipeCheck a = GptOss("gpt-oss-120b-gb300-ep16-26.06.01", "gb300-nvl72", 16, "26.06.01",
                           20288);
    a.not_modelled =
        "the 26.06.01 regression of cuDNN's fused MoE grouped GEMM + dGLU kernel "
        "(cudnn-frontend issue 256)";
    v.push_back(a);
    RecipeCheck b = GptOss("gpt-oss-120b-gb200-ep64-26.06.01", "gb200-nvl72", 64, "26.06.01",
                           18304);
    b.not_modelled = a.not_modelled;
    v.push_back(b);
  }
  {
    // DeepSeek-V3 pretrain_performance.GB200 (2026-08-14):
    // deepseek_v3_pretrain_256gpu_gb200_fp8mx_config (perf_recipes/deepseek/
    // gb200/deepseek_v3.py): TP1 PP4 VP4 EP64, GBS 4096, MBS 1, recompute
    // mla_up_proj; 13,841 ms, 4,734.856 tokens/s/GPU.
    RecipeCheck c = Dsv3BlackwellCard(
        "dsv3-gb200-card-performance",
        "full-iteration CUDA graphs, HybridEP, EP overlap, forced balancing, recompute "
        "mla_up_proj",
        "gb200-nvl72", 4, 4, 64, 4734.856);
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeMlaUpProj;
    v.push_back(c);
  }
  {
    // DeepSeek-V3 pretrain_performance.GB300 (2026-08-14): ..._256gpu_gb300_
    // fp8mx_config: TP1 PP2 VP8 EP32, GBS 4096, MBS 1, no recompute,
    // fp8_dot_product_attention; 10,667 ms, 6,143.635 tokens/s/GPU.
    RecipeCheck c = Dsv3BlackwellCard(
        "dsv3-gb300-card-performance",
        "full-iteration CUDA graphs, HybridEP, EP overlap, forced balancing, "
        "fp8_dot_product_attention",
        "gb300-nvl72", 2, 8, 32, 6143.635);
    c.not_modelled = std::string(kFullIterationNotModelled) +
                     ", FP8 attention (fp8_dot_product_attention: priced as BF16 attention)";
    v.push_back(c);
  }
  {
    // DeepSeek-V3 pretrain_performance.H100 (2026-08-15): deepseek_v3_
    // pretrain_1024gpu_h100_bf16_config (perf_recipes/deepseek/h100/
    // deepseek_v3.py over recipes/deepseek/h100/deepseek_v3.py): TP2 (SP)
    // PP8 VP4 EP64 ETP1, GBS 16384, MBS 1, BF16, layout "Et|(tt|)*30mL"
    // (embedding and one layer first, MTP and loss alone last), recompute
    // mla_up_proj + mlp, HybridEP, cuda_graph_impl none, no TP or EP comm
    // overlap, overlap_grad_reduce False; 61,756 ms, 1,061.206 tokens/s/GPU.
    RecipeCheck c = Aug2026Check(
        "dsv3-h100-card-performance",
        std::string(kCardsDir) + "deepseek-v3/card.yaml (recipes at 79308d0d99)",
        "no CUDA graphs, HybridEP, no EP / TP / grad-reduce overlap, forced balancing, "
        "recompute mla_up_proj+mlp",
        "deepseek-v3", "h100-sxm", 1024, 16384, planner::Precision::kBf16,
        RecipeCheck::Set::kVerificationCard);
    c.parallel.tp = 2;
    c.parallel.pp = 8;
    c.parallel.vp = 4;
    c.parallel.ep = 64;
    c.parallel.etp = 1;
    c.parallel.first_stage_layers = 1;
    c.parallel.last_stage_layers = 0;
    c.knobs.cuda_graphs = false;
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeMlaUpProj | planner::kRecomputeMlp;
    c.knobs.overlap.ep_comm = false;
    c.knobs.overlap.dp_comm = false;
    c.measured_tokens_per_sec_per_gpu = 1061.206;
    v.push_back(c);
  }
  {
    // Qwen3-235B-A22B pretrain_performance.GB200 (2026-08-19, recipe at
    // 0480586879): qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config
    // (perf_recipes/qwen/gb200/qwen3_moe.py): TP1 PP8 VP3 EP32, GBS 8192,
    // MBS 1, no recompute, fp8_dot_product_attention; 17,905 ms, 7,320.274
    // tokens/s/GPU.
    RecipeCheck c = FullIterationCard(
        "qwen3-235b-gb200-card-performance", "qwen3-235b-a22b",
        "qwen3-235b-a22b/card.yaml (recipe at 0480586879)",
        "full-iteration CUDA graphs, HybridEP, EP overlap, forced balancing, "
        "fp8_dot_product_attention",
        "gb200-nvl72", 256, 8192, 7320.274);
    c.parallel.pp = 8;
    c.parallel.vp = 3;
    c.parallel.ep = 32;
    c.not_modelled = std::string(kFullIterationNotModelled) +
                     ", FP8 attention (fp8_dot_product_attention: priced as BF16 attention)";
    v.push_back(c);
    // pretrain_performance.GB300 (2026-08-17, recipe at fbb7570cf7):
    // ..._256gpu_gb300_fp8mx_config: TP1 PP4 VP12 EP32, GBS 8192, MBS 2;
    // 14,921 ms, 8,784.492 tokens/s/GPU.
    RecipeCheck d = c;
    d.id = "qwen3-235b-gb300-card-performance";
    d.source = std::string(kCardsDir) + "qwen3-235b-a22b/card.yaml (recipe at fbb7570cf7)";
    d.cluster_preset = "gb300-nvl72";
    d.parallel.pp = 4;
    d.parallel.vp = 12;
    d.parallel.mbs = 2;
    d.measured_tokens_per_sec_per_gpu = 8784.492;
    v.push_back(d);
  }
  {
    // GPT-OSS-120B pretrain_performance.GB300 (2026-08-19, recipe at
    // 0480586879): gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config, the
    // 26.08 summary's recipe above (EP16, MBS 4, GBS 1280); 2,481 ms,
    // 33,017.081 tokens/s/GPU.
    RecipeCheck c = GptOss("gpt-oss-120b-gb300-card-performance", "gb300-nvl72", 16, "26.08",
                           33017.081);
    c.source = std::string(kCardsDir) + "gpt-oss-120b/card.yaml (recipe at 0480586879)";
    c.set = RecipeCheck::Set::kVerificationCard;
    v.push_back(c);
  }
  {
    // GPT-OSS-120B pretrain_performance.GB200 (2026-08-17; card
    // bridge_commit a8038f6d99, nemo:26.06): gpt_oss_120b_pretrain_64gpu_
    // gb200_bf16_config (perf_recipes/gpt_oss/gb200/gpt_oss.py) over the base
    // gpt_oss_120b_pretrain_config (recipes/gpt_oss/h100/gpt_oss.py:
    // moe_token_dispatcher_type alltoall, cuda_graph_impl none): TP1 PP1
    // EP64, GBS 1280, MBS 4, BF16, recompute layernorm + moe_act, EP overlap
    // with delayed wgrad, forced balancing; 4,996 ms, 16,398.332
    // tokens/s/GPU. runs.json's rows of this recipe (26.02 - 26.04.01) are
    // priced with the validator's stack knobs (flex dispatcher, scoped
    // graphs) instead; the card is priced as its recipe reads.
    RecipeCheck c = Aug2026Check(
        "gpt-oss-120b-gb200-card-performance",
        std::string(kCardsDir) + "gpt-oss-120b/card.yaml (recipe at a8038f6d99)",
        "no CUDA graphs, NCCL all-to-all, EP overlap, forced balancing, recompute "
        "layernorm+moe_act",
        "gpt-oss-120b", "gb200-nvl72", 64, 1280, planner::Precision::kBf16,
        RecipeCheck::Set::kVerificationCard);
    c.parallel.ep = 64;
    c.parallel.mbs = 4;
    c.knobs.cuda_graphs = false;
    c.knobs.dispatcher = planner::Dispatcher::kAllToAll;
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct;
    c.measured_tokens_per_sec_per_gpu = 16398.332;
    v.push_back(c);
    // pretrain.H100 (2026-08-11): the base recipe itself,
    // gpt_oss_120b_pretrain_64gpu_h100_bf16_config, on 64 H100: TP2 (SP) PP4
    // EP16 ETP1, GBS 512, MBS 1, BF16, NCCL all-to-all, no CUDA graphs, no
    // recompute, no TP or EP comm overlap, real data with natural routing,
    // grad_reduce_in_fp32, NaN / large-gradient checks; 16,665 ms, 1,966.285
    // tokens/s/GPU.
    RecipeCheck h = c;
    h.id = "gpt-oss-120b-h100-card-functional";
    h.recipe =
        "no CUDA graphs, NCCL all-to-all, no EP / TP comm overlap, natural routing, no "
        "recompute";
    h.cluster_preset = "h100-sxm";
    h.shape.global_batch = 512;
    h.parallel.tp = 2;
    h.parallel.pp = 4;
    h.parallel.ep = 16;
    h.parallel.etp = 1;
    h.parallel.mbs = 1;
    h.knobs.recompute = planner::Recompute{};
    h.knobs.overlap.ep_comm = false;
    h.knobs.routing = planner::Routing::kNatural;
    // The Bridge GPT-OSS provider trains its router with no load balancing
    // at all (models/gpt_oss/gpt_oss_bridge.py: moe_router_load_balancing_
    // type "none"), from scratch, 100 steps: natural routing is priced with
    // the expert-load spread of trained, balanced checkpoints
    // (routing.h kNaturalRoutingExpertLoadGini), which this run need not
    // have.
    h.not_modelled = std::string(kSafetyChecks) +
                     ", FP32 gradient reduction (grad_reduce_in_fp32), a router trained "
                     "without load balancing (moe_router_load_balancing_type none)";
    h.measured_tokens_per_sec_per_gpu = 1966.285;
    v.push_back(h);
    // gpt-oss-20b/card.yaml pretrain.H100 (2026-08-09, bridge 6799f0997,
    // nemo:26.06): gpt_oss_20b_pretrain_16gpu_h100_bf16_config (recipes/
    // gpt_oss/h100/gpt_oss.py) on 16 H100: TP2 (SP) PP4 EP4 ETP1, GBS 512,
    // MBS 1, BF16, NCCL all-to-all, no CUDA graphs, no recompute, no
    // CommOverlapConfig (no TP or EP comm overlap), real data with natural
    // routing, grad_reduce_in_fp32, NaN / large-gradient checks; 22,401 ms,
    // 5,851.199 tokens/s/GPU. The 120B recipe's shape at 32 experts.
    RecipeCheck o = h;
    o.id = "gpt-oss-20b-h100-card-functional";
    o.source = std::string(kCardsDir) + "gpt-oss-20b/card.yaml (recipe at 6799f0997)";
    o.model_preset = "gpt-oss-20b";
    o.shape.gpus = 16;
    o.parallel.ep = 4;
    o.measured_tokens_per_sec_per_gpu = 5851.199;
    v.push_back(o);
  }
  {
    // moonlight-16b-a3b/card.yaml pretrain.H100 (2026-07-22, bridge
    // 411c6b1dc, pytorch:26.04 with Bridge's Megatron-Core):
    // moonlight_16b_pretrain_16gpu_h100_bf16_config (recipes/moonlight/h100/
    // moonlight_16b.py) on 16 H100: TP1 PP1 CP1 EP8 ETP1 (two expert-data
    // replicas, each EP group inside one node), GBS 1024, MBS 2, BF16, no
    // recompute, flex dispatcher with HybridEP (32 SMs), no CUDA graphs
    // (cuda_graph_impl none), EP overlap with delayed wgrad, router fusion,
    // real data with natural routing (aux loss 1e-3), NaN / large-gradient
    // checks; 11,636 ms, 22,528.026 tokens/s/GPU.
    RecipeCheck c = Aug2026Check(
        "moonlight-16b-h100-card-functional",
        std::string(kCardsDir) + "moonlight-16b-a3b/card.yaml (recipe at 411c6b1dc)",
        "no CUDA graphs, HybridEP, EP overlap, natural routing, no recompute",
        "moonlight-16b-a3b", "h100-sxm", 16, 1024, planner::Precision::kBf16,
        RecipeCheck::Set::kVerificationCard);
    c.parallel.ep = 8;
    c.parallel.etp = 1;
    c.parallel.mbs = 2;
    c.knobs.cuda_graphs = false;
    c.knobs.routing = planner::Routing::kNatural;
    c.knobs.overlap.ep_comm = true;
    c.not_modelled = kSafetyChecks;
    c.measured_tokens_per_sec_per_gpu = 22528.026;
    v.push_back(c);
    // qwen3-8b/card.yaml pretrain.H100 (2026-07-21, bridge 619cc20bd,
    // pytorch:26.04): qwen3_8b_pretrain_16gpu_h100_bf16_config (recipes/
    // qwen/h100/qwen3.py) on 16 H100: TP1 PP1 CP1 DP16, GBS 1024, MBS 1,
    // BF16, no CUDA graphs, no recompute, DP overlap, NaN / large-gradient
    // checks; 25,070 ms, 10,456.348 tokens/s/GPU. A dense model.
    RecipeCheck d = Aug2026Check(
        "qwen3-8b-h100-card-functional",
        std::string(kCardsDir) + "qwen3-8b/card.yaml (recipe at 619cc20bd)", "no CUDA graphs, no recompute",
        "qwen3-8b", "h100-sxm", 16, 1024, planner::Precision::kBf16,
        RecipeCheck::Set::kVerificationCard);
    d.parallel.mbs = 1;
    d.knobs.cuda_graphs = false;
    d.not_modelled = kSafetyChecks;
    d.measured_tokens_per_sec_per_gpu = 10456.348;
    v.push_back(d);
  }
  {
    // deepseek_v3/gb200/mxfp8_256GPU_TP1PP4EP64.yaml: EP64, GBS 8192,
    // HybridEP 32 SMs, TE graphs attn + moe_router + moe_preprocess,
    // recompute mla_up_proj, expert_fc1 activations offloaded, optimizer
    // states offloaded (offload_optimizer_states); 1,127.6 TFLOP/s/GPU.
    RecipeCheck c = Dsv3IndexCheck(
        "mlm-index-dsv3-gb200", "deepseek_v3/gb200/mxfp8_256GPU_TP1PP4EP64.yaml",
        "scoped graphs, HybridEP, EP overlap, recompute mla_up_proj, offload expert_fc1",
        "gb200-nvl72", 4, 64, 8192, 1127.6);
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeMlaUpProj;
    c.knobs.offload_activations = true;
    c.knobs.offload_modules = planner::kOffloadExpertFc1;
    c.not_modelled = "optimizer-state offload (offload_optimizer_states)";
    v.push_back(c);
    // deepseek_v3/gb300/...: the same without recompute and offload;
    // 1,357.7 TFLOP/s/GPU.
    RecipeCheck d = Dsv3IndexCheck("mlm-index-dsv3-gb300",
                                   "deepseek_v3/gb300/mxfp8_256GPU_TP1PP4EP64.yaml",
                                   "scoped graphs, HybridEP, EP overlap, no recompute",
                                   "gb300-nvl72", 4, 64, 8192, 1357.7);
    v.push_back(d);
    // deepseek_v3/b200/mxfp8_256GPU_TP1PP8EP32.yaml: PP8 (VP2 by the
    // layout), EP32, GBS 2048, DeepEP 24 SMs, no CUDA graphs, recompute
    // mla_up_proj + mlp; 776.7 TFLOP/s/GPU.
    RecipeCheck b = Dsv3IndexCheck("mlm-index-dsv3-b200",
                                   "deepseek_v3/b200/mxfp8_256GPU_TP1PP8EP32.yaml",
                                   "no CUDA graphs, DeepEP, EP overlap, recompute mla_up_proj+mlp",
                                   "b200", 8, 32, 2048, 776.7);
    b.knobs.cuda_graphs = false;
    b.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    b.knobs.recompute.modules = planner::kRecomputeMlaUpProj | planner::kRecomputeMlp;
    b.features.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
    b.features.deepep_num_sms = 24;
    v.push_back(b);
  }
  {
    // qwen3_235b/h100/bf16_256GPU_TP2PP8EP32.yaml: TP2 (SP) PP8, 3 layers
    // per virtual stage with embedding and loss counted (96 / 24: VP4),
    // EP32 ETP1, GBS 2048, HybridEP, TE graphs moe_router + moe_preprocess,
    // recompute moe_act + layernorm; 214.3 TFLOP/s/GPU. (An unmerged refresh
    // of the index, Megatron-LM 7146484607 in refs/pull/5728, gives 302.0
    // for the same recipe, and moves the other Qwen3 rows by -14..+7%: the
    // index's figures are single measurements.)
    RecipeCheck c = RecipeIndexCheck(
        "mlm-index-qwen3-235b-h100", "qwen3_235b/h100/bf16_256GPU_TP2PP8EP32.yaml",
        "graphs moe_router+moe_preprocess, HybridEP, EP overlap, recompute moe_act+layernorm",
        "qwen3-235b-a22b", "h100-sxm", 256, 2048, planner::Precision::kBf16, 214.3);
    c.parallel.tp = 2;
    c.parallel.pp = 8;
    c.parallel.vp = 4;
    c.parallel.ep = 32;
    c.parallel.etp = 1;
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeMoeAct | planner::kRecomputeLayerNorm;
    c.features.graph_attn = false;
    v.push_back(c);
    // qwen3_235b/b200/mxfp8_128GPU_TP2PP4EP16.yaml: TP2 PP4, 2 layers per
    // virtual stage (96 / 8: VP12), EP16, MBS 3, GBS 3072, DeepEP 20 SMs,
    // no CUDA graphs, no recompute; 633.9 TFLOP/s/GPU.
    RecipeCheck b = RecipeIndexCheck(
        "mlm-index-qwen3-235b-b200", "qwen3_235b/b200/mxfp8_128GPU_TP2PP4EP16.yaml",
        "no CUDA graphs, DeepEP, EP overlap, MBS 3", "qwen3-235b-a22b", "b200", 128, 3072,
        planner::Precision::kMxfp8, 633.9);
    b.parallel.tp = 2;
    b.parallel.pp = 4;
    b.parallel.vp = 12;
    b.parallel.ep = 16;
    b.parallel.etp = 1;
    b.parallel.mbs = 3;
    b.knobs.cuda_graphs = false;
    b.features.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
    b.features.deepep_num_sms = 20;
    v.push_back(b);
    // qwen3_235b/b300/mxfp8_128GPU_TP2PP1EP16_partial_cg.yaml: TP2 PP1 EP16,
    // MBS 3, GBS 9216, HybridEP 32 SMs, TE graphs attn + moe_router;
    // 922.6 TFLOP/s/GPU.
    RecipeCheck t = RecipeIndexCheck(
        "mlm-index-qwen3-235b-b300", "qwen3_235b/b300/mxfp8_128GPU_TP2PP1EP16_partial_cg.yaml",
        "graphs attn+moe_router, HybridEP, EP overlap, MBS 3", "qwen3-235b-a22b", "b300", 128,
        9216, planner::Precision::kMxfp8, 922.6);
    t.parallel.tp = 2;
    t.parallel.ep = 16;
    t.parallel.etp = 1;
    t.parallel.mbs = 3;
    t.features.graph_moe_preprocess = false;
    v.push_back(t);
    // qwen3_235b/gb300/mxfp8_128GPU_TP1PP1EP64_paged_stash_full_cg.yaml
    // (pytorch:26.04): EP64, GBS 8192, HybridEP, paged stash (capacity
    // 1.2), full-iteration graphs (cuda_graph_impl local); 1,323.1
    // TFLOP/s/GPU. The GB200 runs of this recipe are the Qwen3-235B knob
    // ladder's.
    RecipeCheck g = RecipeIndexCheck(
        "mlm-index-qwen3-235b-gb300",
        "qwen3_235b/gb300/mxfp8_128GPU_TP1PP1EP64_paged_stash_full_cg.yaml",
        "full-iteration graphs, paged stash, HybridEP, EP overlap", "qwen3-235b-a22b",
        "gb300-nvl72", 128, 8192, planner::Precision::kMxfp8, 1323.1);
    g.parallel.ep = 64;
    g.generation = planner::StackGeneration::k2606;
    g.features.graph_full_iteration = true;
    g.not_modelled = "paged stash (expert-rank capacity 1.2)";
    v.push_back(g);
  }
  {
    // GB200 BF16: TP1 PP8 EP8 (SEGMENT=2: each EP group on two trays of
    // one rack), MBS 1, GBS 8192, no recompute, TE graphs attn +
    // moe_router + moe_preprocess, A2A_OVERLAP=0; 750 TFLOP/s/GPU.
    v.push_back(ModelZooQwen3Check("modelzoo-qwen3-235b-gb200-bf16",
                                   "graphs attn+moe_router+moe_preprocess, HybridEP, no EP overlap",
                                   "gb200-nvl72", 256, 4096, 8192, planner::Precision::kBf16,
                                   8, 1, 8, 1, 750));
    // GB200 MXFP8: TP1 PP4 VP6 EP64 (SEGMENT=16), MBS 3, GBS 3072,
    // recompute moe_act + layernorm, fine-grained offload of expert_fc1 and
    // moe_act (--delay-offload-until-cuda-graph), the same graphs,
    // A2A_OVERLAP=1; 919 TFLOP/s/GPU ("activation offloading required").
    RecipeCheck m = ModelZooQwen3Check(
        "modelzoo-qwen3-235b-gb200-mxfp8",
        "graphs attn+moe_router+moe_preprocess, HybridEP, EP overlap, recompute "
        "moe_act+layernorm, offload expert_fc1+moe_act",
        "gb200-nvl72", 256, 4096, 3072, planner::Precision::kMxfp8, 4, 6, 64, 3, 919);
    m.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    m.knobs.recompute.modules = planner::kRecomputeMoeAct | planner::kRecomputeLayerNorm;
    m.knobs.offload_activations = true;
    m.knobs.offload_modules = planner::kOffloadExpertFc1 | planner::kOffloadMoeAct;
    m.knobs.overlap.ep_comm = true;
    m.not_modelled = "separate send / recv groups for the pipeline";
    v.push_back(m);
    // GB200 MXFP8 at 128k tokens: TP4 CP4 PP4 VP12 EP32 on 128 GPUs, MBS 1,
    // GBS 1024, recompute moe_act + layernorm, no CUDA graphs (no graph
    // flag on the line), A2A_OVERLAP=0, no TP comm overlap (MXFP8);
    // 1,150 TFLOP/s/GPU.
    RecipeCheck l = ModelZooQwen3Check(
        "modelzoo-qwen3-235b-gb200-128k",
        "seq 131072, TP4 CP4, no CUDA graphs, HybridEP, no EP overlap, recompute moe_act+layernorm",
        "gb200-nvl72", 128, 131072, 1024, planner::Precision::kMxfp8, 4, 12, 32, 1, 1150);
    l.parallel.tp = 4;
    l.parallel.cp = 4;
    l.knobs.cuda_graphs = false;
    l.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    l.knobs.recompute.modules = planner::kRecomputeMoeAct | planner::kRecomputeLayerNorm;
    v.push_back(l);
    // GB300 MXFP8: TP1 PP1 EP64 on 64 GPUs (SEGMENT=16), MBS 1, GBS 8192,
    // no recompute, the same graphs, A2A_OVERLAP=1; 1,055 TFLOP/s/GPU.
    RecipeCheck g = ModelZooQwen3Check(
        "modelzoo-qwen3-235b-gb300-mxfp8",
        "graphs attn+moe_router+moe_preprocess, HybridEP, EP overlap", "gb300-nvl72", 64, 4096,
        8192, planner::Precision::kMxfp8, 1, 1, 64, 1, 1055);
    g.knobs.overlap.ep_comm = true;
    v.push_back(g);
  }
  {
    // DeepSeek-V3 (with MTP) on 1,024 H100, FP8 blockwise (1x128
    // activations, 128x128 weights: priced as FP8, which the 25.09 table's
    // FP8-CS / blockwise pair on this layout measures alike, 338 / 330
    // TFLOP/s/GPU), DeepEP, TP2 EP64 PP8 VP4, MBS 1, GBS 8192, recompute
    // up_proj + mlp, layout "Et*3|(tt|)*29m|L" (3 layers first; the MTP and
    // the loss stages priced as one last stage without layers), 1F1B
    // overlap; no CUDA graphs (the optimization-workflow card's DeepSeek-V3
    // case study, which gives this run as 368 TFLOP/s/GPU, the figure used).
    RecipeCheck c = TrackerCheck(
        "tracker-dsv3-h100-fp8block",
        "FP8 blockwise (priced as FP8), DeepEP, EP overlap, no CUDA graphs, recompute "
        "mla_up_proj+mlp",
        "deepseek-v3", "h100-sxm", 1024, 8192, planner::Precision::kFp8, 2, 8, 4, 64, 1, 368);
    c.parallel.first_stage_layers = 3;
    c.parallel.last_stage_layers = 0;
    c.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    c.knobs.recompute.modules = planner::kRecomputeMlaUpProj | planner::kRecomputeMlp;
    c.knobs.overlap.ep_comm = true;
    c.not_modelled = "FP8 blockwise scaling (priced as FP8 current scaling)";
    v.push_back(c);
    // DeepSeek-V3 (with MTP) on 256 B200, BF16, DeepEP, TP1 EP32 PP8 VP4,
    // MBS 1, GBS 4096, recompute mla_up_proj + mlp + moe_act + layernorm;
    // ~520 TFLOP/s/GPU.
    RecipeCheck b = TrackerCheck(
        "tracker-dsv3-b200-bf16",
        "DeepEP, no CUDA graphs, no EP overlap, recompute mla_up_proj+mlp+moe_act+layernorm",
        "deepseek-v3", "b200", 256, 4096, planner::Precision::kBf16, 1, 8, 4, 32, 1, 520);
    b.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    b.knobs.recompute.modules = planner::kRecomputeMlaUpProj | planner::kRecomputeMlp |
                                planner::kRecomputeMoeAct | planner::kRecomputeLayerNorm;
    v.push_back(b);
    // DeepSeek-V3 (with MTP) on 256 B200, MXFP8, DeepEP 24 SMs, TP1 EP32
    // PP8 VP2, MBS 1, GBS 8192, 1F1B overlap; ~800 TFLOP/s/GPU. The card
    // lists no recompute; the recipe index's B200 recipe of this layout
    // (mlm-index-dsv3-b200) recomputes mla_up_proj + mlp and lays out
    // 4 + 14 x 4 + 1 layers, both taken from it.
    RecipeCheck x = TrackerCheck(
        "tracker-dsv3-b200-mxfp8",
        "DeepEP 24 SMs, EP overlap, no CUDA graphs, recompute mla_up_proj+mlp (the index "
        "recipe's)",
        "deepseek-v3", "b200", 256, 8192, planner::Precision::kMxfp8, 1, 8, 2, 32, 1, 800);
    x.parallel.first_stage_layers = 4;
    x.parallel.last_stage_layers = 1;
    x.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    x.knobs.recompute.modules = planner::kRecomputeMlaUpProj | planner::kRecomputeMlp;
    x.knobs.overlap.ep_comm = true;
    x.features.deepep_num_sms = 24;
    v.push_back(x);
  }
  {
    // DeepSeek-V3 (with MTP) on 256 GB200 / GB300, MXFP8, HybridEP, TP1
    // EP64 PP4 VP4, MBS 1, GBS 8192, 1F1B overlap, TE graphs attn +
    // moe_router + moe_preprocess; ~1,100 / ~1,200 TFLOP/s/GPU. No recompute
    // listed; the stage split is the recipe index's for this layout (4 + 14
    // x 4 + 1, mlm-index-dsv3-gb200 / -gb300).
    for (const auto& [id, cluster, tflops] :
         {std::tuple<const char*, const char*, double>{"tracker-dsv3-gb200", "gb200-nvl72", 1100},
          {"tracker-dsv3-gb300", "gb300-nvl72", 1200}}) {
      RecipeCheck c = TrackerCheck(id,
                                   "HybridEP, graphs attn+moe_router+moe_preprocess, EP overlap, "
                                   "no recompute",
                                   "deepseek-v3", cluster, 256, 8192, planner::Precision::kMxfp8, 1,
                                   4, 4, 64, 1, tflops);
      c.parallel.first_stage_layers = 4;
      c.parallel.last_stage_layers = 1;
      c.knobs.cuda_graphs = true;
      c.knobs.overlap.ep_comm = true;
      c.features.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
      v.push_back(c);
    }
  }
  {
    // Qwen3-235B-A22B on 128 B200, BF16, DeepEP, TP2 EP16 PP4 VP12, MBS 2,
    // GBS 2048, 1F1B overlap; ~590 TFLOP/s/GPU. 94 layers with the
    // embedding and the loss counted: 2 per virtual stage, 1 on the first
    // and the last.
    RecipeCheck b = TrackerCheck("tracker-qwen3-235b-b200-bf16",
                                 "DeepEP, EP overlap, no CUDA graphs, no recompute",
                                 "qwen3-235b-a22b", "b200", 128, 2048,
                                 planner::Precision::kBf16, 2, 4, 12, 16, 2, 590);
    b.parallel.first_stage_layers = 1;
    b.parallel.last_stage_layers = 1;
    b.knobs.overlap.ep_comm = true;
    v.push_back(b);
    // Qwen3-235B-A22B on 128 GB200, BF16, HybridEP, TP1 EP32 PP4 VP12, MBS
    // 1, GBS 1024, TE graphs attn + moe_router + moe_preprocess; ~700
    // TFLOP/s/GPU.
    RecipeCheck g = TrackerCheck("tracker-qwen3-235b-gb200-bf16",
                                 "HybridEP, graphs attn+moe_router+moe_preprocess, no EP "
                                 "overlap, no recompute",
                                 "qwen3-235b-a22b", "gb200-nvl72", 128, 1024,
                                 planner::Precision::kBf16, 1, 4, 12, 32, 1, 700);
    g.parallel.first_stage_layers = 1;
    g.parallel.last_stage_layers = 1;
    g.knobs.cuda_graphs = true;
    g.features.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
    v.push_back(g);
    // Qwen3-30B-A3B on 32 H100, BF16, DeepEP, TP1 EP8 PP1 (expert-DP 4),
    // MBS 4, GBS 256, full recompute; ~210 TFLOP/s/GPU.
    RecipeCheck q = TrackerCheck("tracker-qwen3-30b-h100-32",
                                 "DeepEP, no CUDA graphs, no EP overlap, full recompute",
                                 "qwen3-30b-a3b", "h100-sxm", 32, 256, planner::Precision::kBf16,
                                 1, 1, 1, 8, 4, 210);
    q.knobs.recompute.mode = planner::RecomputeMode::kFull;
    v.push_back(q);
  }
  return v;
}

}  // namespace moetune::tests
