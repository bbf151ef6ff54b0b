// Shared parts of the subcommands that talk to moetune-server: the --server
// and --timeout flags, channels, deadlines, and the mapping of RPC errors to
// one stderr line and an exit code (2 bad input, 1 server or network failure).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "google/protobuf/message.h"
#include "proto/planner_service.grpc.pb.h"
#include "tools/cli/args.h"

namespace moetune::cli {

// Flags every server subcommand takes: --server, --timeout_s, --help.
std::vector<FlagSpec> ServerFlags(std::vector<FlagSpec> own);

struct ServerCall {
  std::string command;  // "agents", for messages
  std::string server;   // HOST:PORT
  double timeout_s = 30;
  std::unique_ptr<moetune::v1::PlannerService::Stub> stub;

  // A context with this call's deadline.
  std::unique_ptr<grpc::ClientContext> Context(double timeout_s = 0) const;
  // One line "moetune <cmd>: <CODE>: <server message> (server HOST:PORT)";
  // returns the exit code.
  int Error(const grpc::Status& status) const;
};

// Parses args against specs (plus ServerFlags). On --help prints usage and
// returns kExitOk in *exit_code; on bad flags prints one line and returns
// kExitBadInput. Otherwise returns true and fills call/args.
bool StartServerCommand(const std::string& command, const std::string& usage,
                        const std::vector<std::string>& argv, const std::vector<FlagSpec>& specs,
                        Args* args, ServerCall* call, int* exit_code);

// Prints "moetune <command>: <message>" to stderr; returns kExitBadInput.
int BadInput(const std::string& command, const std::string& message);

// The message as JSON (proto3 JSON mapping, field names as in the proto).
std::string ToJson(const google::protobuf::Message& m, bool multiline = true);

// "1.50 GB" style sizes, "12.3 ms" durations.
std::string HumanBytes(double bytes);
std::string HumanSeconds(double seconds);
// A one-line progress bar "[#####.....] 12/24" for terminals.
std::string ProgressBar(int64_t done, int64_t total, int width = 30);
bool StderrIsTerminal();

}  // namespace moetune::cli

namespace moetune::cli {
// Text summary of a plan job: state, progress, best plans and predictions.
std::string JobSummary(const moetune::v1::Job& job);

// One terminal line of a running campaign for `calibrate --wait`: tasks
// done (and failed) of the total, the probes running now with their world
// size, and the time since waiting began, e.g.
//   [##########....................] 4/12 tasks, 1 failed | running: grouped_gemm, collective (3 ranks) | 1m05s
std::string CampaignProgressLine(const moetune::v1::Campaign& campaign, double elapsed_seconds);
}  // namespace moetune::cli
