// moetune agents [--cluster NAME] [--format text|json]: the registered agents,
// their liveness and straggler flags.
#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

int RunAgents(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand("agents", "agents [--cluster NAME] [--format text|json]", argv,
                          {{"cluster", false, "only this cluster"},
                           {"format", false, "text (default) or json"}},
                          &args, &call, &code)) {
    return code;
  }
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("agents", "--format must be text or json, got '" + format + "'");
  }
  v1::ListAgentsRequest req;
  req.set_cluster(args.GetOr("cluster", ""));
  v1::ListAgentsResponse resp;
  grpc::Status s = call.stub->ListAgents(call.Context().get(), req, &resp);
  if (!s.ok()) return call.Error(s);
  if (format == "json") {
    std::cout << ToJson(resp) << std::endl;
    return kExitOk;
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  std::cout << absl::StrFormat("%-28s %-6s %-5s %-8s %-10s %s\n", "AGENT", "STATE", "BACK",
                               "DEVICES", "SEEN", "STRAGGLER");
  for (const v1::AgentInfo& a : resp.agents()) {
    std::string straggler = "-";
    if (a.stragglers_size() > 0) {
      double worst = 0;
      for (const auto& f : a.stragglers()) worst = std::max(worst, f.ratio());
      straggler = absl::StrFormat("%d probe(s), up to %.2fx peers", a.stragglers_size(), worst);
    }
    std::cout << absl::StrFormat(
        "%-28s %-6s %-5s %-8d %-10s %s\n", a.agent_id(),
        a.state() == v1::AGENT_STATE_LIVE ? "live" : "lost",
        a.backend() == v1::BACKEND_CUDA ? "cuda" : "cpu", a.devices_size(),
        absl::StrFormat("%.1fs ago", (now_ms - a.last_seen_unix_ms()) / 1000.0), straggler);
  }
  if (resp.agents_size() == 0) std::cout << "(no agents registered)\n";
  return kExitOk;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(agents, "list agents, their liveness and stragglers",
                         moetune::cli::RunAgents);
