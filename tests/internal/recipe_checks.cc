#include "tests/internal/recipe_checks.h"

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
  c.not_modelled =
      "FP8 attention's own speed through cuDNN (fp8_dot_product_attention): priced as "
      "fused BF16 attention";
  c.measured_tokens_per_sec_per_gpu = measured;
  return c;
}

}  // namespace

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
    // 120B pre-training is a known issue (NVIDIA/cudnn-frontend issue 256)":
    // the cuDNN attention path regressed; 20,288 (GB300) and 18,304 (GB200).
    RecipeCheck a = GptOss("gpt-oss-120b-gb300-ep16-26.06.01", "gb300-nvl72", 16, "26.06.01",
                           20288);
    a.not_modelled = "the 26.06.01 cuDNN attention regression (cudnn-frontend issue 256)";
    v.push_back(a);
    RecipeCheck b = GptOss("gpt-oss-120b-gb200-ep64-26.06.01", "gb200-nvl72", 64, "26.06.01",
                           18304);
    b.not_modelled = a.not_modelled;
    v.push_back(b);
  }
  return v;
}

}  // namespace moetune::tests
