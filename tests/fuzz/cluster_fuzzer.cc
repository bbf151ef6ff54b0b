// libFuzzer target: the cluster JSON parser on arbitrary bytes; a parsed
// cluster must survive a round trip through its JSON form. Built by
// tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "planner/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cluster = moetune::planner::ParseClusterJson(text);
  if (cluster.ok()) {
    auto again = moetune::planner::ParseClusterJson(moetune::planner::ClusterSpecToJson(*cluster));
    if (!again.ok()) std::abort();
  }
  return 0;
}
