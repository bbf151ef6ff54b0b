// PlanCampaign: the probe set of one calibration campaign for a cluster, from
// the live agents' descriptions.
//
// For N live agents (nodes) with G devices each:
//  * every device: a grouped-GEMM sweep (balanced and Zipf-skewed routing)
//    and host-offload copies, pinned to its agent;
//  * within a node (G > 1, CUDA): collectives over 2, 4, 8 local GPUs driven
//    by one agent (local_devices);
//  * across nodes (N > 1): collectives (all-reduce, all-to-all) over groups of
//    increasing size 2, 4, 8, ... and N, expert-parallel dispatch/combine over
//    all N nodes (per-expert and de-duplicated modes) and over 2, and a
//    GEMM/all-reduce overlap probe over 2. One rank per agent: a node takes
//    part in a cross-node probe with its first device only (known limit).
// The QUICK profile uses small sizes that a CPU agent finishes in well under
// a second per probe. STANDARD sizes each probe for the agents it runs on:
// production sizes on CUDA agents, without those that do not fit half the
// smallest device's memory; host sizes (seconds per probe) when a CPU agent
// is among them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/common.pb.h"
#include "proto/planner_service.pb.h"

namespace moetune::server {

// FailedPrecondition when `agents` is empty (nothing to calibrate on).
absl::StatusOr<std::vector<moetune::v1::ProbeTask>> PlanCampaign(
    const std::string& campaign_id, moetune::v1::CampaignProfile profile,
    const std::vector<moetune::v1::AgentInfo>& agents);

}  // namespace moetune::server
