#include "planner/internal/prior_tables.h"

namespace moetune::planner::internal {

const std::vector<EmbeddedPriorTable>& EmbeddedPriorTables() {
  static const auto* const kTables = new std::vector<EmbeddedPriorTable>{
#include "planner/internal/prior_tables.inc"
  };
  return *kTables;
}

}  // namespace moetune::planner::internal
