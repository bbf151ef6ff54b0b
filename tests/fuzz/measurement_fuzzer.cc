// libFuzzer target: the server's probe-result validator on arbitrary
// protobuf bytes (what a hostile agent can send). A result it accepts must
// hold only finite, non-negative timings within the plausibility bounds.
// Built by tools/fuzz.sh.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "proto/common.pb.h"
#include "server/measurement_validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moetune::v1::ProbeResult r;
  if (!r.ParseFromArray(data, static_cast<int>(size))) return 0;
  moetune::server::ServiceLimits limits;
  limits.max_samples_per_measurement = 1000;
  if (!moetune::server::ValidateProbeResult(r, limits).ok()) return 0;
  for (const auto& m : r.measurements()) {
    if (m.samples_seconds_size() > limits.max_samples_per_measurement) std::abort();
    for (double s : m.samples_seconds()) {
      if (!(s >= 0 && s <= moetune::server::kMaxProbeSeconds)) std::abort();
    }
    for (double v : {m.min_seconds(), m.median_seconds(), m.max_seconds(), m.flops(), m.bytes()}) {
      if (!std::isfinite(v) || v < 0) std::abort();
    }
    for (const auto& [k, v] : m.values()) {
      if (!std::isfinite(v)) std::abort();
    }
  }
  return 0;
}
