// The prior-constant tables of planner/data/priors/ (one per GPU generation),
// compiled in by a genrule. Parsed by PriorConstantsFor (cost_model.h).
#pragma once

#include <string_view>
#include <vector>

namespace moetune::planner::internal {

struct EmbeddedPriorTable {
  std::string_view name;  // file name without ".json": the generation's name
  std::string_view json;
};

const std::vector<EmbeddedPriorTable>& EmbeddedPriorTables();

}  // namespace moetune::planner::internal
