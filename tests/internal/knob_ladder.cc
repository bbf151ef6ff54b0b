#include "tests/internal/knob_ladder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace moetune::tests {

namespace planner = ::moetune::planner;

std::vector<LadderStep> DeepSeekV3Gb200Ladder() {
  // Baseline (section 1 of the source): MXFP8, grouped GEMM (multi-stream
  // cuBLAS), NCCL all-to-all dispatcher (DeepEP lacked MNNVL then), no CUDA
  // graphs, selective recompute of the dense layers' MLP and the MLA up
  // projection, DP grad-reduce/param-gather overlap, no EP A2A overlap; the
  // software without any of the section-2 optimizations (MegatronFeatures
  // off but the permute fusion, which the baseline had; the flex backend,
  // once used, DeepEP).
  planner::Knobs k;
  k.precision = planner::Precision::kMxfp8;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.ep_comm = false;
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMlaUpProj;
  // "BF16 optimizer states" (the reproduce guide's launch script:
  // --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
  // bf16, main grads fp32; with MXFP8 the step copies the shard's grads to
  // fp32 either way, so the state is priced the same).
  k.optimizer_states = planner::OptimizerStates::kBf16Moments;
  planner::MegatronFeatures f;
  f.mxfp8_fused_allocation = false;
  f.permute_fusion = true;  // the baseline had --moe-permute-fusion (guide 1, item 4.2)
  f.router_fusion = false;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
  f.graph_attn = true;
  f.graph_moe_router = true;
  f.graph_moe_preprocess = true;
  f.graph_shared_experts = false;
  f.cpu_numa_binding = false;
  f.fused_swizzle_pdl = false;
  f.quant_fused_norm = false;

  std::vector<LadderStep> steps;
  auto add = [&](const char* suffix, const char* name, const char* mapping, bool has_knob) {
    steps.push_back(
        {std::string("mlm-dsv3-gb200-opt-step") + suffix, name, k, f, mapping, has_knob});
  };
  add("00", "Baseline", "alltoall, no CUDA graphs, recompute mlp+mla_up_proj, no features", true);
  f.mxfp8_fused_allocation = true;
  add("01", "Fuse torch.zeros for scaling factor allocation & Permute kernel Optimization",
      "feature mxfp8_fused_allocation (the faster permute kernel, TE PR 1927, is not priced)",
      true);
  f.router_fusion = true;
  add("02", "Router fusion", "feature router_fusion (--moe-router-fusion): 72 -> 31 kernels",
      true);
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  add("03", "Enable DeepEP",
      "dispatcher alltoall -> fused_dedup, backend deepep (--moe-flex-dispatcher-backend)", true);
  // Guide 2.2.2: the FP8 output-discarding recompute lets linear_proj save
  // its BF16 input (re-quantized in backward), which frees the memory to
  // stop recomputing the MLA up projections ("although the MLA up
  // projection has a low computational density ... it also has serious CPU
  // overhead"), +44.7 TFLOPS. Priced: the up-projection re-run removed
  // (RecomputeSeconds: its GEMM share, RoPE / q-k-v assembly and the
  // checkpoint's restore copy; StaticHostSeconds: CheckpointWithoutOutput's
  // host calls, the re-run's ops and TE modules, its quantizations) and the
  // moe_act recompute added (its re-run and restore copy, fc2's
  // re-quantization, its checkpoint calls). linear_proj's own
  // re-quantization is not priced (no knob). The measured 1.079x needs
  // ~1.1 s less per step, ~2.1 ms per layer and micro-batch (64 x 8); the
  // model finds 0.21 s (0.14 s GPU, 0.07 s host: the up-projection's
  // 0.22 s less the moe_act recompute's 0.14 s added): its host price per
  // PyTorch op (kTorchCallHostS
  // 3 us, a light op 10.5 us unbound) is below what a Grace CPU shows (TE
  // issue 2053: 37 us for one torch Linear forward on GB200; the guide's
  // Figure 1 shows the CheckpointWithoutOutput range ~2 ms long on the
  // forward's CPU thread).
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMoeAct;
  add("04", "Remove up_proj recompute", "recompute mlp+mla_up_proj -> mlp+moe_act", true);
  k.cuda_graphs = true;
  add("05", "CUDA Graphs",
      "cuda_graphs on, scope attn moe_router moe_preprocess (--cuda-graph-scope)", true);
  // Guide 2.3 ends "the performance problem of DeepEP is beginning to
  // become a bottleneck, and we will have work to optimize it later"; the
  // only DeepEP MNNVL figure (2.2.1: dispatch ~400 GB/s, combine ~190 GB/s
  // with 24 SMs) is the untuned one, and neither the guide nor its
  // reproduce guide (which ends on HybridEP, --moe-hybridep-num-sms 32)
  // says what was tuned (SMs, chunk sizes) or what bandwidth it reached.
  // DeepEP's own README tables are intranode H800 / internode RDMA, not the
  // community MNNVL path. No figure to price it with, so no knob.
  // Priced as DeepEP given 32 SMs instead of 24 -- an assumption about
  // what was tuned (32 is the SM count the guide's final recipe gives the EP
  // library, --moe-hybridep-num-sms 32), with the bandwidth-vs-SMs figures
  // of DeepEP on GB200 at 24 ranks (DeepEP hybrid-ep branch,
  // Hybrid-EP_Implementation.md, commit 07eea0c): dispatch FP8 x 1.154,
  // combine x 1.266 over the guide's 400 / 190 GB/s.
  f.deepep_num_sms = 32;
  add("06", "Tune DeepEP",
      "feature deepep_num_sms 24 -> 32 (assumed: the guide does not say what was tuned), "
      "DeepEP GB200 bandwidth-vs-SMs table",
      true);
  f.cpu_numa_binding = true;
  add("07", "CPU-side optimization", "feature cpu_numa_binding (bindpcie)", true);
  f.fused_swizzle_pdl = true;
  add("08", "PDL for quantization kernels & Fuse MXFP8 swizzle scaling factor",
      "feature fused_swizzle_pdl", true);
  f.graph_shared_experts = true;
  add("09", "CUDA Graphs capture shared expert", "feature graph_shared_experts", true);
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
  add("10", "HybridEP", "backend deepep -> hybridep (--moe-flex-dispatcher-backend)", true);
  // Guide 2.4: "we're working on simplifying the host-side code of TE,
  // such as removing unnecessary checks, PyTorch APIs, and CUDA calls"; the
  // reproduce guide's TE is d2945c6 + PR 2146 ("[PyTorch] CPU Overhead
  // Micro-optimizations", motivated by TE issue 2053: a BF16 TE Linear
  // forward costs 99.7 us of CPU on GB200 vs 37.1 us for torch's) + PR
  // 2150. Neither PR publishes the per-op saving, so the step has no figure
  // to set a smaller host cost from.
  add("11", "CPU-side optimization",
      "no knob: TE PR 2146 (host micro-optimizations) publishes no per-op saving", false);
  f.quant_fused_norm = true;
  add("12", "Fuse quantization to normalization (cuDNN 9.14)", "feature quant_fused_norm",
      true);
  return steps;
}

StandaloneLadder Qwen3H100EpOverlapLadder() {
  StandaloneLadder l;
  l.title = "Qwen3-235B-A22B, 256 H100, TP2 PP8 VP4 EP32, BF16, DeepEP";
  l.source = "yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md (Cross-node EP)";
  l.model_preset = "qwen3-235b-a22b";
  l.cluster_preset = "h100-sxm";
  l.shape.gpus = 256;
  l.shape.seq_len = 4096;
  l.shape.global_batch = 2048;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 2, p.cp = 1, p.ep = 32, p.pp = 8, p.vp = 4, p.etp = 1, p.mbs = 1;
  planner::Knobs k;
  k.precision = planner::Precision::kBf16;
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  k.grouped_gemm = true;
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct;
  k.overlap.ep_comm = false;
  planner::MegatronFeatures f;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
  l.steps.push_back({"modelzoo-qwen3-235b-h100-ep32", "DeepEP baseline", k, f,
                     "ep_comm overlap off", true});
  k.overlap.ep_comm = true;
  l.steps.push_back({"modelzoo-qwen3-235b-h100-ep32-1f1b", "+1f1b overlap", k, f,
                     "overlap.ep_comm off -> on", true});
  l.measured_tflops = {245, 276};
  return l;
}

namespace {

// Qwen3-30B-A3B on 16 H100 as Megatron-Bridge's pretrain recipe sets it
// (src/megatron/bridge/perf_recipes/qwen/h100/qwen3_moe.py,
// qwen3_30b_a3b_pretrain_16gpu_h100_*: seq 4096, TP1 PP1 CP1 EP16, MBS1
// GBS1024, no recompute), BF16.
StandaloneLadder Qwen3A3bH100Job() {
  StandaloneLadder l;
  l.model_preset = "qwen3-30b-a3b";
  l.cluster_preset = "h100-sxm";
  l.shape.gpus = 16;
  l.shape.seq_len = 4096;
  l.shape.global_batch = 1024;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 1, p.cp = 1, p.ep = 16, p.pp = 1, p.vp = 1, p.etp = 1, p.mbs = 1;
  return l;
}

// What the Qwen3 MoE recipes here share (Bridge's and Megatron-LM's): BF16,
// grouped GEMM, no recompute, forced-balanced routing.
planner::Knobs Qwen3RecipeBaseKnobs() {
  planner::Knobs k;
  k.precision = planner::Precision::kBf16;
  k.grouped_gemm = true;
  k.recompute.mode = planner::RecomputeMode::kNone;
  k.recompute.modules = 0;
  k.moe_load_imbalance = 1.0;  // forced balance
  return k;
}

}  // namespace

StandaloneLadder Qwen3A3bH100HybridEpOverlapLadder() {
  StandaloneLadder l = Qwen3A3bH100Job();
  l.title = "Qwen3-30B-A3B, 16 H100, TP1 PP1 EP16, BF16, HybridEP, EP overlap";
  l.source =
      "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-expert-parallel-overlap/"
      "SKILL.md (HybridEP Production-Shape Benchmark, 2026-07-25)";
  l.generation = planner::StackGeneration::k2606;  // run 2026-07-25: 26.06 or later
  l.assumed = "recompute none (not stated; the recipe's)";
  planner::Knobs k = Qwen3RecipeBaseKnobs();
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  k.cuda_graphs = true;
  k.overlap.ep_comm = false;
  planner::MegatronFeatures f;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
  f.graph_attn = false;  // scopes moe_router + moe_preprocess only
  f.graph_moe_router = true;
  f.graph_moe_preprocess = true;
  f.graph_full_iteration = false;
  f.delay_wgrad_compute = false;  // "Delayed wgrad: disabled"
  l.steps.push_back({"bridge-qwen3-30b-h100-hybridep", "overlap off", k, f,
                     "hybridep, graphs moe_router+moe_preprocess, ep_comm overlap off", true});
  k.overlap.ep_comm = true;
  l.steps.push_back({"bridge-qwen3-30b-h100-hybridep-epov", "plain EP overlap on", k, f,
                     "overlap.ep_comm off -> on", true});
  l.measured_tflops = {244.039, 287.305};
  return l;
}

StandaloneLadder Qwen3A3bH100AllToAllOverlapLadder() {
  StandaloneLadder l = Qwen3A3bH100Job();
  l.title = "Qwen3-30B-A3B SFT, 16 H100, EP16, BF16, alltoall, no CUDA graphs, EP overlap";
  l.source =
      "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-expert-parallel-overlap/"
      "SKILL.md (Correctness-First alltoall Benchmark, 2026-05-18)";
  l.generation = planner::StackGeneration::k2602;  // run by 2026-05-18: before 26.06
  l.shape.objective = planner::Objective::kFinetune;
  l.assumed = "seq 4096, TP1 PP1 MBS1, recompute none (not stated; the pretrain recipe's)";
  planner::Knobs k = Qwen3RecipeBaseKnobs();
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.ep_comm = false;
  planner::MegatronFeatures f;
  f.permute_fusion = false;  // moe_permute_fusion=false in the run
  f.delay_wgrad_compute = false;  // comm_overlap.delay_wgrad_compute=false
  l.steps.push_back({"bridge-qwen3-30b-h100-a2a", "no EP overlap", k, f,
                     "alltoall, no graphs, no permute fusion, ep_comm overlap off", true});
  k.overlap.ep_comm = true;
  l.steps.push_back({"bridge-qwen3-30b-h100-a2a-epov", "EP overlap", k, f,
                     "overlap.ep_comm off -> on", true});
  f.delay_wgrad_compute = true;
  l.steps.push_back({"bridge-qwen3-30b-h100-a2a-epov-dw", "+ delay_wgrad_compute", k, f,
                     "feature delay_wgrad_compute", true});
  l.measured_step_s = {41.25, 31.31, 31.20};
  return l;
}

StandaloneLadder Qwen3A3bH100CudaGraphLadder() {
  StandaloneLadder l = Qwen3A3bH100Job();
  l.title = "Qwen3-30B-A3B, 16 H100, EP16, BF16, alltoall, CUDA graphs";
  l.source =
      "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-cuda-graphs/SKILL.md "
      "(pitfall 13, 2026-05-18)";
  l.generation = planner::StackGeneration::k2602;  // 2026-05-18: before 26.06
  l.assumed =
      "16 GPUs EP16 (the skill's 2026-05-17 smoke run), seq 4096 TP1 PP1 MBS1 GBS1024 "
      "recompute none (the pretrain recipe's), permute fusion off (as in that smoke run)";
  planner::Knobs k = Qwen3RecipeBaseKnobs();
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.ep_comm = false;
  planner::MegatronFeatures f;
  f.permute_fusion = false;
  f.graph_attn = true;
  f.graph_moe_router = true;
  f.graph_moe_preprocess = true;
  l.steps.push_back({"bridge-qwen3-30b-h100-eager", "eager", k, f, "alltoall, cuda_graphs off",
                     true});
  k.cuda_graphs = true;
  l.steps.push_back({"bridge-qwen3-30b-h100-graphs", "TE graphs attn+router+preprocess", k, f,
                     "cuda_graphs off -> on (scope attn moe_router moe_preprocess)", true});
  l.measured_step_s = {41.36, 42.00};
  return l;
}

std::vector<StandaloneLadder> Qwen3H100LongContextBalanceLadders() {
  struct Point {
    int seq_len, cp;
    double dropless_tflops, forced_tflops;
  };
  // The table's four rows (TFLOPS/GPU, dropless / forced balance).
  const Point points[] = {
      {16384, 1, 237, 295}, {32768, 2, 277, 335}, {65536, 4, 320, 368}, {131072, 8, 357, 389}};
  // The dropless runs' load imbalance is not published: they are priced
  // with the model's own natural routing (Routing::kNatural, the layout's
  // NaturalRoutingImbalance, what a plan gets by default: 1.155-1.159 here),
  // not a value pinned per ladder. Known gap: through the same mechanism
  // (the busiest rank's routed GEMMs and dispatch bytes) the measured gains
  // need ~1.75 at 16k, 32k and 128k (~1.35 at 64k). The runs load the
  // trained Qwen3-235B (run_235b.sh PRETRAIN=0, "finetune from
  // checkpoint"), whose router was balanced over the global batch
  // (Qiu et al., ACL 2025, "Demons in the Detail"; used in Qwen3), which
  // lets one domain's sequence load its experts unevenly; at MBS 1 a
  // micro-batch here is one 16k-128k sequence. The model's Gini (0.24, on
  // real text across many sequences) does not see that; no public figure
  // gives the per-micro-batch spread of such a router.
  std::vector<StandaloneLadder> out;
  for (const Point& pt : points) {
    StandaloneLadder l;
    l.title = "Qwen3-235B-A22B, 256 H100, seq " + std::to_string(pt.seq_len / 1024) +
              "k, TP4 CP" + std::to_string(pt.cp) +
              " PP8 VP4 EP8, BF16, DeepEP: dropless -> forced balance";
    l.source =
        "yanring/Megatron-MoE-ModelZoo@e8650517 best_practice/qwen3/readme.md (Long Context)";
    l.model_preset = "qwen3-235b-a22b";
    l.cluster_preset = "h100-sxm";
    l.generation = planner::StackGeneration::k2602;  // published 2025-12-16
    l.shape.gpus = 256;
    l.shape.seq_len = pt.seq_len;
    l.shape.global_batch = 256;
    planner::ParallelConfig& p = l.parallel;
    p.tp = 4, p.cp = pt.cp, p.ep = 8, p.pp = 8, p.vp = 4, p.etp = 1, p.mbs = 1;
    l.assumed =
        "MBS 1, no CUDA graphs (neither in the command); dropless priced as natural routing";
    planner::Knobs k;
    k.precision = planner::Precision::kBf16;
    k.dispatcher = planner::Dispatcher::kFusedDedup;
    k.grouped_gemm = true;
    k.cuda_graphs = false;
    k.overlap.ep_comm = false;  // A2A_OVERLAP=0
    k.recompute.mode = planner::RecomputeMode::kSelective;
    k.recompute.modules = planner::kRecomputeLayerNorm | planner::kRecomputeMoe;
    k.routing = planner::Routing::kNatural;
    k.moe_load_imbalance = 1.0;  // left to the routing
    planner::MegatronFeatures f;
    f.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
    const std::string tag = "modelzoo-qwen3-235b-h100-" + std::to_string(pt.seq_len / 1024) + "k";
    l.steps.push_back({tag + "-dropless", "dropless", k, f,
                       "routing natural (NaturalRoutingImbalance of the layout)", true});
    k.routing = planner::Routing::kBalanced;
    l.steps.push_back({tag + "-forced", "forced balance", k, f,
                       "routing natural -> balanced (imbalance 1)", true});
    l.measured_tflops = {pt.dropless_tflops, pt.forced_tflops};
    out.push_back(l);
  }
  return out;
}

namespace {

// The eager knobs of a Megatron-Bridge BF16 recipe on H100 as its skill
// cards ran it: NCCL all-to-all, grouped GEMM, no CUDA graphs, no TP / EP
// comm overlap, natural routing (force balancing off), no recompute, and the
// precision-aware optimizer's BF16 moments.
planner::Knobs EagerAllToAllBf16Knobs() {
  planner::Knobs k;
  k.precision = planner::Precision::kBf16;
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.grouped_gemm = true;
  k.cuda_graphs = false;
  k.overlap.tp_comm = false;
  k.overlap.ep_comm = false;
  k.routing = planner::Routing::kNatural;
  k.recompute.mode = planner::RecomputeMode::kNone;
  k.optimizer_states = planner::OptimizerStates::kBf16Moments;
  return k;
}

}  // namespace

std::vector<StandaloneLadder> MoonlightH100RecomputeLadders() {
  // The study's table: the control and five variants, each a separate
  // 20-step run changing only recompute_modules; mean step time (ms) over
  // iterations 11-20.
  struct Variant {
    const char* name;  // the recompute_modules list as the source writes it
    uint32_t modules;
    double step_ms;
  };
  const double control_ms = 457.18;
  const Variant variants[] = {
      {"core_attn", planner::kRecomputeCoreAttn, 474.80},
      {"mla_up_proj", planner::kRecomputeMlaUpProj, 480.89},
      {"mla_up_proj, mlp", planner::kRecomputeMlaUpProj | planner::kRecomputeMlp, 496.73},
      {"moe_act", planner::kRecomputeMoeAct, 466.26},
      {"layernorm, moe_act", planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct, 506.53},
  };
  std::vector<StandaloneLadder> out;
  for (const Variant& v : variants) {
    StandaloneLadder l;
    l.title = std::string("Moonlight-16B-A3B, 8 H100, TP2 PP1 EP8, BF16, GBS 4: recompute [] -> [") +
              v.name + "]";
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-activation-recompute/"
        "SKILL.md (Matched H100 Evidence: Moonlight 16B, 2026-08-12; card.yaml measured_results)";
    l.model_preset = "moonlight-16b-a3b";
    l.cluster_preset = "h100-sxm";
    l.generation = planner::StackGeneration::k2606;  // Bridge 600d069b8, MCore 24bad8e6 (Aug 2026)
    l.shape.gpus = 8;
    l.shape.seq_len = 4096;
    l.shape.global_batch = 4;
    planner::ParallelConfig& p = l.parallel;
    p.tp = 2, p.cp = 1, p.ep = 8, p.pp = 1, p.vp = 1, p.etp = 1, p.mbs = 1;
    l.assumed =
        "the recipe whose defaults the study's layout is (moonlight_16b_pretrain_8gpu_h100_bf16_"
        "config at 600d069b8: NCCL all-to-all, no CUDA graphs, no EP / TP comm overlap, router "
        "fusion off); mock data priced with natural routing (force balancing off)";
    // The recipe's precision-aware optimizer: BF16 exp_avg, exp_avg_sq and
    // main grads, fp32 master weights (moonlight_16b.py, opt_cfg).
    planner::Knobs k = EagerAllToAllBf16Knobs();
    planner::MegatronFeatures f;
    f.router_fusion = false;  // moe_router_fusion = False
    f.delay_wgrad_compute = false;
    const std::string tag = "bridge-moonlight-h100-recompute";
    l.steps.push_back({tag + "-control", "recompute_modules []", k, f, "recompute none", true});
    k.recompute.mode = planner::RecomputeMode::kSelective;
    k.recompute.modules = v.modules;
    l.steps.push_back({tag + "-" + planner::RecomputeModulesName(v.modules),
                       std::string("recompute_modules [") + v.name + "]", k, f,
                       "recompute none -> selective " + planner::RecomputeModulesName(v.modules),
                       true});
    l.measured_step_s = {control_ms / 1000, v.step_ms / 1000};
    out.push_back(l);
  }
  return out;
}

namespace {

// Megatron-LM examples/moe_recipes/README.md "Recipe Index" (dev branch,
// commit 9c5258f109, 2026-08-11; the same figures at e5ad09802d, PR 5289,
// 2026-06-15), column "Median TFLOP/s/GPU"; each recipe's YAML beside it
// gives the run. Common to the Qwen3 recipes: seq 4096, forced load
// balancing, flex dispatcher with the HybridEP backend, distributed
// optimizer, no recompute. A PR-only refresh (7146484607, 2026-07-09, not on
// dev) carries other figures for the same YAMLs (set "B": 504.2 / 480.3 /
// 598.1, 876.2 / 1208.3, 240.5 / 242.9); the dev figures are used. Where
// one recipe differs from the previous in more than one setting, the step
// names every difference and says which the model prices.
constexpr char kMoeRecipesSource[] =
    "NVIDIA/Megatron-LM@9c5258f109 (dev) examples/moe_recipes/README.md (Recipe Index, "
    "median TFLOP/s/GPU)";

planner::MegatronFeatures ScopedGraphFeatures() {
  planner::MegatronFeatures f;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
  f.graph_attn = true;  // TE graphs over attn + moe_router + moe_preprocess
  f.graph_moe_router = true;
  f.graph_moe_preprocess = true;
  f.graph_full_iteration = false;
  return f;
}

planner::Knobs RecipeIndexKnobs(planner::Precision precision, bool cuda_graphs, bool ep_overlap) {
  planner::Knobs k = Qwen3RecipeBaseKnobs();
  k.precision = precision;
  k.dispatcher = planner::Dispatcher::kFusedDedup;  // flex, HybridEP backend
  k.cuda_graphs = cuda_graphs;
  k.overlap.ep_comm = ep_overlap;
  return k;
}

// A recipe-index ladder's job: seq 4096, TP = PP = CP = ETP = 1 (every
// Qwen3 recipe of the index), the given GPUs, global batch, EP and MBS.
StandaloneLadder RecipeIndexLadder(const char* title, const char* model_preset,
                                   const char* cluster_preset, planner::StackGeneration generation,
                                   int gpus, int global_batch, int ep, int mbs) {
  StandaloneLadder l;
  l.title = title;
  l.source = kMoeRecipesSource;
  l.model_preset = model_preset;
  l.cluster_preset = cluster_preset;
  l.generation = generation;
  l.shape.gpus = gpus;
  l.shape.seq_len = 4096;
  l.shape.global_batch = global_batch;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 1, p.cp = 1, p.ep = ep, p.pp = 1, p.vp = 1, p.etp = 1, p.mbs = mbs;
  return l;
}

}  // namespace

StandaloneLadder Qwen3A3bGb200RecipeLadder() {
  // The first two recipes name pytorch:26.03 / TE 2.14, the third 26.04 /
  // TE 2.15: the 2026 software with full-iteration graphs (priced as the
  // 26.06 generation, as the MLPerf v6.0 anchors on 26.04 containers are).
  StandaloneLadder l = RecipeIndexLadder(
      "Qwen3-30B-A3B, 16 GB200, TP1 PP1 EP16, MBS4 GBS512, HybridEP, no EP overlap "
      "(recipe index)",
      "qwen3-30b-a3b", "gb200-nvl72", planner::StackGeneration::k2606, 16, 512, 16, 4);
  planner::MegatronFeatures f = ScopedGraphFeatures();
  planner::Knobs k = RecipeIndexKnobs(planner::Precision::kBf16, false, false);
  l.steps.push_back({"mlm-recipe-qwen3-30b-gb200-bf16", "BF16, no CUDA graphs", k, f,
                     "bf16, cuda_graphs off, ep_comm overlap off", true});
  k.precision = planner::Precision::kMxfp8;
  k.cuda_graphs = true;
  l.steps.push_back({"mlm-recipe-qwen3-30b-gb200-mxfp8-cg", "MXFP8 + TE graphs (two changes)", k,
                     f, "precision bf16 -> mxfp8 and cuda_graphs on (attn moe_router moe_preprocess)",
                     true});
  f.graph_full_iteration = true;
  l.steps.push_back({"mlm-recipe-qwen3-30b-gb200-fullcg", "paged stash + full-iteration graphs", k,
                     f,
                     "feature graph_full_iteration (paged stash, capacity factor 1.5; the op "
                     "fuser's CuTeDSL fused grouped MLP is not priced)",
                     true});
  l.measured_tflops = {528, 514, 646.8};
  return l;
}

StandaloneLadder Qwen3A22bGb200RecipeLadder() {
  StandaloneLadder l = RecipeIndexLadder(
      "Qwen3-235B-A22B, 128 GB200, TP1 PP1 EP64, MBS1 GBS8192, MXFP8, HybridEP, EP overlap "
      "(recipe index)",
      "qwen3-235b-a22b", "gb200-nvl72", planner::StackGeneration::k2606,  // as the 30B ladder
      128, 8192, 64, 1);
  planner::MegatronFeatures f = ScopedGraphFeatures();
  planner::Knobs k = RecipeIndexKnobs(planner::Precision::kMxfp8, true, true);
  // Both YAMLs: use_precision_aware_optimizer, exp_avg / exp_avg_sq bf16
  // (main grads fp32: the MXFP8 step copies them either way).
  k.optimizer_states = planner::OptimizerStates::kBf16Moments;
  l.steps.push_back({"mlm-recipe-qwen3-235b-gb200-partialcg", "TE graphs (partial)", k, f,
                     "mxfp8, graphs attn moe_router moe_preprocess, ep_comm overlap on, BF16 "
                     "Adam moments (MXFP8 param gather not priced)",
                     true});
  f.graph_full_iteration = true;
  l.steps.push_back({"mlm-recipe-qwen3-235b-gb200-fullcg", "paged stash + full-iteration graphs",
                     k, f,
                     "feature graph_full_iteration (paged stash, capacity factor 1.2; the CuTeDSL "
                     "fused grouped MLP is not priced)",
                     true});
  l.measured_tflops = {1018, 1159.5};
  return l;
}

StandaloneLadder Qwen3A3bH100RecipeLadder() {
  StandaloneLadder l = RecipeIndexLadder(
      "Qwen3-30B-A3B, 32 H100, TP1 PP1 EP8, MBS1 GBS256, HybridEP (recipe index)",
      "qwen3-30b-a3b", "h100-sxm",
      planner::StackGeneration::k2602,  // pytorch:26.03 recipes, scoped graphs
      32, 256, 8, 1);
  const planner::MegatronFeatures f = ScopedGraphFeatures();
  planner::Knobs k = RecipeIndexKnobs(planner::Precision::kBf16, false, false);
  l.steps.push_back({"mlm-recipe-qwen3-30b-h100-bf16", "BF16, no CUDA graphs", k, f,
                     "bf16, cuda_graphs off", true});
  k.precision = planner::Precision::kFp8;
  k.cuda_graphs = true;
  // fp8_32GPU_TP1PP1EP8.yaml: use_precision_aware_optimizer with bf16
  // exp_avg / exp_avg_sq (the BF16 recipe has none).
  k.optimizer_states = planner::OptimizerStates::kBf16Moments;
  l.steps.push_back({"mlm-recipe-qwen3-30b-h100-fp8-cg",
                     "FP8 blockwise + TE graphs + BF16 Adam moments (three changes)", k, f,
                     "precision bf16 -> fp8, cuda_graphs on (attn moe_router moe_preprocess), "
                     "optimizer_states fp32 -> bf16; FP8 param gather not priced",
                     true});
  l.measured_tflops = {234.1, 232.4};
  return l;
}

StandaloneLadder Dsv3Gb200FullIterationLadder() {
  StandaloneLadder l;
  l.title =
      "DeepSeek-V3, 256 GB200, TP1 PP4 VP4 EP64, MBS1 GBS4096, MXFP8, HybridEP: scoped graphs "
      "-> full-iteration graphs with activation offload or recompute";
  l.source =
      "NVIDIA-NeMo/Megatron-Bridge pull request 4226 (merged 2026-06-10, commit 567d02442), "
      "'Measured impact' table (steady-state iterations 14-19)";
  l.model_preset = "deepseek-v3";
  l.cluster_preset = "gb200-nvl72";
  l.generation = planner::StackGeneration::k2606;  // nemo:26.06 release candidates
  l.shape.gpus = 256;
  l.shape.seq_len = 4096;
  l.shape.global_batch = 4096;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 1, p.cp = 1, p.pp = 4, p.vp = 4, p.ep = 64, p.etp = 1, p.mbs = 1;
  // Bridge's (pp 4, vp 4) DeepSeek-V3 layout: embedding + 4 layers, 14
  // stages of 4, then one layer with MTP and the loss.
  p.first_stage_layers = 4;
  p.last_stage_layers = 1;
  l.assumed =
      "forced balancing and no TP comm overlap (the performance scripts' overrides); the two "
      "full-graph rows keep the shipped row's EP overlap, differing from it only in offload "
      "and recompute, as the table's labels say";
  // Before the PR: DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V2 (the FP8_MX alias
  // of it) -- TE graphs over attn, moe_router, moe_preprocess, no EP A2A
  // overlap, recompute mlp -- run with core_attn offloaded.
  planner::Knobs k;
  k.precision = planner::Precision::kMxfp8;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  k.cuda_graphs = true;
  k.overlap.tp_comm = false;
  k.overlap.ep_comm = false;
  k.moe_load_imbalance = 1.0;  // forced balance
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeMlp;
  k.offload_activations = true;
  k.offload_modules = planner::kOffloadCoreAttn;
  planner::MegatronFeatures f = ScopedGraphFeatures();
  l.steps.push_back({"bridge-pr4226-dsv3-gb200-partialcg",
                     "partial CG + core_attn offload + mlp recompute", k, f,
                     "graphs attn moe_router moe_preprocess, offload core_attn, recompute mlp, "
                     "ep_comm overlap off",
                     true});
  // The PR's recipe (FP8_MX_V1/V2): full-iteration graphs, EP A2A overlap,
  // the CuTeDSL fused grouped MLP (not priced); first measured with
  // core_attn and attn_proj offloaded and no recompute ...
  f.graph_full_iteration = true;
  k.overlap.ep_comm = true;
  k.recompute.mode = planner::RecomputeMode::kNone;
  k.recompute.modules = 0;
  k.offload_modules = planner::kOffloadCoreAttn | planner::kOffloadAttnProj;
  l.steps.push_back({"bridge-pr4226-dsv3-gb200-fullcg-offload",
                     "full CG + core_attn,attn_proj offload", k, f,
                     "feature graph_full_iteration, ep_comm overlap on, offload core_attn "
                     "attn_proj, no recompute (the CuTeDSL fused grouped MLP is not priced)",
                     true});
  // ... then as shipped: no offload, mla_up_proj recomputed.
  k.offload_activations = false;
  k.offload_modules = 0;
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeMlaUpProj;
  l.steps.push_back({"bridge-pr4226-dsv3-gb200-fullcg-recompute",
                     "full CG + mla_up_proj recompute (the recipe)", k, f,
                     "offload off, recompute mla_up_proj", true});
  l.measured_step_s = {13.89, 15.10, 12.94};
  return l;
}

// Megatron-Bridge's DeepSeek-V3 pipeline layouts
// (set_deepseek_v3_pipeline_model_parallel_layout in recipes/deepseek/
// deepseek_v3.py): 16 virtual stages ((16, 1), (8, 2), (4, 4)) are
// embedding + 4 layers, 14 stages of 4, then one layer with MTP and the
// loss; 8 ((8, 1), (4, 2)) are embedding + 8, 6 stages of 8, then 5 with MTP
// and the loss. TP 1, ETP 1, no context parallelism.
planner::ParallelConfig BridgeDsv3Layout(int pp, int vp, int ep, int mbs) {
  planner::ParallelConfig p;
  p.tp = 1, p.cp = 1, p.pp = pp, p.vp = vp, p.ep = ep, p.etp = 1;
  p.mbs = mbs;
  const bool sixteen = pp * vp == 16;
  p.first_stage_layers = sixteen ? 4 : 8;
  p.last_stage_layers = sixteen ? 1 : 5;
  return p;
}

// What Megatron-Bridge's MoE performance recipes set for every variant:
// grouped GEMM, forced balancing, no TP comm overlap, no EP A2A overlap
// (the ladders turn it on where a recipe sets moe_a2a_overlap); eager
// unless a variant sets cuda_graph_impl; selective recompute of
// `recompute_modules` (0: none).
planner::Knobs BridgeMoeRecipeKnobs(planner::Dispatcher dispatcher, bool cuda_graphs,
                                    uint32_t recompute_modules) {
  planner::Knobs k;
  k.grouped_gemm = true;
  k.dispatcher = dispatcher;
  k.cuda_graphs = cuda_graphs;
  k.overlap.tp_comm = false;
  k.overlap.ep_comm = false;
  k.moe_load_imbalance = 1.0;  // forced balance
  k.recompute.mode = recompute_modules == 0 ? planner::RecomputeMode::kNone
                                            : planner::RecomputeMode::kSelective;
  k.recompute.modules = recompute_modules;
  return k;
}

// The DeepSeek-V3 recipes' (deepseek_llm_pretrain.py
// set_deepseek_v3_common_configs and the workload base configs): recompute
// mla_up_proj.
planner::Knobs BridgeDsv3RecipeKnobs(planner::Dispatcher dispatcher, bool cuda_graphs) {
  return BridgeMoeRecipeKnobs(dispatcher, cuda_graphs, planner::kRecomputeMlaUpProj);
}

// A DeepSeek-V3 job on 256 GPUs of `cluster` at sequence 4,096: the
// ladders of Megatron-Bridge's DeepSeek-V3 recipe changes.
StandaloneLadder BridgeDsv3Job(const char* cluster, int global_batch,
                               planner::StackGeneration generation) {
  StandaloneLadder l;
  l.model_preset = "deepseek-v3";
  l.cluster_preset = cluster;
  l.generation = generation;
  l.shape.gpus = 256;
  l.shape.seq_len = 4096;
  l.shape.global_batch = global_batch;
  return l;
}

std::vector<StandaloneLadder> Dsv3B300RecipeUpdateLadders() {
  // Before the PR: DEEPSEEK_V3_PRETRAIN_CONFIG_B300_V2 (every precision's
  // V2 an alias of it): PP8 without interleaving, MBS 2, EP 8, HybridEP, TE
  // graphs over attn, moe_router, moe_preprocess, no EP A2A overlap,
  // recompute mla_up_proj; Bridge's (pp 8, vp 1) DeepSeek-V3 layout is
  // embedding + 8 layers, 6 stages of 8, then 5 layers with MTP and the loss.
  const planner::ParallelConfig before = BridgeDsv3Layout(8, 1, 8, 2);
  // After: PP8 x VP2 (embedding + 4 layers, 14 stages of 4, then one layer
  // with MTP and the loss).
  const planner::ParallelConfig after = BridgeDsv3Layout(8, 2, 8, 2);
  auto job = [&](const char* precision_name) {
    // June 2026 (26.06 release candidates).
    StandaloneLadder l = BridgeDsv3Job("b300", 4096, planner::StackGeneration::k2606);
    l.title = absl::StrCat("DeepSeek-V3, 256 B300, TP1 PP8 EP8, GBS4096, ", precision_name,
                           ": the June 2026 recipe update");
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge pull request 4458 (merged 2026-06-25, commit fe17cfef0), "
        "author's comment of 2026-06-25 (baseline / with changes, TFLOP/s/GPU)";
    l.parallel = before;
    l.assumed =
        "the comment's figures are the V2 recipes (GBS 4096: the MXFP8 baseline, 894.1, is the "
        "26.06 performance table's 920 for that layout, where the V1 layout measured ~800); "
        "forced balancing and no TP comm overlap (the performance scripts' overrides)";
    return l;
  };
  const planner::Knobs base = BridgeDsv3RecipeKnobs(planner::Dispatcher::kFusedDedup, true);
  const planner::MegatronFeatures scoped = ScopedGraphFeatures();
  // One precision's pair: the PR's baseline, then the layout `after` at
  // `mbs`, with the knobs and features the PR changed for that precision.
  auto pair = [&](const char* name, const char* id, planner::Precision precision,
                  const char* after_name, const char* mapping, bool full_iteration,
                  int mbs_after, double tflops_before, double tflops_after) {
    StandaloneLadder l = job(name);
    planner::Knobs k = base;
    k.precision = precision;
    l.steps.push_back({absl::StrCat("bridge-pr4458-dsv3-b300-", id, "-before"),
                       "PP8 MBS2, TE graphs", k, scoped,
                       "pp 8, vp 1, mbs 2, TE graphs, recompute mla_up_proj", true});
    planner::MegatronFeatures f = scoped;
    f.graph_full_iteration = full_iteration;
    k.overlap.ep_comm = full_iteration;  // the MXFP8 recipe turns both on
    planner::ParallelConfig p = after;
    p.mbs = mbs_after;
    l.steps.push_back({absl::StrCat("bridge-pr4458-dsv3-b300-", id, "-after"), after_name, k, f,
                       mapping, true, p});
    l.measured_tflops = {tflops_before, tflops_after};
    return l;
  };
  return {
      pair("BF16", "bf16", planner::Precision::kBf16, "PP8 VP2 MBS1",
           "layout: vp 1 -> 2, mbs 2 -> 1", false, 1, 785.3, 842.48),
      // The same layout change with full-iteration graphs, EP A2A overlap,
      // the CuTeDSL fused grouped MLP, FP8 dot-product attention and FP8
      // output projection.
      pair("MXFP8", "mxfp8", planner::Precision::kMxfp8,
           "PP8 VP2 MBS1, full-iteration graphs, EP overlap",
           "layout vp 1 -> 2, mbs 2 -> 1; feature graph_full_iteration, ep_comm overlap on (FP8 "
           "attention, FP8 output projection and the CuTeDSL fused grouped MLP are not priced)",
           true, 1, 894.1, 1161.4),
      pair("NVFP4", "nvfp4", planner::Precision::kNvfp4, "PP8 VP2 MBS2", "layout: vp 1 -> 2",
           false, 2, 982.6, 1097.11),
  };
}

std::vector<StandaloneLadder> Dsv3B200EpUpdateLadders() {
  // DEEPSEEK_V3_PRETRAIN_CONFIG_B200 before and after the PR
  // (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py):
  // PP16 without interleaving, Bridge's (16, 1) DeepSeek-V3 layout
  // (embedding + 4 layers, 14 stages of 4, then one layer with MTP and the
  // loss), recompute mla_up_proj, moe_a2a_overlap False; no cuda_graph_impl
  // (none), moe_router_fusion and moe_permute_fusion on, forced balancing
  // (deepseek_llm_pretrain.py set_deepseek_v3_common_configs).
  const planner::ParallelConfig before = BridgeDsv3Layout(16, 1, 8, 1);
  const planner::ParallelConfig after = BridgeDsv3Layout(16, 1, 16, 1);
  const planner::Knobs base = BridgeDsv3RecipeKnobs(planner::Dispatcher::kAllToAll, false);
  planner::MegatronFeatures f;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
  f.deepep_num_sms = 20;  // Megatron's default: the recipe sets none
  auto ladder = [&](const char* name, const char* id, planner::Precision precision,
                    double tflops_before, double tflops_after) {
    // 25.11-era software: the oldest generation described.
    StandaloneLadder l = BridgeDsv3Job("b200", 2048, planner::StackGeneration::k2602);
    l.title = absl::StrCat("DeepSeek-V3, 256 B200, TP1 PP16, GBS2048, ", name,
                           ": EP 8 all-to-all -> EP 16 DeepEP");
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge pull request 1869 (merged 2026-01-09, commit 1fd34b18c), "
        "description (25.11 tracker / updated config, TFLOP/s/GPU)";
    l.parallel = before;
    l.assumed =
        "the updated config measured on the tracker's software (the description compares it "
        "with the 25.11 tracker); priced as generation 26.02";
    planner::Knobs k = base;
    k.precision = precision;
    l.steps.push_back({absl::StrCat("bridge-pr1869-dsv3-b200-", id, "-before"),
                       "EP8, NCCL all-to-all (25.11 tracker)", k, f,
                       "ep 8, dispatcher alltoall", true});
    k.dispatcher = planner::Dispatcher::kFusedDedup;
    l.steps.push_back({absl::StrCat("bridge-pr1869-dsv3-b200-", id, "-after"), "EP16, DeepEP", k,
                       f, "layout ep 8 -> 16; dispatcher alltoall -> fused_dedup (DeepEP)", true,
                       after});
    l.measured_tflops = {tflops_before, tflops_after};
    return l;
  };
  return {ladder("BF16", "bf16", planner::Precision::kBf16, 532, 575),
          ladder("MXFP8", "mxfp8", planner::Precision::kMxfp8, 557, 635)};
}

std::vector<StandaloneLadder> GptOssGb200DispatcherLadders() {
  // GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2 at the PR's parent
  // (scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py):
  // the V1 GB200 preset (EP64, MBS4, recompute_modules layernorm + moe_act,
  // no cuda_graph_impl) at GBS 1280 with moe_a2a_overlap True and
  // moe_flex_dispatcher_backend "hybridep"; the PR deletes the backend, so
  // the provider's NCCL all-to-all runs. FP8_MX_V2 is the same preset.
  planner::ParallelConfig layout;
  layout.tp = 1, layout.cp = 1, layout.pp = 1, layout.vp = 1, layout.ep = 64, layout.etp = 1;
  layout.mbs = 4;
  planner::Knobs base =
      BridgeMoeRecipeKnobs(planner::Dispatcher::kFusedDedup, false,
                           planner::kRecomputeLayerNorm | planner::kRecomputeMoeAct);
  base.overlap.ep_comm = true;
  planner::MegatronFeatures f;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
  auto ladder = [&](const char* name, const char* id, planner::Precision precision,
                    double tflops_before, double tflops_after) {
    StandaloneLadder l;
    l.title = absl::StrCat("GPT-OSS-120B, 64 GB200, TP1 PP1 EP64, MBS4 GBS1280, ", name,
                           ": HybridEP -> NCCL all-to-all");
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge pull request 3561 (merged 2026-04-29, commit 1513a1026), "
        "description (TFLOP/s/GPU)";
    l.model_preset = "gpt-oss-120b";
    l.cluster_preset = "gb200-nvl72";
    l.generation = planner::StackGeneration::k2602;  // April 2026: 26.02 - 26.04.x
    l.shape.gpus = 64;
    l.shape.seq_len = 4096;
    l.shape.global_batch = 1280;
    l.parallel = layout;
    planner::Knobs k = base;
    k.precision = precision;
    l.steps.push_back({absl::StrCat("bridge-pr3561-gpt-oss-gb200-", id, "-before"), "HybridEP",
                       k, f, "dispatcher fused_dedup (HybridEP), ep_comm overlap on, eager",
                       true});
    k.dispatcher = planner::Dispatcher::kAllToAll;
    l.steps.push_back({absl::StrCat("bridge-pr3561-gpt-oss-gb200-", id, "-after"),
                       "NCCL all-to-all", k, f, "dispatcher fused_dedup -> alltoall", true});
    // The description's TFLOP/s count Megatron-Bridge's 26.x GPT-OSS FLOPs
    // per token, not moetune's (FlopsPerToken; Bridge's differ for the
    // sliding-window layers): converted to step times with the 26.04
    // table's own ratio for this recipe, 433 TFLOP/s at 15,938 tokens/s/GPU
    // (runs.json mbridge-26.04-...-GB200-GPT_OSS_120B-64g-BF16).
    constexpr double kBridgeFlopsPerToken = 433e12 / 15938;
    const double tokens_per_gpu = double(l.shape.global_batch) * l.shape.seq_len / l.shape.gpus;
    for (double tflops : {tflops_before, tflops_after}) {
      l.measured_step_s.push_back(tokens_per_gpu / (tflops * 1e12 / kBridgeFlopsPerToken));
    }
    l.assumed =
        "step times from the description's TFLOP/s at Bridge's 26.04 GPT-OSS FLOPs per token "
        "(433 TFLOP/s at 15,938 tokens/s/GPU in the 26.04 table); priced as generation 26.02";
    return l;
  };
  return {ladder("BF16", "bf16", planner::Precision::kBf16, 406.6, 423.6),
          ladder("MXFP8", "mxfp8", planner::Precision::kMxfp8, 431.0, 438.5)};
}

std::vector<StandaloneLadder> Qwen3A22bB200OverlapOffLadders() {
  // QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_{BF16,FP8_CS} before the PR
  // (scripts/performance/configs/qwen/qwen3_workload_base_configs.py): 64
  // GPUs, PP8 VP4, EP8, GBS 1024, moe_a2a_overlap True; no flex backend (the
  // Qwen3 provider's NCCL all-to-all, permute fusion, grouped GEMM), no
  // cuda_graph_impl, recompute none, forced balancing (qwen3_llm_pretrain.py
  // set_qwen3_common_configs). The embedding and the loss count as layers
  // in the split (qwen3_235b_a22b_pretrain_config): 96 / 32 = 3 per virtual
  // stage, 2 on the first and the last; without interleaving 96 / 8 = 12,
  // 11 on the first and the last.
  planner::ParallelConfig before;
  before.tp = 1, before.cp = 1, before.pp = 8, before.vp = 4, before.ep = 8, before.etp = 1;
  before.mbs = 1;
  before.first_stage_layers = 2;
  before.last_stage_layers = 2;
  planner::ParallelConfig no_vp = before;
  no_vp.vp = 1;
  no_vp.first_stage_layers = 11;
  no_vp.last_stage_layers = 11;
  planner::Knobs base = BridgeMoeRecipeKnobs(planner::Dispatcher::kAllToAll, false, 0);
  base.overlap.ep_comm = true;
  planner::MegatronFeatures f;
  f.delay_wgrad_compute = true;  // Bridge's moe_a2a_overlap turns it on with the overlap
  auto ladder = [&](const char* name, const char* id, planner::Precision precision,
                    const char* after_name, const char* mapping, bool drop_vp, double s_before,
                    double s_after) {
    StandaloneLadder l;
    l.title = absl::StrCat("Qwen3-235B-A22B, 64 B200, TP1 PP8 VP4 EP8, GBS1024, ", name,
                           ": the EP A2A overlap off");
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge pull request 1760 (merged 2026-01-09, commit a6e92de5f), "
        "description (step time before / after)";
    l.model_preset = "qwen3-235b-a22b";
    l.cluster_preset = "b200";
    l.generation = planner::StackGeneration::k2602;  // December 2025 software: the oldest
    l.shape.gpus = 64;
    l.shape.seq_len = 4096;
    l.shape.global_batch = 1024;
    l.parallel = before;
    l.assumed = "the step times are the V1 recipes' (64 GPUs, GBS 1024); priced as generation 26.02";
    planner::Knobs k = base;
    k.precision = precision;
    l.steps.push_back({absl::StrCat("bridge-pr1760-qwen3-235b-b200-", id, "-before"),
                       "EP A2A overlap on", k, f, "ep_comm overlap on, delayed wgrad", true});
    k.overlap.ep_comm = false;
    planner::MegatronFeatures g = f;
    g.delay_wgrad_compute = false;
    l.steps.push_back({absl::StrCat("bridge-pr1760-qwen3-235b-b200-", id, "-after"), after_name, k,
                       g, mapping, true,
                       drop_vp ? std::optional<planner::ParallelConfig>(no_vp) : std::nullopt});
    l.measured_step_s = {s_before, s_after};
    return l;
  };
  return {ladder("BF16", "bf16", planner::Precision::kBf16, "EP A2A overlap off",
                 "ep_comm overlap on -> off (the CPU overhead the PR names is not priced)", false,
                 17.2, 16.0),
          ladder("MXFP8", "mxfp8", planner::Precision::kMxfp8, "EP A2A overlap off, PP8 without VP",
                 "ep_comm overlap on -> off (its CPU overhead not priced); layout vp 4 -> 1", true,
                 20.1, 16.9)};
}

std::vector<StandaloneLadder> Dsv3B300GraphsMbsLadders() {
  // DEEPSEEK_V3_PRETRAIN_CONFIG_B300_V2 before the PR: V1 (PP16, EP8,
  // HybridEP, recompute mla_up_proj, moe_a2a_overlap False, no
  // cuda_graph_impl) at GBS 4096; its BF16 variant at PP8 without
  // interleaving. After: PP8, MBS 2, TE graphs over attn, moe_router,
  // moe_preprocess for every precision. Bridge's DeepSeek-V3 layouts: (16,
  // 1) embedding + 4 layers, 14 stages of 4, one layer with MTP and the
  // loss; (8, 1) embedding + 8, 6 stages of 8, 5 with MTP and the loss.
  const planner::ParallelConfig pp16 = BridgeDsv3Layout(16, 1, 8, 1);
  const planner::ParallelConfig pp8 = BridgeDsv3Layout(8, 1, 8, 1);
  const planner::ParallelConfig pp8_mbs2 = BridgeDsv3Layout(8, 1, 8, 2);
  const planner::Knobs base = BridgeDsv3RecipeKnobs(planner::Dispatcher::kFusedDedup, false);
  const planner::MegatronFeatures scoped = ScopedGraphFeatures();  // HybridEP backend
  auto ladder = [&](const char* name, const char* id, planner::Precision precision,
                    const planner::ParallelConfig& before, const char* mapping,
                    double tflops_before, double tflops_after) {
    // April 2026 (26.04.01).
    StandaloneLadder l = BridgeDsv3Job("b300", 4096, planner::StackGeneration::k2602);
    l.title = absl::StrCat("DeepSeek-V3, 256 B300, EP8, GBS4096, ", name,
                           ": MBS 2 and scoped CUDA graphs (April 2026)");
    l.source =
        "NVIDIA-NeMo/Megatron-Bridge pull request 3549 (merged 2026-04-29, commit 7e29b8be2), "
        "table in issue 3385 (baseline / with changes, TFLOP/s/GPU)";
    l.parallel = before;
    l.assumed =
        "the V2 recipes (GBS 4096); the table's FP8 row is the MXFP8 recipe (FP8_MX aliases the "
        "FP8_CS config; 894.58 is pull request 4458's MXFP8 baseline, 894.1); PCT binding (host "
        "CPU affinity) turned off in the same change, not priced";
    planner::Knobs k = base;
    k.precision = precision;
    l.steps.push_back({absl::StrCat("bridge-pr3549-dsv3-b300-", id, "-before"),
                       before.pp == 16 ? "PP16 MBS1, no CUDA graphs" : "PP8 MBS1, no CUDA graphs",
                       k, scoped, "no graphs, mbs 1", true});
    k.cuda_graphs = true;
    l.steps.push_back({absl::StrCat("bridge-pr3549-dsv3-b300-", id, "-after"),
                       "PP8 MBS2, TE graphs attn+moe_router+moe_preprocess", k, scoped, mapping,
                       true, pp8_mbs2});
    l.measured_tflops = {tflops_before, tflops_after};
    return l;
  };
  return {ladder("BF16", "bf16", planner::Precision::kBf16, pp8,
                 "mbs 1 -> 2; cuda_graphs off -> on (attn moe_router moe_preprocess)", 749.1,
                 770.03),
          ladder("MXFP8", "mxfp8", planner::Precision::kMxfp8, pp16,
                 "layout pp 16 -> 8, mbs 1 -> 2; cuda_graphs off -> on (attn moe_router "
                 "moe_preprocess)",
                 806, 894.58),
          ladder("NVFP4", "nvfp4", planner::Precision::kNvfp4, pp16,
                 "layout pp 16 -> 8, mbs 1 -> 2; cuda_graphs off -> on (attn moe_router "
                 "moe_preprocess)",
                 754.593, 982.35)};
}

StandaloneLadder Dsv3ProxyH100FullRecomputeLadder() {
  StandaloneLadder l;
  l.title = "DeepSeek-V3 cut to 14 layers, 64 H100, TP1 PP4 VP2 EP16, seq 2048, BF16, alltoall: "
            "no recompute -> full recompute";
  l.source =
      "NVIDIA/Megatron-LM pull request 6311 (merged to dev), benchmark table (median of 30 "
      "iterations, the first 5 dropped)";
  l.model_preset = "deepseek-v3";
  l.proxy_layers = 14;
  l.cluster_preset = "h100-sxm";
  l.generation = planner::StackGeneration::k2606;  // the dev branch of mid-2026
  l.shape.gpus = 64;
  l.shape.seq_len = 2048;
  l.shape.global_batch = 256;
  planner::ParallelConfig& p = l.parallel;
  // "Ett|(tt|)*6mL": 8 virtual stages over pp 4.
  p.tp = 1, p.cp = 1, p.pp = 4, p.vp = 2, p.ep = 16, p.etp = 1, p.mbs = 1;
  p.first_stage_layers = 2;
  p.last_stage_layers = 0;
  l.assumed =
      "the proxy keeps DeepSeek-V3's 3 leading dense layers; no CUDA graphs and forced "
      "balancing (a benchmark with the NCCL all-to-all dispatcher); DP overlap on";
  planner::Knobs k;
  k.precision = planner::Precision::kBf16;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.tp_comm = false;
  k.overlap.ep_comm = false;
  k.moe_load_imbalance = 1.0;
  k.recompute.mode = planner::RecomputeMode::kNone;
  k.recompute.modules = 0;
  planner::MegatronFeatures f;
  f.graph_attn = f.graph_moe_router = f.graph_moe_preprocess = false;
  f.graph_full_iteration = false;
  l.steps.push_back({"mlm-pr6311-dsv3-proxy-h100-norc", "no overlap, no recompute", k, f,
                     "alltoall, no graphs, no recompute", true});
  k.recompute.mode = planner::RecomputeMode::kFull;
  k.recompute.num_layers = 0;  // every layer, one per checkpoint
  l.steps.push_back({"mlm-pr6311-dsv3-proxy-h100-full", "full recompute (uniform, 1)", k, f,
                     "recompute full", true});
  l.measured_tflops = {225.1, 184.2};
  return l;
}

StandaloneLadder Qwen3A3bH100OptimizerOffloadLadder() {
  StandaloneLadder l;
  l.title = "Qwen3-30B-A3B, 16 H100, TP2 PP2 EP4, BF16: optimizer-state CPU offload 0 -> 25 -> "
            "50 -> 75 -> 100%, then the D2H/H2D overlap";
  l.source =
      "NVIDIA-NeMo/Megatron-Bridge@067f987d skills/nemo-mbridge-perf-cpu-offloading/card.yaml "
      "(validated 2026-03-30; measured_results, iter_ms per job)";
  l.model_preset = "qwen3-30b-a3b";
  l.cluster_preset = "h100-sxm";
  l.generation = planner::StackGeneration::k2602;  // validated 2026-03-30
  l.shape.gpus = 16;
  l.shape.seq_len = 4096;
  l.shape.global_batch = 8;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 2, p.cp = 1, p.pp = 2, p.vp = 1, p.ep = 4, p.etp = 1, p.mbs = 1;
  l.assumed =
      "seq 4096, GBS 8, MBS 1, ETP 1, NCCL all-to-all, no CUDA graphs, no EP / TP comm overlap, "
      "natural routing (the card gives only the layout); BF16 Adam moments (the precision-aware "
      "optimizer the offload needs: the card's 15.3 GB saved at 100% is the modelled shard's "
      "1.91e9 parameters x 8 B)";
  planner::Knobs k = EagerAllToAllBf16Knobs();
  planner::MegatronFeatures f;
  const std::string tag = "bridge-qwen3-30b-h100-optimizer-offload";
  l.steps.push_back({tag + "-0", "baseline", k, f, "no optimizer offload", true});
  for (int pct : {25, 50, 75, 100}) {
    const double before = k.optimizer_offload_fraction;
    k.optimizer_offload_fraction = pct / 100.0;
    l.steps.push_back({absl::StrCat(tag, "-", pct), absl::StrCat("optimizer_offload_", pct, "pct"),
                       k, f,
                       absl::StrCat("optimizer_offload_fraction ", before, " -> ",
                                    k.optimizer_offload_fraction),
                       true});
  }
  k.optimizer_offload_overlap = true;
  l.steps.push_back({tag + "-100-overlap", "optimizer_offload_100pct_overlap", k, f,
                     "optimizer_offload_overlap off -> on", true});
  l.measured_step_s = {0.996, 1.871, 2.484, 3.187, 4.189, 3.877};
  l.measured_allocated_gb = {47.2, 43.4, 39.6, 35.6, 32.0, 32.0};
  return l;
}

StandaloneLadder Qwen3SmallH100OptimizerOffloadLadder() {
  StandaloneLadder l;
  l.title = "Qwen3-0.6B, 1 H100, BF16: optimizer-state CPU offload 0 -> 50% -> 50% with the "
            "overlap -> 100% with the overlap";
  l.source =
      "NVIDIA-NeMo/RL pull request 3628 (merged, 2026-08-13), single-GPU Qwen3-0.6B "
      "microbenchmark table (mean step time, steps 11-100)";
  l.model_preset = "qwen3-0.6b";
  l.cluster_preset = "h100-sxm";
  l.generation = planner::StackGeneration::k2606;
  l.shape.gpus = 1;
  l.shape.seq_len = 4096;
  l.shape.global_batch = 4;
  planner::ParallelConfig& p = l.parallel;
  p.tp = 1, p.cp = 1, p.pp = 1, p.vp = 1, p.ep = 1, p.etp = 1, p.mbs = 1;
  l.assumed =
      "seq 4096, GBS 4, MBS 1 (the pull request gives no batch: compare the seconds each step "
      "adds, not the ratios), no CUDA graphs, no recompute, fp32 optimizer state (Megatron's "
      "default beside the precision-aware path the offload needs)";
  planner::Knobs k;
  k.precision = planner::Precision::kBf16;
  k.cuda_graphs = false;
  k.recompute.mode = planner::RecomputeMode::kNone;
  planner::MegatronFeatures f;
  const std::string tag = "nemo-rl-pr3628-qwen3-0.6b-h100";
  l.steps.push_back({tag + "-disabled", "Disabled", k, f, "no optimizer offload", true});
  k.optimizer_offload_fraction = 0.5;
  l.steps.push_back({tag + "-50", "50%, no overlap", k, f, "optimizer_offload_fraction 0 -> 0.5",
                     true});
  k.optimizer_offload_overlap = true;
  l.steps.push_back({tag + "-50-overlap", "50%, overlap", k, f,
                     "optimizer_offload_overlap off -> on", true});
  k.optimizer_offload_fraction = 1.0;
  l.steps.push_back({tag + "-100-overlap", "100%, overlap", k, f,
                     "optimizer_offload_fraction 0.5 -> 1", true});
  l.measured_step_s = {0.752, 1.187, 1.216, 1.678};
  return l;
}

absl::StatusOr<planner::ModelSpec> LadderModel(const StandaloneLadder& l) {
  absl::StatusOr<planner::ModelSpec> m = planner::LoadModelPreset(l.model_preset);
  if (!m.ok() || l.proxy_layers <= 0) return m;
  if (!m->sliding_window_layers.empty() || !m->moe_layer_pattern.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot cut ", l.model_preset, " to ", l.proxy_layers, " layers: it has per-layer patterns"));
  }
  if (l.proxy_layers > m->num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(l.model_preset, " has only ", m->num_layers,
                                                   " layers, not ", l.proxy_layers));
  }
  m->num_layers = l.proxy_layers;
  return m;
}

std::vector<StandaloneLadder> StandaloneLadders() {
  std::vector<StandaloneLadder> all = {Qwen3H100EpOverlapLadder(),
                                       Qwen3A3bH100HybridEpOverlapLadder(),
                                       Qwen3A3bH100AllToAllOverlapLadder(),
                                       Qwen3A3bH100CudaGraphLadder()};
  for (StandaloneLadder& l : Qwen3H100LongContextBalanceLadders()) all.push_back(std::move(l));
  all.push_back(Qwen3A3bGb200RecipeLadder());
  all.push_back(Qwen3A22bGb200RecipeLadder());
  all.push_back(Qwen3A3bH100RecipeLadder());
  for (StandaloneLadder& l : MoonlightH100RecomputeLadders()) all.push_back(std::move(l));
  all.push_back(Dsv3Gb200FullIterationLadder());
  for (StandaloneLadder& l : Dsv3B300RecipeUpdateLadders()) all.push_back(std::move(l));
  for (StandaloneLadder& l : Dsv3B200EpUpdateLadders()) all.push_back(std::move(l));
  for (StandaloneLadder& l : Qwen3A22bB200OverlapOffLadders()) all.push_back(std::move(l));
  for (StandaloneLadder& l : GptOssGb200DispatcherLadders()) all.push_back(std::move(l));
  for (StandaloneLadder& l : Dsv3B300GraphsMbsLadders()) all.push_back(std::move(l));
  all.push_back(Dsv3ProxyH100FullRecomputeLadder());
  all.push_back(Qwen3A3bH100OptimizerOffloadLadder());
  all.push_back(Qwen3SmallH100OptimizerOffloadLadder());
  return all;
}

std::vector<double> MeasuredThroughput(const StandaloneLadder& l) {
  if (!l.measured_tflops.empty()) return l.measured_tflops;
  std::vector<double> v;
  for (double s : l.measured_step_s) v.push_back(1.0 / s);
  return v;
}

LadderSummary SummarizeLadders(const std::vector<LadderGains>& ladders) {
  LadderSummary s;
  std::vector<double> errors;
  for (const LadderGains& g : ladders) {
    const size_t n = std::min(g.measured.size(), g.predicted.size());
    if (n < 2) continue;
    ++s.ladders;
    for (size_t i = 1; i < n; ++i) {
      ++s.steps;
      const bool measured_gain = g.measured[i] > 1.0;
      const bool predicted_gain = g.predicted[i] > 1.0 + 1e-9;
      s.signs_right += measured_gain == predicted_gain ? 1 : 0;
      errors.push_back(std::abs(g.predicted[i] / g.measured[i] - 1));
    }
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const size_t m = errors.size() / 2;
    s.median_abs_gain_error =
        errors.size() % 2 == 1 ? errors[m] : 0.5 * (errors[m - 1] + errors[m]);
  }
  return s;
}

std::vector<double> StepGains(const std::vector<double>& values) {
  std::vector<double> g;
  for (size_t i = 0; i < values.size(); ++i) {
    g.push_back(i == 0 ? 1.0 : values[i] / values[i - 1]);
  }
  return g;
}

}  // namespace moetune::tests
