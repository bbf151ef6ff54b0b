// libFuzzer target: the model parsers (Hugging Face config.json and the
// native form) on arbitrary bytes. They must return a status, never crash,
// hang or read out of bounds; a parsed spec must survive a round trip
// through the native form. Built by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "planner/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)moetune::planner::ParseHfConfig(text);
  (void)moetune::planner::ParseNativeModelJson(text);
  auto spec = moetune::planner::ParseModelJson(text);
  if (spec.ok()) {
    (void)spec->TotalParams();
    (void)spec->ActiveParamsPerToken();
    auto again = moetune::planner::ParseNativeModelJson(moetune::planner::ModelSpecToNativeJson(*spec));
    if (!again.ok()) std::abort();  // a spec we accepted must serialize to one we accept
  }
  return 0;
}
