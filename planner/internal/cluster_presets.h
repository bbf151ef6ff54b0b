// The cluster JSON files of planner/data/clusters/, compiled in by a genrule
// (the same form ParseClusterJson reads from a user's file).
#pragma once

#include <string_view>
#include <vector>

namespace moetune::planner::internal {

struct EmbeddedCluster {
  std::string_view name;  // file name without ".json"
  std::string_view json;  // the file's text
};

const std::vector<EmbeddedCluster>& EmbeddedClusters();

}  // namespace moetune::planner::internal
