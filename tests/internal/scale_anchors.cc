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

ScaleAnchor Anchor(const char* id, const char* system, const char* config,
                   const char* cluster, int gpus, int gbs, int tp,
                   std::array<double, 3> medians, std::array<int, 3> steps) {
  ScaleAnchor a;
  a.id = id;
  a.system = system;
  a.config = config;
  a.recipe = kCommonRecipe;
  a.not_modelled = kNotModelled;
  a.model_preset = "llama3.1-405b";
  a.cluster_preset = cluster;
  a.shape.gpus = gpus;
  a.shape.seq_len = 8192;
  a.shape.global_batch = gbs;
  a.parallel.tp = tp;
  a.parallel.pp = 8;
  a.parallel.vp = 8;
  a.parallel.cp = 2;
  a.parallel.mbs = 1;
  a.parallel.first_stage_layers = 1;
  a.parallel.last_stage_layers = 1;
  a.parallel.dp_outermost = true;  // TP_PP_DP_MAPPING=True
  // NeMo 25.09 (ngc25.09 containers): older than every generation the
  // model describes, so the oldest (26.02).
  a.generation = planner::StackGeneration::k2602;
  a.knobs.precision = planner::Precision::kNvfp4;
  a.knobs.recompute.mode = planner::RecomputeMode::kNone;
  a.knobs.cuda_graphs = true;
  a.knobs.overlap.tp_comm = false;
  a.knobs.overlap.dp_comm = true;
  a.knobs.overlap.pp_comm = true;
  a.file_median_step_s = medians;
  a.file_steps = steps;
  return a;
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
