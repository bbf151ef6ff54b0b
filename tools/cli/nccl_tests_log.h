// nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf) as probe results, for `moetune measurements import`.
//
// What is read from a log:
//   * the device table ("#  Rank  3 Group  0 Pid ... on HOST device 3 [..] NAME"):
//     the rank count (the group size), the hosts (one host: intra_node,
//     several: inter_node) and the GPU name;
//   * the column header ("#  size  count  type  redop  root  time  algbw
//     busbw  #wrong  time ..."), so logs with or without the root column, and
//     "error" instead of "#wrong", parse alike;
//   * every result row: size (bytes, nccl-tests' convention, which the probes
//     share: all_gather the gathered output, reduce_scatter the input), the
//     element type, the out-of-place and in-place times (us) and their wrong
//     counts;
//   * the collective, from "<op>_perf" in the text (the command line) when
//     present, and the NCCL version ("nccl-library=22809" / "NCCL version
//     2.28.9") when present.
// A row with wrong elements is refused (InvalidArgument naming its size): a
// benchmark that computed wrong results does not calibrate anything.
#pragma once

#include <optional>
#include <set>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/probe_types.h"
#include "proto/common.pb.h"

namespace moetune::cli {

struct NcclTestsRow {
  int64_t bytes = 0;
  std::string type;             // "float", "bfloat16", "half", ...
  double out_of_place_us = 0;
  std::optional<double> in_place_us;  // absent in alltoall logs of some versions
};

struct NcclTestsLog {
  std::optional<moetune::kernels::CollectiveOp> op;
  int ranks = 0;
  std::set<std::string> hosts;
  std::string device_name;
  std::string nccl_version;
  std::vector<NcclTestsRow> rows;
};

absl::StatusOr<NcclTestsLog> ParseNcclTestsLog(absl::string_view text);

struct NcclTestsImport {
  std::string cluster;
  std::string source;  // file name, for provenance and the result id
  // Overrides of what the log says (or does not say).
  std::optional<moetune::kernels::CollectiveOp> op;
  int group_size = 0;               // 0: the log's rank count
  std::optional<moetune::kernels::Span> span;
  std::string gpu;                  // "": the log's device name
};

// One collective probe result per log: a measurement per size (name, labels
// and bytes per kernels/measurement_roles.h, its samples the out-of-place
// and in-place times), provenance "nccl-tests" with the log's hosts, GPU and
// NCCL version. The result id is a hash of the cluster, source and text, so
// importing the same log twice stores it once. InvalidArgument naming what
// is missing (no op in the log and none given, no rows, no ranks).
absl::StatusOr<moetune::v1::ProbeResult> NcclTestsResult(const NcclTestsLog& log, const NcclTestsImport& how,
                                                          absl::string_view text);

}  // namespace moetune::cli
