// moetune fetch JOB --format json|megatron|maxtext|html [--rank N] [--output PATH]:
// the tuned config of a finished plan job, as the planner's emitters wrote it
// (html: the plan report page of the job, best plan only).
#include <fstream>
#include <iostream>

#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

namespace v1 = ::moetune::v1;

int RunFetch(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand("fetch", "fetch JOB --format json|megatron|maxtext|html [--rank N] [--output PATH]",
                          argv,
                          {{"format", false, "json (default), megatron, maxtext or html (report page)"},
                           {"rank", false, "which plan, 1 = best (default)"},
                           {"output", false, "write to this file instead of stdout"}},
                          &args, &call, &code)) {
    return code;
  }
  if (args.positional().size() != 1) return BadInput("fetch", "usage: moetune fetch JOB --format ...");
  const std::string format = args.GetOr("format", "json");
  v1::GetTunedConfigRequest req;
  req.set_job_id(args.positional()[0]);
  if (format == "json") {
    req.set_format(v1::CONFIG_FORMAT_JSON);
  } else if (format == "megatron") {
    req.set_format(v1::CONFIG_FORMAT_MEGATRON);
  } else if (format == "maxtext") {
    req.set_format(v1::CONFIG_FORMAT_MAXTEXT);
  } else if (format == "html") {
    req.set_format(v1::CONFIG_FORMAT_HTML);
  } else {
    return BadInput("fetch", "--format must be json, megatron, maxtext or html, got '" + format + "'");
  }
  auto rank = args.GetInt("rank");
  if (!rank.ok()) return BadInput("fetch", std::string(rank.status().message()));
  if (*rank) {
    if (**rank < 1 || **rank > 1000) return BadInput("fetch", "--rank must be 1..1000");
    req.set_plan_rank(static_cast<int32_t>(**rank));
  }
  v1::GetTunedConfigResponse resp;
  grpc::Status s = call.stub->GetTunedConfig(call.Context().get(), req, &resp);
  if (!s.ok()) return call.Error(s);
  if (auto path = args.Get("output")) {
    std::ofstream out(*path, std::ios::binary);
    out << resp.content();
    if (!out) {
      std::cerr << "moetune fetch: cannot write '" << *path << "'" << std::endl;
      return kExitFailure;
    }
    return kExitOk;
  }
  std::cout << resp.content();
  if (!resp.content().empty() && resp.content().back() != '\n') std::cout << "\n";
  return kExitOk;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(fetch, "fetch a tuned config (json, megatron, maxtext or html)",
                         moetune::cli::RunFetch);
