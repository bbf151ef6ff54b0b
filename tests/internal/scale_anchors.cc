#include "tests/internal/scale_anchors.h"

#include <algorithm>

namespace moetune::tests {

namespace planner = ::moetune::planner;

namespace {

// What the four configs share. Every config_*_cg_fp4.sh sources, in this
// order, config_common.sh, config_common_fp4.sh, config_common_405b.sh and
// config_common_cg.sh (identical in the four implementation folders):
// - config_common_fp4.sh: FP4=True FP4_RECIPE=nvfp4 FP8=False (NVFP4
//   GEMMs, "vanilla" recipe: RHT, stochastic rounding and 2D quantization
//   disabled), FP8_PARAM_GATHER=False (BF16 parameter all-gather),
//   TP_COMM_OVERLAP=False ("TP overlap not supported yet").
//   NVTE_DPA_FP8_RECIPE=Float8CurrentScaling, but FP8_DPA is set only by
//   config_common_fp8attn.sh, which no config sources: attention in BF16.
// - config_common_cg.sh: FULL_CUDA_GRAPH=1 MCORE_CUDA_GRAPH=1, i.e.
//   conf/custom.yaml cuda_graph_scope 'full_iteration' (the whole
//   forward-backward schedule replayed as one graph);
//   OVERLAP_PARAM_GATHER_WITH_OPTIM_STEP=False.
// - config_common.sh: distributed optimizer, OVERLAP_GRAD_REDUCE and
//   OVERLAP_PARAM_GATHER True, ALIGN_PARAM_GATHER True, TP_PP_DP_MAPPING=True
//   (Megatron's rank order with DP outermost: a 64-GPU model replica
//   TP4 x CP2 x PP8 fills 16 of a rack's 18 trays, so the DP groups cross
//   racks over InfiniBand and PP stays on NVLink), NCCL_NVLS_ENABLE=0,
//   NCCL_MIN_CTAS 16 / MAX_CTAS 32 and per-communicator CTA limits
//   (conf/nccl/custom_communicator_cta.yaml: dp 1-8 CTAs),
//   NCCL_SHARP_GROUP_SIZE_THRESH=2, CUDA_DEVICE_MAX_CONNECTIONS=1;
//   pretrain.py: grad_reduce_in_fp32=False (BF16 gradient reduction),
//   check_for_nan_in_grad=False; no recompute is configured anywhere.
// - each config: MICRO_BATCH_SIZE=1, ASYM_PP_EMBED=True ASYM_PP_LOSS=True
//   (account_for_embedding/loss_in_pipeline_split: 126 layers + embedding +
//   loss over 64 virtual stages, so the first and last hold one transformer
//   layer each and the 62 others two).
constexpr char kCommonRecipe[] =
    "NVFP4 GEMMs, BF16 attention, full-iteration CUDA graphs, no TP comm overlap, "
    "DP overlap (dist. optimizer, BF16 grads), DP outermost (TP_PP_DP_MAPPING), no recompute, "
    "asym. PP embed/loss";
constexpr char kNotModelled[] =
    "NVFP4 'vanilla' recipe details, stragglers (the host's per-step work is the "
    "data-set constant step_host_s, not these runs' own)";

// What every anchor states the same way: where it is published, what it
// ran on, and its shape (sequence length, global batch, GPUs).
struct AnchorRun {
  const char* id;
  const char* system;
  const char* config;
  const char* cluster;
  int gpus;
  int gbs;
};
ScaleAnchor Published(const AnchorRun& run, const char* recipe, const char* not_modelled,
                      const char* model_preset, int seq_len) {
  ScaleAnchor a;
  a.id = run.id;
  a.system = run.system;
  a.config = run.config;
  a.recipe = recipe;
  a.not_modelled = not_modelled;
  a.model_preset = model_preset;
  a.cluster_preset = run.cluster;
  a.shape.gpus = run.gpus;
  a.shape.seq_len = seq_len;
  a.shape.global_batch = run.gbs;
  return a;
}

// What every Llama 3.1 405B MLPerf run of both rounds shares: PP8 VP8 CP2,
// micro-batch 1, one layer on the first and last virtual stage
// (ASYM_PP_EMBED / ASYM_PP_LOSS: 126 layers + embedding + loss over 64
// virtual stages), no recompute, DP and PP overlap, sequence 8,192; its
// NeMo container (25.01 - 25.09) is older than every generation the model
// describes, so it is priced as the oldest (26.02).
struct Llama405bKnobs {
  int tp = 4;
  bool dp_outermost = false;  // TP_PP_DP_MAPPING=True
  planner::Precision precision = planner::Precision::kFp8;
  bool tp_comm_overlap = false;
  bool cuda_graphs = false;
  bool graph_full_iteration = false;  // MegatronFeatures::graph_full_iteration
};
ScaleAnchor Llama405bRun(const AnchorRun& run, const char* recipe, const char* not_modelled,
                         const Llama405bKnobs& k, std::array<double, 3> medians,
                         std::array<int, 3> steps) {
  ScaleAnchor a = Published(run, recipe, not_modelled, "llama3.1-405b", 8192);
  a.parallel.tp = k.tp;
  a.parallel.pp = 8;
  a.parallel.vp = 8;
  a.parallel.cp = 2;
  a.parallel.mbs = 1;
  a.parallel.first_stage_layers = 1;
  a.parallel.last_stage_layers = 1;
  a.parallel.dp_outermost = k.dp_outermost;
  a.generation = planner::StackGeneration::k2602;
  a.knobs.precision = k.precision;
  a.knobs.recompute.mode = planner::RecomputeMode::kNone;
  a.knobs.cuda_graphs = k.cuda_graphs;
  a.knobs.overlap.tp_comm = k.tp_comm_overlap;
  a.knobs.overlap.dp_comm = true;
  a.knobs.overlap.pp_comm = true;
  a.graph_full_iteration = k.graph_full_iteration;
  a.file_median_step_s = medians;
  a.file_steps = steps;
  return a;
}

// A v5.1 run (NeMo 25.09): NVFP4, no TP overlap, CUDA graphs, DP outermost.
ScaleAnchor Anchor(const char* id, const char* system, const char* config, const char* cluster,
                   int gpus, int gbs, int tp, std::array<double, 3> medians,
                   std::array<int, 3> steps) {
  Llama405bKnobs k;
  k.tp = tp;
  k.dp_outermost = true;
  k.precision = planner::Precision::kNvfp4;
  k.cuda_graphs = true;
  return Llama405bRun({id, system, config, cluster, gpus, gbs}, kCommonRecipe, kNotModelled, k,
                      medians, steps);
}

}  // namespace

std::vector<ScaleAnchor> MlperfLlama405bAnchors() {
  std::vector<ScaleAnchor> v;
  // Tyche, 128 nodes x 4 GB200, 4x CX-7 400 Gb/s per node; MINIBS=144
  // (gradient_accumulation_steps 144 in the log), gbs 1152; MAX_STEPS=500.
  // result_0/1/2: 283, 283, 267 steps >= 5; medians 17.236673, 17.371391,
  // 17.259342 s.
  v.push_back(Anchor("mlperf-v5.1-nvidia-llama31-405b-tyche_ngpu512", "tyche_ngpu512_ngc25.09_nemo",
                     "config_GB200_128x4x144xtp4pp8cp2_cg_fp4.sh (NVTE_DPA_FP8_RECIPE=F16)",
                     "gb200-nvl72", 512, 1152, 4, {17.236673, 17.371391, 17.259342},
                     {283, 283, 267}));
  // Tyche-hsg, 640 nodes x 4 GB200; MINIBS=24, gbs 960; NCCL_NVLS_ENABLE=0
  // UB_SKIPMC=1 (repeated in the config). 335 steps >= 5 in each file;
  // medians 3.193958, 3.189833, 3.178533 s.
  v.push_back(Anchor("mlperf-v5.1-nvidia-llama31-405b-hsg_ngpu2560", "hsg_ngpu2560_ngc25.09_nemo",
                     "config_GB200_640x4x24xtp4pp8cp2_cg_fp4.sh", "gb200-nvl72", 2560, 960, 4,
                     {3.193958, 3.189833, 3.178533}, {335, 335, 335}));
  // Tyche-hsg, 1,280 nodes x 4 GB200; MINIBS=16, gbs 1280. 265, 250, 250
  // steps >= 5; medians 2.227329, 2.232120, 2.221999 s.
  v.push_back(Anchor("mlperf-v5.1-nvidia-llama31-405b-hsg_ngpu5120", "hsg_ngpu5120_ngc25.09_nemo",
                     "config_GB200_1280x4x16xtp4pp8cp2_cg_fp4.sh", "gb200-nvl72", 5120, 1280, 4,
                     {2.227329, 2.232120, 2.221999}, {265, 250, 250}));
  // Theia, 128 nodes x 4 GB300, 4x CX-8 800 Gb/s per node; TP2, MINIBS=72,
  // gbs 1152 (its log's submission_platform says "128xNVIDIA GB200"; the
  // system json says GB300). 283, 267, 283 steps >= 5; medians 13.139969,
  // 13.170620, 13.144703 s.
  v.push_back(Anchor("mlperf-v5.1-nvidia-llama31-405b-theia_ngpu512", "theia_ngpu512_ngc25.09_nemo",
                     "config_GB300_128x4x72xtp2pp8cp2_cg_fp4.sh (NVTE_DPA_FP8_RECIPE=F16)",
                     "gb300-nvl72", 512, 1152, 2, {13.139969, 13.170620, 13.144703},
                     {283, 267, 283}));
  return v;
}

namespace {

// What the nine DeepSeek-V3 configs share (config_*_mxfp8_full_cg.sh, each
// sourcing config_common.sh and config_common_mxfp8.sh; the GB200 and GB300
// files differ only in TP, recompute, MINIBS, node count and
// FP8_OUTPUT_PROJ): MXFP8, MICRO_BATCH_SIZE 1, PIPELINE_LAYOUT
// "Et*4|(t*4|)*14tmL" (16 virtual stages: the embedding and 4 layers, 14 x
// 4, then 1 layer, MTP and the loss), EP 32 over HybridEP inside the NVLink
// domain (NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=32, USE_MNNVL=1),
// CUDA_GRAPH_SCOPE=full_iteration with OPTIMIZER_CG, paged stashing
// (MOE_EXPERT_RANK_CAPACITY_FACTOR=4), the combined-1F1B EP overlap
// (OVERLAP_MOE_EXPERT_PARALLEL_COMM=True, DELAY_WGRAD_COMPUTE=True),
// cuTeDSL fused grouped MLP, distributed optimizer with
// overlap_grad_reduce / overlap_param_gather (conf/deepseekv3_671b.yaml),
// MOE_AUX_LOSS_COEFF=0.01, validation after every step (not in
// train_step_time). Sequence 4,096 (MODEL_TFLOP_PER_SAMPLE=1068).
// No TP communication overlap: pretrain.py starts from Megatron-Bridge's
// deepseek_v3_pretrain_config (recipes/deepseek/deepseek_v3.py aliases
// h100/deepseek_v3.py deepseek_v3_pretrain_1024gpu_h100_bf16_config, which
// sets CommOverlapConfig(tp_comm_overlap=False); Megatron-Bridge 067f987df,
// the newest tree to hand, not the 26.04 container's own), and its
// override_comm_overlap_config sets only the grad / param / MoE EP overlap
// flags; no config or conf/*.yaml names tp_comm_overlap. It matters only
// for the GB200 runs (TP2, sequence parallel): their attention and
// shared-expert all-gathers / reduce-scatters are exposed.
constexpr char kDsv3Recipe[] =
    "MXFP8, mbs 1, layout Et*4|(t*4|)*14tmL, EP32 HybridEP in the NVLink domain, no TP comm "
    "overlap, "
    "full-iteration CUDA graphs with paged stashing, combined-1F1B EP overlap, fused grouped "
    "MLP, dist. optimizer with DP overlap, real data (natural routing, aux loss 0.01)";
constexpr char kDsv3NotModelled[] =
    "paged stashing and the static expert-rank capacity (factor 4), cuTeDSL fused grouped MLP, "
    "delayed wgrad, FP8 dot-product attention (FP8_DPA=True: attention priced in BF16); the 26.04 "
    "containers carry MLPerf code of the 26.06 generation's features "
    "(priced as 26.06)";

ScaleAnchor Dsv3Anchor(const char* id, const char* system, const char* config, const char* cluster,
                       int gpus, int gbs, int tp, bool recompute_mlp, const char* steps,
                       std::vector<double> step_s) {
  ScaleAnchor a = Published({id, system, config, cluster, gpus, gbs}, kDsv3Recipe, kDsv3NotModelled,
                            "deepseek-v3", 4096);
  a.parallel.tp = tp;
  a.parallel.pp = 4;
  a.parallel.vp = 4;
  a.parallel.ep = 32;
  a.parallel.etp = 1;
  a.parallel.cp = 1;
  a.parallel.mbs = 1;
  a.parallel.first_stage_layers = 4;
  a.parallel.last_stage_layers = 1;
  a.generation = planner::StackGeneration::k2606;
  a.knobs.precision = planner::Precision::kMxfp8;
  if (recompute_mlp) {
    a.knobs.recompute.mode = planner::RecomputeMode::kSelective;
    a.knobs.recompute.modules = planner::kRecomputeMlp;
  }
  a.knobs.cuda_graphs = true;
  a.knobs.overlap.tp_comm = false;  // tp_comm_overlap=False (above)
  a.knobs.routing = planner::Routing::kNatural;
  a.graph_full_iteration = true;
  a.logged_steps = steps;
  a.logged_step_s = std::move(step_s);
  return a;
}

}  // namespace

std::vector<ScaleAnchor> MlperfDeepSeekV3Anchors() {
  std::vector<ScaleAnchor> v;
  // NVIDIA tyche-hsg, GB200 NVL72 (4x CX-7 400 Gb/s per tray), TP2:
  // MINIBS 240 / 60 / 32 / 16 sequences per replica (dp 64 / 256 / 512 /
  // 1,024), gbs 15,360 / 15,360 / 16,384 / 16,384. RECOMPUTE_MODULES=mlp.
  v.push_back(Dsv3Anchor("mlperf-v6.0-nvidia-dsv3-tyche-hsg_ngpu512",
                         "NVIDIA/tyche-hsg_ngpu512_ngc26.04_nemo",
                         "config_GB200_128x4x240xtp2pp4ep32cp1_mxfp8_full_cg.sh", "gb200-nvl72",
                         512, 15360, 2, true, "46-48", {30.801614, 30.844150, 30.851129}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-nvidia-dsv3-tyche-hsg_ngpu2048", "NVIDIA/tyche-hsg_ngpu2048_ngc26.04_nemo",
      "config_GB200_512x4x60xtp2pp4ep32cp1_mxfp8_full_cg.sh", "gb200-nvl72", 2048, 15360, 2, true,
      "41-49",
      {9.088526, 9.114146, 9.110689, 9.120389, 9.165825, 9.099661, 9.125830, 9.081060, 9.120667}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-nvidia-dsv3-tyche-hsg_ngpu4096", "NVIDIA/tyche-hsg_ngpu4096_ngc26.04_nemo",
      "config_GB200_1024x4x32xtp2pp4ep32cp1_mxfp8_full_cg.sh", "gb200-nvl72", 4096, 16384, 2, true,
      "39-47",
      {5.388578, 5.503003, 5.406223, 5.394182, 5.415643, 5.857264, 5.477013, 5.402908, 5.454241}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-nvidia-dsv3-tyche-hsg_ngpu8192", "NVIDIA/tyche-hsg_ngpu8192_ngc26.04_nemo",
      "config_GB200_2048x4x16xtp2pp4ep32cp1_mxfp8_full_cg.sh", "gb200-nvl72", 8192, 16384, 2, true,
      "39-45", {3.556683, 3.560832, 3.504990, 3.454798, 3.479092, 3.492455, 3.494889}));
  // GB300 NVL72 (4x CX-8 800 Gb/s per tray), TP1, no recompute,
  // FP8_OUTPUT_PROJ=True. NVIDIA theia: MINIBS 240 / 120 (dp 64 / 128),
  // gbs 15,360. CoreWeave (Spectrum-X Ethernet): MINIBS 32 / 16 / 8 (dp
  // 512 / 1,024 / 2,048), gbs 16,384; its 8,192-GPU config also halves
  // the paged stash's CPU buffer.
  v.push_back(Dsv3Anchor("mlperf-v6.0-nvidia-dsv3-theia_ngpu256",
                         "NVIDIA/theia_ngpu256_ngc26.04_nemo",
                         "config_GB300_64x4x240xtp1pp4ep32cp1_mxfp8_full_cg.sh", "gb300-nvl72", 256,
                         15360, 1, false, "42-50",
                         {39.109651, 38.936133, 39.011779, 39.042420, 39.157895, 39.027153,
                          38.952422, 38.957174, 38.930867}));
  v.push_back(Dsv3Anchor("mlperf-v6.0-nvidia-dsv3-theia_ngpu512",
                         "NVIDIA/theia_ngpu512_ngc26.04_nemo",
                         "config_GB300_128x4x120xtp1pp4ep32cp1_mxfp8_full_cg.sh", "gb300-nvl72",
                         512, 15360, 1, false, "42-50",
                         {20.076897, 20.057734, 19.986198, 19.869345, 20.077292, 19.925818,
                          19.942976, 19.950934, 19.911701}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-coreweave-dsv3-gb300_ngpu2048", "CoreWeave/CoreWeave_GB300_512x4",
      "config_GB300_512x4x32xtp1pp4ep32cp1_mxfp8_full_cg.sh", "gb300-nvl72", 2048, 16384, 1, false,
      "38-46",
      {6.263640, 6.086004, 6.073221, 6.174629, 6.778710, 6.299781, 6.156203, 6.310689, 6.082658}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-coreweave-dsv3-gb300_ngpu4096", "CoreWeave/CoreWeave_GB300_1024x4",
      "config_GB300_1024x4x16xtp1pp4ep32cp1_mxfp8_full_cg.sh", "gb300-nvl72", 4096, 16384, 1, false,
      "37-45",
      {3.072369, 3.014284, 3.165627, 2.984245, 3.029023, 3.087561, 3.102432, 3.228831, 3.013289}));
  v.push_back(Dsv3Anchor(
      "mlperf-v6.0-coreweave-dsv3-gb300_ngpu8192", "CoreWeave/CoreWeave_GB300_2048x4",
      "config_GB300_2048x4x8xtp1pp4ep32cp1_mxfp8_full_cg.sh", "gb300-nvl72", 8192, 16384, 1, false,
      "37-45",
      {1.828208, 1.854232, 1.871999, 1.669013, 1.728032, 1.752979, 1.807804, 1.712711, 1.672911}));
  return v;
}

namespace {

// What the twelve v5.0 configs share (config_*.sh sourcing config_common.sh,
// on GB200 also config_common_blackwell.sh and config_common_cg.sh;
// conf/custom.yaml turns the variables into NeMo's model config):
// - FP8=True with FP8_RECIPE "delayed" (config_common_blackwell.sh; the
//   custom.yaml default where a config sets none), amax history 1: per-tensor
//   FP8 GEMMs, attention in BF16 (no config sets FP8 dot-product
//   attention). GB200: FP8_PARAM_GATHER=True; H100: FP8_PARAMS=True.
// - TP_COMM_OVERLAP=True (userbuffers, conf/tp_overlap/<gpu>tp<tp>mbs1.yaml),
//   sequence parallel (SEQ_PARALLEL default True), CUDA_DEVICE_MAX_CONNECTIONS=1.
// - distributed optimizer, OVERLAP_GRAD_REDUCE / OVERLAP_PARAM_GATHER True,
//   grad_reduce_in_fp32=False (pretrain.py), DEFER_EMBEDDING_WGRAD_COMPUTE.
// - no recompute (ACT_CKPT_GRANULARITY unset: custom.yaml null).
// - ASYM_PP_EMBED / ASYM_PP_LOSS True: 126 layers + embedding + loss over
//   pp x vp = 64 virtual stages, one layer on the first and last.
// - GB200 only: FULL_CUDA_GRAPH=True (config_common_cg.sh, the whole
//   step in one graph) and, except tyche 256, TP_PP_DP_MAPPING=True (data
//   parallelism outermost). H100: no CUDA graphs, Megatron's default order.
constexpr char kV50Recipe[] =
    "FP8 GEMMs (delayed scaling), BF16 attention, TP comm overlap (userbuffers), DP overlap "
    "(dist. optimizer, BF16 grads), no recompute, asym. PP embed/loss; GB200: full-iteration "
    "CUDA graphs, DP outermost (not tyche 256); H100: eager";
constexpr char kV50NotModelled[] =
    "FP8 delayed scaling (priced as the model's per-tensor FP8), FP8 parameter gather / FP8 "
    "primary weights, deferred embedding wgrad; NeMo 25.01 / 25.04, older than every "
    "generation the model describes (priced as 26.02)";

// A v5.0 run: FP8 with TP overlap; full-iteration graphs on GB200 only.
ScaleAnchor V50Anchor(const AnchorRun& run, int tp, bool dp_outermost, bool full_graph,
                      std::array<double, 3> medians, std::array<int, 3> steps) {
  Llama405bKnobs k;
  k.tp = tp;
  k.dp_outermost = dp_outermost;
  k.precision = planner::Precision::kFp8;
  k.tp_comm_overlap = true;
  k.cuda_graphs = full_graph;
  k.graph_full_iteration = full_graph;
  return Llama405bRun(run, kV50Recipe, kV50NotModelled, k, medians, steps);
}

}  // namespace

std::vector<ScaleAnchor> MlperfV50Llama405bAnchors() {
  std::vector<ScaleAnchor> v;
  // NVIDIA tyche, GB200 NVL72 (submission_platform "64xNVIDIA GB200" /
  // "128xNVIDIA GB200"): MINIBS 112 at dp 4 and 8 (gbs 448, 896). The
  // 256-GPU config sets no TP_PP_DP_MAPPING.
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-tyche_ngpu256", "NVIDIA/tyche_ngpu256_ngc25.04_nemo",
       "config_GB200_64x4x112xtp4pp8cp2_cg.sh", "gb200-nvl72", 256, 448},
      4, false, true, {19.093639, 19.168979, 19.187069}, {614, 614, 614}));
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-tyche_ngpu512", "NVIDIA/tyche_ngpu512_ngc25.04_nemo",
       "config_GB200_128x4x112xtp4pp8cp2_cg_dplast.sh", "gb200-nvl72", 512, 896},
      4, true, true, {19.600581, 19.432199, 19.428184}, {308, 308, 308}));
  // IBM + CoreWeave carina, GB200 NVL72: MINIBS 112 / 48 / 48 / 40 / 32 at
  // dp 8 / 16 / 24 / 32 / 39. Its configs source config_common_blackwell.sh,
  // which the submission does not include: the FP8 recipe is custom.yaml's
  // default ("delayed").
  v.push_back(V50Anchor({"mlperf-v5.0-ibm-coreweave-llama31-405b-carina_ngpu512",
                         "IBM+CoreWeave+NVIDIA/carina_ngpu512_ngc25.04_nemo",
                         "config_GB200_128x4x112xtp4pp8cp2.sh", "gb200-nvl72", 512, 896},
                        4, true, true, {19.430387, 19.277966, 19.253330}, {313, 313, 313}));
  v.push_back(V50Anchor({"mlperf-v5.0-ibm-coreweave-llama31-405b-carina_ngpu1024",
                         "IBM+CoreWeave+NVIDIA/carina_ngpu1024_ngc25.04_nemo",
                         "config_GB200_256x4x48xtp4pp8cp2.sh", "gb200-nvl72", 1024, 768},
                        4, true, true, {8.448521, 8.451588, 8.445889}, {361, 361, 361}));
  v.push_back(V50Anchor({"mlperf-v5.0-ibm-coreweave-llama31-405b-carina_ngpu1536",
                         "IBM+CoreWeave+NVIDIA/carina_ngpu1536_ngc25.04_nemo",
                         "config_GB200_384x4x48xtp4pp8cp2.sh", "gb200-nvl72", 1536, 1152},
                        4, true, true, {8.490334, 8.498581, 8.524850}, {241, 282, 241}));
  v.push_back(V50Anchor({"mlperf-v5.0-ibm-coreweave-llama31-405b-carina_ngpu2048",
                         "IBM+CoreWeave+NVIDIA/carina_ngpu2048_ngc25.04_nemo",
                         "config_GB200_512x4x40xtp4pp8cp2.sh", "gb200-nvl72", 2048, 1280},
                        4, true, true, {7.151531, 7.158409, 7.177897}, {254, 254, 254}));
  v.push_back(V50Anchor({"mlperf-v5.0-ibm-coreweave-llama31-405b-carina_ngpu2496",
                         "IBM+CoreWeave+NVIDIA/carina_ngpu2496_ngc25.04_nemo",
                         "config_GB200_624x4x32xtp4pp8cp2.sh", "gb200-nvl72", 2496, 1248},
                        4, true, true, {5.822275, 5.819315, 5.835990}, {261, 261, 261}));
  // NVIDIA eos-dfw, DGX H100 ("<n>xNVIDIA HGX H100", 8 GPUs per node):
  // MINIBS 288 / 72 / 64 / 56 / 24 at dp 4 / 16 / 19 / 20 / 64.
  v.push_back(
      V50Anchor({"mlperf-v5.0-nvidia-llama31-405b-eos-dfw_n64", "NVIDIA/eos-dfw_n64_ngc25.01_nemo",
                 "config_DGXH100_64x8x288xtp8pp8cp2.sh", "h100-sxm", 512, 1152},
                8, false, false, {55.102684, 55.164993, 55.143326}, {241, 241, 241}));
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-eos-dfw_n256", "NVIDIA/eos-dfw_n256_ngc25.01_nemo",
       "config_DGXH100_256x8x72xtp8pp8cp2.sh", "h100-sxm", 2048, 1152},
      8, false, false, {14.206636, 14.226776, 14.221636}, {241, 282, 241}));
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-eos-dfw_n304", "NVIDIA/eos-dfw_n304_ngc25.01_nemo",
       "config_DGXH100_304x8x64xtp8pp8cp2.sh", "h100-sxm", 2432, 1216},
      8, false, false, {12.700290, 12.711573, 12.864081}, {268, 268, 268}));
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-eos-dfw_n320", "NVIDIA/eos-dfw_n320_ngc25.01_nemo",
       "config_DGXH100_320x8x56xtp8pp8cp2.sh", "h100-sxm", 2560, 1120},
      8, false, false, {11.184092, 11.172755, 11.165355}, {253, 253, 253}));
  v.push_back(V50Anchor(
      {"mlperf-v5.0-nvidia-llama31-405b-eos-dfw_n1024", "NVIDIA/eos-dfw_n1024_ngc25.01_nemo",
       "config_DGXH100_1024x8x24xtp8pp8cp2.sh", "h100-sxm", 8192, 1536},
      8, false, false, {5.181194, 5.177723, 5.175566}, {212, 212, 212}));
  return v;
}

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double MeasuredStepSeconds(const ScaleAnchor& a) {
  return a.logged_step_s.empty() ? MedianStepSeconds(a.file_median_step_s)
                                 : MedianOf(a.logged_step_s);
}

double MedianStepSeconds(const std::array<double, 3>& file_medians_s) {
  std::array<double, 3> s = file_medians_s;
  std::sort(s.begin(), s.end());
  return s[1];
}

double TokensPerStep(const planner::TrainingShape& shape) {
  return double(shape.global_batch) * shape.seq_len;
}

double StepTokensPerSecPerGpu(const planner::TrainingShape& shape, double step_s) {
  return TokensPerStep(shape) / step_s / shape.gpus;
}

int MicroBatchesPerReplica(const planner::TrainingShape& shape, const planner::ParallelConfig& p) {
  const int dp = shape.gpus / (p.tp * p.pp * p.cp);
  return shape.global_batch / (dp * p.mbs);
}

StepSplit SplitStep(int m1, double step1_s, int m2, double step2_s) {
  StepSplit s;
  s.per_micro_batch_s = (step1_s - step2_s) / double(m1 - m2);
  s.per_step_s = step2_s - m2 * s.per_micro_batch_s;
  return s;
}

}  // namespace moetune::tests
