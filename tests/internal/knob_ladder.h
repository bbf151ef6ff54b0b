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

#include <string>
#include <vector>

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
};

// The 13 DeepSeek-V3 GB200 steps, baseline first.
std::vector<LadderStep> DeepSeekV3Gb200Ladder();

// A ladder whose rows are not in runs.json: the job and the measured
// figures are carried here, each with its source.
struct StandaloneLadder {
  std::string title;
  std::string source;
  std::string model_preset;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::ParallelConfig parallel;
  planner::StackGeneration generation = planner::StackGeneration::k2602;
  std::vector<LadderStep> steps;
  std::vector<double> measured_tflops;  // per step, model TFLOPS/GPU
};

// Qwen3-235B-A22B on 256 H100 (yanring/Megatron-MoE-ModelZoo
// best_practice/Qwen3/readme.md, "Cross-node EP strategy"): TP2 CP1 EP32 PP8
// VP4 MBS1 GBS2048, BF16, DeepEP, recompute norm + act; 245 TFLOPS/GPU
// (19.7 s), then "+1f1b overlap" (the combined-1F1B EP A2A overlap) 276
// (17.6 s). Code moe_dev(f3e6c5), mid-2025: the oldest generation.
StandaloneLadder Qwen3H100EpOverlapLadder();

// Gains between consecutive values (v[i] / v[i-1], first = 1) and the
// cumulative gain v.back() / v.front().
std::vector<double> StepGains(const std::vector<double>& values);

}  // namespace moetune::tests
