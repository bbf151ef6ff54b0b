// moetune measurements --cluster NAME [--campaign ID] [--limit N]: stored
// probe results with their provenance.
// moetune measurements import --cluster NAME [--op OP] [--group_size N]
//     [--span intra_node|inter_node] [--gpu NAME] LOG...: nccl-tests logs
//     (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf
//     output) into the cluster's calibration (tools/cli/nccl_tests_log.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "tools/cli/command_registry.h"
#include "tools/cli/nccl_tests_log.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

namespace k = ::moetune::kernels;

int RunImport(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand("measurements import",
                          "measurements import --cluster NAME [--op all_reduce|all_gather|reduce_scatter|all_to_all] "
                          "[--group_size N] [--span intra_node|inter_node] [--gpu NAME] [--format text|json] LOG...",
                          argv,
                          {{"cluster", false, "cluster label the measurements belong to"},
                           {"op", false, "the collective, when the log does not name its benchmark"},
                           {"group_size", false, "ranks, when the log's device table is missing"},
                           {"span", false, "intra_node or inter_node (default: from the log's hosts)"},
                           {"gpu", false, "GPU name, when the log's device table is missing"},
                           {"format", false, "text (default) or json"}},
                          &args, &call, &code)) {
    return code;
  }
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("measurements import", "--format must be text or json, got '" + format + "'");
  }
  NcclTestsImport how;
  how.cluster = args.GetOr("cluster", "");
  if (how.cluster.empty()) return BadInput("measurements import", "--cluster NAME is required");
  if (args.Has("op")) {
    const std::string op = args.GetOr("op", "");
    for (k::CollectiveOp o : {k::CollectiveOp::kAllReduce, k::CollectiveOp::kAllGather,
                              k::CollectiveOp::kReduceScatter, k::CollectiveOp::kAllToAll}) {
      if (op == k::CollectiveOpName(o)) how.op = o;
    }
    if (!how.op) return BadInput("measurements import", "--op must be all_reduce, all_gather, reduce_scatter or "
                                                        "all_to_all, got '" + op + "'");
  }
  auto group = args.GetInt("group_size");
  if (!group.ok()) return BadInput("measurements import", std::string(group.status().message()));
  if (*group) {
    if (**group < 2 || **group > (1 << 20)) {
      return BadInput("measurements import", absl::StrFormat("--group_size must be >= 2, got %d", **group));
    }
    how.group_size = static_cast<int>(**group);
  }
  if (args.Has("span")) {
    const std::string span = args.GetOr("span", "");
    if (span == "intra_node") {
      how.span = k::Span::kIntraNode;
    } else if (span == "inter_node") {
      how.span = k::Span::kInterNode;
    } else {
      return BadInput("measurements import", "--span must be intra_node or inter_node, got '" + span + "'");
    }
  }
  how.gpu = args.GetOr("gpu", "");
  if (args.positional().empty()) return BadInput("measurements import", "give at least one nccl-tests LOG file");
  v1::ImportMeasurementsRequest req;
  req.set_cluster(how.cluster);
  for (const std::string& path : args.positional()) {
    std::ifstream in(path);
    if (!in) return BadInput("measurements import", "cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<NcclTestsLog> log = ParseNcclTestsLog(text.str());
    if (!log.ok()) return BadInput("measurements import", path + ": " + std::string(log.status().message()));
    how.source = path;
    absl::StatusOr<v1::ProbeResult> r = NcclTestsResult(*log, how, text.str());
    if (!r.ok()) return BadInput("measurements import", std::string(r.status().message()));
    if (format == "text") {
      std::cerr << absl::StrFormat("%s: %s, %d ranks%s, %d sizes%s\n", path,
                                   r->measurements(0).labels().at("op"), r->provenance().world_size(),
                                   r->provenance().device_name().empty() ? "" : " of " + r->provenance().device_name(),
                                   r->measurements_size(),
                                   log->nccl_version.empty() ? "" : ", NCCL " + log->nccl_version);
    }
    *req.add_results() = std::move(*r);
  }
  v1::ImportMeasurementsResponse resp;
  grpc::Status s = call.stub->ImportMeasurements(call.Context().get(), req, &resp);
  if (!s.ok()) return call.Error(s);
  if (format == "json") {
    std::cout << ToJson(resp) << std::endl;
  } else {
    std::cout << resp.stored() << " result(s) stored, " << resp.duplicates() << " already there (cluster "
              << how.cluster << ")\n";
  }
  return kExitOk;
}

int RunMeasurements(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "import") {
    return RunImport(std::vector<std::string>(argv.begin() + 1, argv.end()));
  }
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand("measurements",
                          "measurements --cluster NAME [--campaign ID] [--limit N] [--format text|json]",
                          argv,
                          {{"cluster", false, "cluster label"},
                           {"campaign", false, "only this campaign"},
                           {"limit", false, "only the newest N results"},
                           {"format", false, "text (default) or json"}},
                          &args, &call, &code)) {
    return code;
  }
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("measurements", "--format must be text or json, got '" + format + "'");
  }
  v1::ListMeasurementsRequest req;
  req.set_cluster(args.GetOr("cluster", ""));
  req.set_campaign_id(args.GetOr("campaign", ""));
  if (req.cluster().empty() && req.campaign_id().empty()) {
    return BadInput("measurements", "--cluster NAME (or --campaign ID) is required");
  }
  auto limit = args.GetInt("limit");
  if (!limit.ok()) return BadInput("measurements", std::string(limit.status().message()));
  if (*limit) {
    if (**limit < 0 || **limit > (1 << 30)) {
      return BadInput("measurements", absl::StrFormat("--limit must be >= 0, got %d", **limit));
    }
    req.set_limit(static_cast<int32_t>(**limit));
  }
  v1::ListMeasurementsResponse resp;
  grpc::Status s = call.stub->ListMeasurements(call.Context().get(), req, &resp);
  if (!s.ok()) return call.Error(s);
  if (format == "json") {
    std::cout << ToJson(resp) << std::endl;
    return kExitOk;
  }
  std::cout << absl::StrFormat("%-22s %-17s %-4s %-28s %-11s %s\n", "NODE", "PROBE", "RANK",
                               "MEASUREMENT", "MEDIAN", "RATE");
  for (const v1::ProbeResult& r : resp.results()) {
    const std::string probe = v1::ProbeKind_Name(r.kind()).substr(11);
    if (r.error_code() != 0) {
      std::cout << absl::StrFormat("%-22s %-17s %-4d FAILED: %s\n", r.provenance().agent_id(), probe,
                                   r.rank(), r.error_message());
      continue;
    }
    for (const v1::Measurement& m : r.measurements()) {
      std::string rate;
      if (m.has_tflops()) rate = absl::StrFormat("%.3f TFLOPS", m.tflops());
      if (m.has_bus_bw_gbps()) rate = absl::StrFormat("%.3f GB/s bus", m.bus_bw_gbps());
      else if (m.has_alg_bw_gbps()) rate = absl::StrFormat("%.3f GB/s", m.alg_bw_gbps());
      std::cout << absl::StrFormat("%-22s %-17s %-4d %-28s %-11s %s\n", r.provenance().agent_id(),
                                   probe, r.rank(), m.name(), HumanSeconds(m.median_seconds()),
                                   rate);
    }
  }
  std::cout << resp.results_size() << " result(s)\n";
  return kExitOk;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(measurements, "list stored probe measurements of a cluster",
                         moetune::cli::RunMeasurements);
