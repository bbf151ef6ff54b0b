// The pipeline split of the published Megatron-Bridge runs' recipes: where
// the first and last virtual stages hold a different number of transformer
// layers from the even middle ones. //tests:validate gives each
// megatron-core-2026 row the split its recipe ran (ParallelConfig::
// first_stage_layers / last_stage_layers); without it the step model would
// balance the stages its own way, which moves rank 0's memory and so the
// recompute the validator's headroom rule (kRunDefaultMemoryHeadroom) infers.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "planner/model_spec.h"
#include "planner/training_config.h"

namespace moetune::tests {

// {first, last} transformer layers of the first and last virtual stages, or
// nullopt where the recipe leaves Megatron's even split (or the layout is
// not one the recipe names):
// - Llama 3.1 405B and Qwen3-235B-A22B: Megatron-Bridge's
//   llama31_405b_pretrain_config / qwen3_235b_a22b_pretrain_config set
//   account_for_embedding_in_pipeline_split and
//   account_for_loss_in_pipeline_split (v0.3.0 - v0.6.0; the performance
//   scripts keep them): the embedding and the loss count as one layer each,
//   every virtual stage holds (L + 2) / (pp x vp) and the first and last
//   one layer fewer (405B at pp 16 x vp 8: the embedding and the loss
//   alone); (L + 2) not divisible: nullopt (Megatron refuses it).
// - DeepSeek-V3: set_deepseek_v3_pipeline_model_parallel_layout's table
//   (recipes/deepseek/deepseek_v3.py, v0.4.0 - v0.6.0; v0.3.0's performance
//   overrides call it too): (16, 1), (8, 2), (4, 4): embedding + 4 | 4 ... |
//   1 + MTP + loss; (8, 1), (4, 2): 8 | ... | 5 + MTP + loss; (4, 1): 16 |
//   ... | 13 + MTP + loss.
std::optional<std::pair<int, int>> RecipeStageSplit(const planner::ModelSpec& model,
                                                    const std::string& model_preset,
                                                    const planner::ParallelConfig& p);

}  // namespace moetune::tests
