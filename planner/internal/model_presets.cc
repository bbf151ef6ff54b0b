#include "planner/internal/model_presets.h"

namespace moetune::planner::internal {

const std::vector<EmbeddedModel>& EmbeddedModels() {
  static const auto* const kModels = new std::vector<EmbeddedModel>{
#include "planner/internal/model_presets.inc"
  };
  return *kModels;
}

}  // namespace moetune::planner::internal
