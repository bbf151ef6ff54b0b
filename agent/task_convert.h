// Conversions between the API's probe messages (proto/common.proto) and the
// kernels' std-only structs (kernels/probe_types.h, kernels/probe_result.h).
#pragma once

#include "absl/status/statusor.h"
#include "kernels/probe_result.h"
#include "kernels/probe_types.h"
#include "proto/common.pb.h"

namespace moetune::agent {

// The probe parameters of a task. Sizes of multi-rank probes (ep_size,
// group_size) come from the task's world_size (or local_devices).
// InvalidArgument naming the field when the task has no parameters or an
// unknown enum value.
absl::StatusOr<moetune::kernels::ProbeParams> ToProbeParams(const moetune::v1::ProbeTask& task);

// The result message for one rank (ids, provenance identity and the agent's
// versions are filled by the caller).
moetune::v1::ProbeResult ToResultProto(const moetune::kernels::ProbeResult& result);

moetune::v1::ProbeKind ToProtoKind(moetune::kernels::ProbeKind kind);

}  // namespace moetune::agent
