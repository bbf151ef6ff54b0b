// Published optimization ladders: one job measured after each of a series
// of named optimizations, each step adding one. Each step is mapped to the
// step model's knobs and software features (planner::MegatronFeatures) --
// honestly: where the model has no mechanism for the named optimization, the
// step changes nothing and says so, and the model then predicts no gain.
//
// The DeepSeek-V3 GB200 ladder (runs.json mlm-dsv3-gb200-opt-step00..12):
// NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization/
// deepseek-v3-gb200-optimization.md, section 3 table (dev branch; 256 GB200,
// TP1 PP8 VPP4 EP32, MBS1 GBS2048, MXFP8) and its reproduce guide (the final
// launch flags: no --overlap-moe-expert-parallel-comm, so EP overlap is off
// at every step; --overlap-grad-reduce/--overlap-param-gather on).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

struct LadderStep {
  std::string id;    // runs.json row id
  std::string name;  // the optimization as the source names it
  // The knobs after this step (cumulative).
  planner::Knobs knobs;
  // The software features after this step (cumulative).
  planner::MegatronFeatures features;
  // Which knob the step changes, or "no knob: <what the model lacks>".
  std::string mapping;
  bool has_knob = false;
  // The layout after this step where the step changes it (a standalone
  // ladder's steps otherwise run StandaloneLadder::parallel).
  std::optional<planner::ParallelConfig> parallel = std::nullopt;
};

// The 13 DeepSeek-V3 GB200 steps, baseline first.
std::vector<LadderStep> DeepSeekV3Gb200Ladder();

// A ladder whose rows are not in runs.json: the job and the measured
// figures are carried here, each with its source.
struct StandaloneLadder {
  std::string title;
  std::string source;
  std::string model_preset;
  // > 0: the preset cut to this many decoder layers (a proxy model, as
  // benchmarks of a large model on few GPUs run); its MTP layers and its
  // leading dense layers stay (LadderModel).
  int proxy_layers = 0;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::ParallelConfig parallel;
  planner::StackGeneration generation = planner::StackGeneration::k2602;
  std::vector<LadderStep> steps;
  std::vector<double> measured_tflops;  // per step, model TFLOPS/GPU
  // Where the source publishes step times only (same job, so throughput
  // is proportional to 1 / step time): per step, seconds; then
  // measured_tflops is empty.
  std::vector<double> measured_step_s;
  // Where the source also publishes the allocated memory per step (torch's
  // memory_allocated, GB): per step, else empty. validate prints it beside
  // the predicted tensors (MemoryBreakdown::TensorBytes) and the savings.
  std::vector<double> measured_allocated_gb;
  // What the model is told that the source leaves unstated (a layout value
  // taken from the recipe the source names, an assumed setting); empty if
  // nothing.
  std::string assumed;
};

// Qwen3-235B-A22B on 256 H100 (yanring/Megatron-MoE-ModelZoo
// best_practice/Qwen3/readme.md, "Cross-node EP strategy"): TP2 CP1 EP32 PP8
// VP4 MBS1 GBS2048, BF16, DeepEP, recompute norm + act; 245 TFLOPS/GPU
// (19.7 s), then "+1f1b overlap" (the combined-1F1B EP A2A overlap) 276
// (17.6 s). Code moe_dev(f3e6c5), mid-2025: the oldest generation.
StandaloneLadder Qwen3H100EpOverlapLadder();

// Qwen3-30B-A3B on 16 H100 (NVIDIA-NeMo/Megatron-Bridge
// skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md, "HybridEP
// Production-Shape Benchmark", added 2026-07-25, read at commit 067f987d):
// TP1 PP1 CP1 EP16, MBS1 GBS1024, seq 4096, BF16, forced-balanced routing,
// flex + HybridEP, TE CUDA graphs over moe_router + moe_preprocess (not
// attn), delayed wgrad off; plain EP overlap off 244.039 -> on 287.305
// model TFLOPS/GPU (the independent validation run).
StandaloneLadder Qwen3A3bH100HybridEpOverlapLadder();

// Qwen3-30B-A3B SFT on 16 H100, same skill, "Correctness-First alltoall
// Benchmark" (added 2026-05-18): EP16, alltoall, BF16, GBS 1024, CUDA
// graphs off, permute fusion off; steady step time 41.25 s, with plain EP
// overlap 31.31 s, plus delay_wgrad_compute 31.20 s.
StandaloneLadder Qwen3A3bH100AllToAllOverlapLadder();

// Qwen3-30B-A3B pretrain on 16 H100 (Megatron-Bridge
// skills/nemo-mbridge-perf-cuda-graphs/SKILL.md, pitfall 13, 2026-05-18):
// BF16, alltoall, TE-scoped graphs attn + moe_router + moe_preprocess
// captured; eager 41.36 s vs graphs 42.00 s per step (graphs slower).
StandaloneLadder Qwen3A3bH100CudaGraphLadder();

// Qwen3-235B-A22B long context on 256 H100 (yanring/Megatron-MoE-ModelZoo
// best_practice/qwen3/readme.md "Long Context", commit e8650517; table
// first added in 8e291e1, 2025-12-16): PP8 VP4 EP8 TP4, GBS 256, BF16,
// DeepEP, no A2A overlap, recompute layernorm + moe; dropless vs
// --moe-router-force-load-balancing at seq 16k/32k/64k/128k (CP 1/2/4/8):
// 237/295, 277/335, 320/368, 357/389 TFLOPS/GPU.
std::vector<StandaloneLadder> Qwen3H100LongContextBalanceLadders();

// Megatron-LM examples/moe_recipes/README.md "Recipe Index" (dev branch,
// commit 9c5258f109; median TFLOP/s/GPU, each recipe's YAML giving the
// run; forced balancing, HybridEP, no recompute):
// Qwen3-30B-A3B on 16 GB200, EP16 MBS4 GBS512, no EP overlap: BF16 without
// CUDA graphs 528 -> MXFP8 with TE graphs (attn, moe_router,
// moe_preprocess) 514 -> paged stash + full-iteration graphs 646.8.
StandaloneLadder Qwen3A3bGb200RecipeLadder();
// Qwen3-235B-A22B on 128 GB200, EP64 MBS1 GBS8192, MXFP8, EP overlap:
// partial TE graphs 1018 -> paged stash + full-iteration graphs 1159.5.
StandaloneLadder Qwen3A22bGb200RecipeLadder();
// Qwen3-30B-A3B on 32 H100, EP8 MBS1 GBS256: BF16 without graphs 234.1 ->
// FP8 blockwise with TE graphs 232.4.
StandaloneLadder Qwen3A3bH100RecipeLadder();

// Moonlight-16B-A3B on 8 H100 (Megatron-Bridge skills/nemo-mbridge-perf-
// activation-recompute/SKILL.md, "Matched H100 Evidence: Moonlight 16B",
// 2026-08-12, Bridge 600d069b8): TP2 PP1 CP1 EP8, seq 4096, MBS1 GBS4,
// BF16, mock data, 20 steps; each run changes only recompute_modules. Step
// time (mean of iterations 11-20): [] 457.18 ms; core_attn 474.80;
// mla_up_proj 480.89; mla_up_proj + mlp 496.73; moe_act 466.26;
// layernorm + moe_act 506.53. One two-step ladder per variant: control ->
// variant. The runs are short and separate: adding mlp, which re-runs one
// dense layer's MLP (about 1 ms of work in the model), measured +15.8 ms, so
// differences of a few percent are within the runs' spread.
std::vector<StandaloneLadder> MoonlightH100RecomputeLadders();

// DeepSeek-V3 on 256 GB200 (NVIDIA-NeMo/Megatron-Bridge pull request 4226,
// "DSV3 GB200 MXFP8 full-iter CG recipe", merged 2026-06-10): TP1 PP4 VP4
// EP64, MBS1 GBS4096, MXFP8, HybridEP, steady-state step time of
// iterations 14-19: TE graphs (attn, moe_router, moe_preprocess) with
// core_attn offloaded and mlp recomputed 13.89 s; full-iteration graphs
// with EP overlap, core_attn + attn_proj offloaded, no recompute 15.10 s;
// the same with no offload and mla_up_proj recomputed (the recipe) 12.94 s.
StandaloneLadder Dsv3Gb200FullIterationLadder();

// DeepSeek-V3 on 256 B300 (NVIDIA-NeMo/Megatron-Bridge pull request 4458,
// "Update DSV3 B300 perf recipe", merged 2026-06-25; the author's table of
// TFLOP/s/GPU, baseline -> with changes): EP8, GBS 4096, PP8 without
// interleaving at MBS 2 -> PP8 VP2. BF16 (MBS 2 -> 1) 785.3 -> 842.48;
// MXFP8 (MBS 2 -> 1, plus full-iteration graphs, EP A2A overlap, FP8
// attention and output projection, the CuTeDSL fused grouped MLP) 894.1 ->
// 1161.4; NVFP4 (MBS 2) 982.6 -> 1097.11. One two-step ladder per
// precision; each step's layout is LadderStep::parallel.
std::vector<StandaloneLadder> Dsv3B300RecipeUpdateLadders();

// DeepSeek-V3 on 256 B200 (NVIDIA-NeMo/Megatron-Bridge pull request 1869,
// "Update Deepseek V3 B200 recipe", merged 2026-01-09, commit 1fd34b18c):
// TP1 PP16, GBS 2048, recompute mla_up_proj, no CUDA graphs, forced
// balancing; EP 8 with NCCL's all-to-all (the DeepSeek-V3 provider's
// dispatcher when the recipe names no flex backend) -> EP 16 with DeepEP.
// The description's TFLOP/s/GPU: the 25.11 tracker's 532 (BF16) and 557
// (MXFP8) -> 575 and 635. One one-step ladder per precision.
std::vector<StandaloneLadder> Dsv3B200EpUpdateLadders();

// Qwen3-235B-A22B on 64 B200 (NVIDIA-NeMo/Megatron-Bridge pull request 1760,
// "Improving Qwen3-235B-A22B B200 performance.", merged 2026-01-09, commit
// a6e92de5f): TP1 PP8 VP4 EP8 (the EP group inside one node), GBS 1024,
// NCCL all-to-all, no CUDA graphs, no recompute, forced balancing; the EP
// A2A overlap turned off "due to CPU overhead" (BF16: 17.2 -> 16.0 s per
// step) and, at MXFP8, the interleaving too (PP8 VP4 -> PP8: 20.1 -> 16.9
// s). Step times only.
std::vector<StandaloneLadder> Qwen3A22bB200OverlapOffLadders();

// GPT-OSS-120B on 64 GB200 (NVIDIA-NeMo/Megatron-Bridge pull request 3561,
// "switch GPT-OSS GB200 V2 dispatcher default to alltoall", merged
// 2026-04-29, commit 1513a1026): the V2 recipe, TP1 PP1 EP64 (one NVL72
// domain), MBS4 GBS1280, recompute layernorm + moe_act, EP A2A overlap on,
// no CUDA graphs, forced balancing; HybridEP -> NCCL all-to-all. The
// description's TFLOP/s/GPU: BF16 406.6 -> 423.6, MXFP8 431.0 -> 438.5
// (all-to-all faster: "HybridEP's setup overhead unamortized" on small
// experts). One one-step ladder per precision.
std::vector<StandaloneLadder> GptOssGb200DispatcherLadders();

// DeepSeek-V3 on 256 B300 (NVIDIA-NeMo/Megatron-Bridge pull request 3549,
// "Update DeepSeek-V3 configs for B300", merged 2026-04-29, commit
// 7e29b8be2; the table in issue 3385): GBS 4096, EP8, HybridEP, recompute
// mla_up_proj, no EP A2A overlap; MBS 1 -> 2 and TE graphs over attn,
// moe_router, moe_preprocess added, and at FP8 / NVFP4 PP16 -> PP8 (BF16
// was at PP8 already); PCT binding was also turned off "to get stable
// runs". TFLOP/s/GPU: BF16 749.1 -> 770.03, FP8 806 -> 894.58, NVFP4
// 754.593 -> 982.35. The "after" recipes are pull request 4458's "before"
// (Dsv3B300RecipeUpdateLadders), measured again there.
std::vector<StandaloneLadder> Dsv3B300GraphsMbsLadders();

// DeepSeek-V3 cut to 14 layers on 64 H100 (NVIDIA/Megatron-LM pull request
// 6311, "[Dev] Recompute EP A2A overlap activations per layer instead of
// per model chunk", merged to dev; its benchmark table): TP1 PP4 EP16,
// layout "Ett|(tt|)*6mL" (8 virtual stages: embedding + 2 layers, 6 x 2,
// then MTP and the loss), NCCL all-to-all, seq 2048, MBS1 GBS256, BF16;
// no overlap and no recompute 225.1 TFLOP/s/GPU -> full recompute (uniform,
// one layer per checkpoint) 184.2. The pull request's own rows (EP overlap
// with full recompute) need its dev-branch change and are not a step here.
StandaloneLadder Dsv3ProxyH100FullRecomputeLadder();

// Qwen3-30B-A3B on 16 H100 (NVIDIA-NeMo/Megatron-Bridge skills/
// nemo-mbridge-perf-cpu-offloading/card.yaml, validated 2026-03-30): TP2 PP2
// EP4, the optimizer-state CPU offload (HybridDeviceOptimizer) at 0 / 25 /
// 50 / 75 / 100% and 100% with --overlap-cpu-optimizer-d2h-h2d: 996 / 1,871
// / 2,484 / 3,187 / 4,189 / 3,877 ms per step. Step times only; the card
// gives no batch or sequence (assumed: StandaloneLadder::assumed).
StandaloneLadder Qwen3A3bH100OptimizerOffloadLadder();

// The same offload in NVIDIA-NeMo/RL pull request 3628 (merged 2026-08-13):
// a single-GPU Qwen3-0.6B microbenchmark on H100, mean step time over steps
// 11-100: disabled 0.752 s, 50% without the overlap 1.187 s, 50% with it
// 1.216 s, 100% with it 1.678 s. A second source, not used to set the CPU
// AdamW rate (kHostAdamStreamBytesPerSec).
StandaloneLadder Qwen3SmallH100OptimizerOffloadLadder();

// The ladder's model: the preset, cut to proxy_layers decoder layers when
// set (an error for a preset with per-layer patterns).
absl::StatusOr<planner::ModelSpec> LadderModel(const StandaloneLadder& l);

// Every standalone ladder, the first-added (Qwen3H100EpOverlapLadder) first.
std::vector<StandaloneLadder> StandaloneLadders();

// A ladder's measured throughput per step: measured_tflops, or 1 / step
// seconds where only step times are published (gains are then the same).
std::vector<double> MeasuredThroughput(const StandaloneLadder& l);

// Across ladders, every step after each ladder's first: how many, over how
// many ladders, how many have the predicted gain's sign right (a measured
// gain > 1 needs a predicted gain > 1 + 1e-9; a measured gain <= 1 needs a
// predicted gain <= 1 + 1e-9, so "no knob, no gain" is right only where
// the step measured no gain), and the median over steps of
// |predicted gain / measured gain - 1|.
struct LadderSummary {
  int steps = 0;
  int ladders = 0;
  int signs_right = 0;
  double median_abs_gain_error = 0;
};
struct LadderGains {
  std::vector<double> measured;   // StepGains of the measured values
  std::vector<double> predicted;  // StepGains of the predicted values
};
LadderSummary SummarizeLadders(const std::vector<LadderGains>& ladders);

// Gains between consecutive values (v[i] / v[i-1], first = 1) and the
// cumulative gain v.back() / v.front().
std::vector<double> StepGains(const std::vector<double>& values);

}  // namespace moetune::tests
