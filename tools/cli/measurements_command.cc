// moetune measurements --cluster NAME [--campaign ID] [--limit N]: stored
// probe results with their provenance.
#include <iostream>

#include "absl/strings/str_format.h"
#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

int RunMeasurements(const std::vector<std::string>& argv) {
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
