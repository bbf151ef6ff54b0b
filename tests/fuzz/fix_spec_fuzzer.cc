// libFuzzer target: the search's --fix knob strings ("tp=1,ep=64,...").
// A parsed spec printed back must parse to the same string. Built by
// tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "planner/search_space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto fixed = moetune::planner::ParseFixSpec(text);
  if (fixed.ok()) {
    const std::string printed = moetune::planner::ToString(*fixed);
    auto again = moetune::planner::ParseFixSpec(printed);
    if (!again.ok() || moetune::planner::ToString(*again) != printed) std::abort();
  }
  return 0;
}
