// Checks a probe result from outside (an agent) before anything of it is
// stored. Complements ValidateResult (server/agent_service.h) with the
// configurable size limits and plausibility bounds on every numeric field.
//
//  * ResourceExhausted: more measurements, samples, labels or values than the
//    limits allow (names the field, the count and the limit), with a
//    REFUSAL_SCOPE_MESSAGE Refusal (server/limits.h): never accepted as is;
//  * InvalidArgument: a NaN, an infinity, a negative or absurd value, an
//    over-long string, naming the field and the value.
#pragma once

#include "absl/status/status.h"
#include "proto/common.pb.h"
#include "server/limits.h"

namespace moetune::server {

// Plausibility bounds (generous: a reading beyond them is a bug or an attack).
inline constexpr double kMaxProbeSeconds = 86400;      // one probe sample: a day
inline constexpr double kMaxProbeFlops = 1e24;          // ~10^6 GPU-seconds at 1 PFLOP/s
inline constexpr double kMaxProbeBytes = 1e18;          // 1 EB
inline constexpr double kMaxBandwidthGbps = 1e7;        // 10 PB/s
inline constexpr double kMaxTflops = 1e6;               // 1 EFLOP/s per probe
inline constexpr double kMaxRatio = 1e6;                // bus factor, efficiency
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxTextBytes = 64 << 10;       // params_json, error_message
inline constexpr int kMaxMapEntries = 256;              // labels, values, env

absl::Status ValidateProbeResult(const moetune::v1::ProbeResult& result,
                                 const ServiceLimits& limits);

}  // namespace moetune::server
