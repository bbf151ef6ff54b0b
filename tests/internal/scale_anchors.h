// MLPerf Training v5.1 Llama 3.1 405B, NVIDIA's closed-division submissions
// on 512 / 2,560 / 5,120 GB200 and 512 GB300 (the four
// mlperf-v5.1-nvidia-llama31-405b-* rows of runs.json, which carry no
// throughput): the public anchors for what grows with the job. The same
// model-parallel layout (TP4 PP8 VP8 CP2 on GB200) at a global batch that
// grows less than the GPUs, so the micro-batches per data-parallel replica
// fall 144 -> 24 -> 16 while the replicas grow 8 -> 40 -> 80 across racks.
//
// Measured step time: for each of the three logged runs of a system
// (mlcommons/training_results_v5.1, commit 441d65f4,
// NVIDIA/results/<system>/llama31_405b/result_{0,1,2}.txt) the median of
// the logged train_step_time of steps >= 5 (the MLLOG tracked_stats lines
// of custom_callbacks.py that carry a step number: the wall time between
// consecutive on_train_batch_end calls, DeltaTimingCallback), then the
// median of the three. Each check carries the three per-file medians; the
// derived figures (the median, tokens/s/GPU, the per-GPU throughput
// ratios) are computed by the functions below and pinned by hand in
// scale_anchors_test.cc. //tests:validate predicts each run with the
// shipped constants and prints measured vs predicted: checks, never fitted.
//
// What they show (shipped constants, December 2026):
// - measured 17.259 / 3.190 / 2.227 s per step (GB200 512 / 2,560 / 5,120),
//   13.145 s (GB300 512): 1,067.9 / 963.1 / 919.5 / 1,402.2 tokens/s/GPU;
//   per-GPU ratios 2,560/512 0.902, 5,120/512 0.861, GB300/GB200 1.313.
// - step = m x t + K over the GB200 runs: t 0.1172 s per micro-batch,
//   K 0.376 s per step (0.351 s from the 5,120 run): what each step pays
//   once does not grow from 8 to 80 replicas. Before the per-step host
//   time (StackConstants::step_host_s, set from runs.json by the rule,
//   never from these runs) the model's K was 0.114 s (bubble and
//   optimizer), 0.178 s with DP priced across racks per interleaved chunk,
//   and the ratios came out 0.969 / 0.951 (+7.5% / +10.5%); with it K is
//   0.350 s, the GB200 runs -0.8% / -0.1% / -0.8% and the ratios 0.909 /
//   0.861 (+0.8% / +0.0%).
// - GB300 / GB200 predicted 1.628: the GB300 run is +23% (NVFP4 GEMM
//   pricing, not a scale term).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

struct ScaleAnchor {
  std::string id;         // the runs.json row id
  std::string system;     // NVIDIA/results/<system>/llama31_405b
  std::string config;     // the config .sh under .../implementations/<system>/
  std::string recipe;     // the config facts that matter here, as published
  std::string not_modelled;  // what the run sets that the step model has no mechanism for
  std::string model_preset;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::ParallelConfig parallel;
  planner::StackGeneration generation = planner::StackGeneration::k2602;
  planner::Knobs knobs;
  // Median train_step_time (s) over steps >= 5 of result_0, _1, _2.
  std::array<double, 3> file_median_step_s{};
  // Steps >= 5 in each file (how many values each median is over).
  std::array<int, 3> file_steps{};
  // Runs read from one log only (the DeepSeek-V3 series): the per-step
  // train_step_time values of the steps `logged_steps` names, in log order;
  // the measured step is their median (MeasuredStepSeconds). Empty for the
  // Llama anchors, which use file_median_step_s.
  std::vector<double> logged_step_s;
  std::string logged_steps;
  // The run captured the whole step in one CUDA graph (CUDA_GRAPH_SCOPE=
  // full_iteration): MegatronFeatures::graph_full_iteration.
  bool graph_full_iteration = false;
};

// The four runs: tyche 512 GB200, hsg 2,560 and 5,120 GB200, theia 512
// GB300.
std::vector<ScaleAnchor> MlperfLlama405bAnchors();

// MLPerf Training v6.0 DeepSeek-V3 671B (closed division, real C4 data,
// natural routing: MOE_ROUTER_FORCE_LOAD_BALANCING=False): NVIDIA's GB200
// series on 512 / 2,048 / 4,096 / 8,192 GPUs (TP2 PP4 VP4 EP32, the same
// layout at every scale, global batch 15,360 or 16,384, so the
// micro-batches per replica fall 240 -> 16) and the GB300 series on 256 /
// 512 (NVIDIA) and 2,048 / 4,096 / 8,192 (CoreWeave) GPUs (TP1 PP4 VP4
// EP32, 240 -> 8). Source: the training_results_v6.0 tree as mirrored in
// Richardyu114/training_results_v6.0 (commit eabf23a0), <submitter>/
// results/<system>/deepseekv3_671b/result_0.txt and the config under
// <submitter>/benchmarks/deepseekv3_671b/implementations/<system>/. Nine
// runs, none in runs.json, none used to set any constant.
std::vector<ScaleAnchor> MlperfDeepSeekV3Anchors();

// MLPerf Training v5.0 Llama 3.1 405B at FP8 (closed division, May 2025):
// the dense FP8 series, twelve runs none of which is in runs.json or was
// used to set a constant. GB200 NVL72 at TP4 PP8 VP8 CP2 (NVIDIA tyche,
// 256 and 512 GPUs; IBM + CoreWeave carina, 512 / 1,024 / 1,536 / 2,048 /
// 2,496 GPUs), full-iteration CUDA graphs, NeMo 25.04; H100 (NVIDIA eos-dfw,
// 512 / 2,048 / 2,432 / 2,560 / 8,192 GPUs) at TP8 PP8 VP8 CP2, eager, NeMo
// 25.01. Every run: FP8 delayed scaling (per-tensor), TP communication
// overlap (userbuffers), no recompute, micro-batch 1, sequence 8,192,
// 126 layers over 64 virtual stages with the embedding and the loss
// counted (one layer on the first and last). Source: the
// training_results_v5.0 tree as mirrored in prishajain1/training_results_v5.0
// (commit ab57af8), <submitter>/results/<system>/llama31_405b/
// result_{0,1,2}.txt and <submitter>/benchmarks/llama31_405b/
// implementations/<system>/config_*.sh; each step as the v5.1 anchors'
// (median of the logged train_step_time of steps >= 5, the step being the
// logged sample count / global batch; then the median of the three files).
// The two Nebius H200 runs of the same round are left out: their configs
// leave ASYM_PP_EMBED / ASYM_PP_LOSS unset (conf/custom.yaml: False), and
// 126 layers do not split evenly over 64 virtual stages without them, so
// how those runs placed the layers is not published.
std::vector<ScaleAnchor> MlperfV50Llama405bAnchors();

// Median of the three per-file medians (the middle value).
double MedianStepSeconds(const std::array<double, 3>& file_medians_s);

// The median of `values` (the mean of the two middle ones for an even
// count); 0 for none.
double MedianOf(std::vector<double> values);

// A run's measured step: MedianOf(logged_step_s) when it has them, else
// MedianStepSeconds(file_median_step_s).
double MeasuredStepSeconds(const ScaleAnchor& a);

// Tokens per step = global batch x sequence length (every sequence is
// full: MLPerf's C4 pretraining packs to seq 8192).
double TokensPerStep(const planner::TrainingShape& shape);

// tokens/s/GPU = global batch x seq / step time / GPUs.
double StepTokensPerSecPerGpu(const planner::TrainingShape& shape, double step_s);

// Micro-batches per data-parallel replica per step = global batch /
// (dp x mbs), dp = GPUs / (tp x pp x cp).
int MicroBatchesPerReplica(const planner::TrainingShape& shape, const planner::ParallelConfig& p);

// Two-point decomposition of step time = m x t + K (m micro-batches per
// replica, t the time of one micro-batch through the pipeline's slowest
// stage, K what every step pays once: the pipeline fill and drain, exposed
// data-parallel communication, the optimizer, the host's per-step work).
// From two runs with the same model-parallel layout and micro-batch size
// and different m: t = (s1 - s2) / (m1 - m2), K = s2 - m2 t.
struct StepSplit {
  double per_micro_batch_s = 0;
  double per_step_s = 0;
};
StepSplit SplitStep(int m1, double step1_s, int m2, double step2_s);

}  // namespace moetune::tests
