// Public layout comparisons of deep pipelines on Hopper (8 GPUs per node: with
// pp >= gpus / 8 every stage boundary is an InfiniBand hop), printed by
// //tests:validate. Each case carries its published layout and knobs and,
// where published, its measured step time or its measured model TFLOP/s per
// GPU; the sources are in deep_pipelines.cc.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

struct LayoutCase {
  std::string name;
  planner::ParallelConfig parallel;
  planner::Knobs knobs;
  // false: the source does not publish the recompute; the validator then
  // takes the lightest recompute that fits (its rule for unpublished rows).
  bool recompute_published = true;
  std::optional<double> measured_step_s;  // nullopt: no public measurement
  std::string note;                       // where the layout comes from
  // The source publishes model TFLOP/s per GPU instead of a step time. The
  // layouts of a group run the same model, shape and batch, so the step
  // time is the model FLOPs per step per GPU / this: MeasuredCaseStepSeconds.
  std::optional<double> measured_tflops = std::nullopt;
};

// The measured step time of `c`: its published step time, else the model
// FLOPs per step per GPU (model_flops_per_gpu, the same for every layout of
// a group) / its published TFLOP/s; nullopt when it has neither.
std::optional<double> MeasuredCaseStepSeconds(const LayoutCase& c, double model_flops_per_gpu);

struct LayoutGroup {
  std::string title;
  std::string source;
  std::string model_preset;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::StackGeneration generation = planner::StackGeneration::k2602;
  planner::MegatronFeatures features;
  std::vector<LayoutCase> cases;
};

// Qwen3-235B-A22B on 256 H100 (Megatron-MoE-ModelZoo, four layouts, three
// of them measured deep pipelines), DeepSeek-V3 on 1,024 H100 (TP2 PP16,
// measured by the DGX Cloud recipe; TP1 PP8 VP2 and the Megatron-Bridge
// TP2 PP8 VP4, no public BF16 measurement) and Llama3-70B SFT on 32 H100
// (Megatron-Bridge's memory-tuning experiment: TP4 PP4, PP doubled to 8,
// TP doubled to 8, all VP5, measured TFLOP/s) and Qwen3-235B-A22B on 256
// H800 (Pai-Megatron-Patch: TP1 / TP2 at PP32 VP3 EP8, eager, two batches).
std::vector<LayoutGroup> HopperDeepPipelineGroups();

// tokens/s/GPU of a step: global_batch x seq_len / (step_s x gpus).
double TokensPerSecPerGpu(const planner::TrainingShape& shape, double step_s);

}  // namespace moetune::tests
