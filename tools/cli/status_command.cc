// moetune status JOB [--format text|json]: a plan job's state and plans.
#include <iostream>

#include "tools/cli/command_registry.h"
#include "tools/cli/rpc_client.h"

namespace moetune::cli {
namespace {

int RunStatus(const std::vector<std::string>& argv) {
  Args args;
  ServerCall call;
  int code = 0;
  if (!StartServerCommand("status", "status JOB [--format text|json]", argv,
                          {{"format", false, "text (default) or json"}}, &args, &call, &code)) {
    return code;
  }
  const std::string format = args.GetOr("format", "text");
  if (format != "text" && format != "json") {
    return BadInput("status", "--format must be text or json, got '" + format + "'");
  }
  if (args.positional().size() != 1) return BadInput("status", "usage: moetune status JOB");
  moetune::v1::GetJobRequest req;
  req.set_job_id(args.positional()[0]);
  moetune::v1::Job job;
  grpc::Status s = call.stub->GetJob(call.Context().get(), req, &job);
  if (!s.ok()) return call.Error(s);
  if (format == "json") {
    std::cout << ToJson(job) << std::endl;
  } else {
    std::cout << JobSummary(job);
  }
  return kExitOk;
}

}  // namespace
}  // namespace moetune::cli

MOETUNE_REGISTER_COMMAND(status, "show a plan job", moetune::cli::RunStatus);
