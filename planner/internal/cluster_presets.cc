#include "planner/internal/cluster_presets.h"

namespace moetune::planner::internal {

const std::vector<EmbeddedCluster>& EmbeddedClusters() {
  static const auto* const kClusters = new std::vector<EmbeddedCluster>{
#include "planner/internal/cluster_presets.inc"
  };
  return *kClusters;
}

}  // namespace moetune::planner::internal
