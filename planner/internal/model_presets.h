// The config.json files of planner/data/models/, compiled in by a genrule.
#pragma once

#include <string_view>
#include <vector>

namespace moetune::planner::internal {

struct EmbeddedModel {
  std::string_view name;         // file name without ".json"
  std::string_view config_json;  // the file's text
};

const std::vector<EmbeddedModel>& EmbeddedModels();

}  // namespace moetune::planner::internal
