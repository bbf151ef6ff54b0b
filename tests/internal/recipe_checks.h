// Published runs outside runs.json whose recipes set knobs the validator's
// rows never vary: CUDA-graph scope (scoped graphs without attention, or
// full-iteration graphs), natural routing, FP8 dot-product attention. Each
// check carries its job, its published knobs as far as the step model has
// them, the measured throughput and its source; //tests:validate predicts
// each with the shipped constants and prints the error. Nothing here is
// fitted: the rows are checks, never training data.
#pragma once

#include <string>
#include <vector>

#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

struct RecipeCheck {
  std::string id;
  std::string source;  // where the measured figure and the recipe are published
  std::string recipe;  // the recipe's settings that matter here, as published
  std::string model_preset;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::ParallelConfig parallel;
  planner::StackGeneration generation = planner::StackGeneration::k2606;
  planner::Knobs knobs;
  planner::MegatronFeatures features;
  // What the published recipe runs that the step model has no mechanism
  // for (empty: everything it sets is modelled).
  std::string not_modelled;
  double measured_tokens_per_sec_per_gpu = 0;
};

// Qwen3-30B-A3B on 8 GB200 / 16 H100 (Megatron-Bridge model verification
// card, scoped vs full-iteration CUDA graphs) and GPT-OSS-120B MXFP8 on 64
// GB200 / GB300 (Megatron-Bridge performance summary, 26.06 - 26.08).
std::vector<RecipeCheck> PublicRecipeChecks();

}  // namespace moetune::tests
