#include "tests/internal/recipe_splits.h"

namespace moetune::tests {

std::optional<std::pair<int, int>> RecipeStageSplit(const planner::ModelSpec& model,
                                                    const std::string& model_preset,
                                                    const planner::ParallelConfig& p) {
  if (p.pp <= 1) return std::nullopt;
  const int stages = p.pp * p.vp;
  if (model_preset == "llama3.1-405b" || model_preset == "qwen3-235b-a22b") {
    const int units = model.num_layers + 2;  // + embedding + loss
    if (units % stages != 0) return std::nullopt;
    const int per = units / stages;
    return std::make_pair(per - 1, per - 1);
  }
  if (model_preset == "deepseek-v3") {
    const std::pair<int, int> key{p.pp, p.vp};
    if (key == std::make_pair(16, 1) || key == std::make_pair(8, 2) ||
        key == std::make_pair(4, 4)) {
      return std::make_pair(4, 1);
    }
    if (key == std::make_pair(8, 1) || key == std::make_pair(4, 2)) return std::make_pair(8, 5);
    if (key == std::make_pair(4, 1)) return std::make_pair(16, 13);
  }
  return std::nullopt;
}

}  // namespace moetune::tests
