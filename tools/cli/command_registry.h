// Subcommands of the `moetune` command-line client register themselves here.
//
// Each subcommand lives in its own library (tools/cli/<name>_command.cc, linked
// with alwayslink = 1) and registers a handler at static-initialisation time:
//
//   MOETUNE_REGISTER_COMMAND(predict, "predict one training step", RunPredict);
//
// Exit codes follow the CLI contract: 0 ok, 1 server or network failure,
// 2 bad input, 3 no feasible plan.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace moetune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInfeasible = 3;

// args excludes the program name and the subcommand itself.
using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string summary;
  CommandFn run;
};

// The process-wide table, ordered by name for `moetune help`.
std::map<std::string, Command>& Commands();

struct CommandRegistrar {
  CommandRegistrar(const std::string& name, std::string summary, CommandFn run) {
    Commands()[name] = Command{std::move(summary), std::move(run)};
  }
};

}  // namespace moetune::cli

#define MOETUNE_REGISTER_COMMAND(name, summary, fn)                       \
  static ::moetune::cli::CommandRegistrar moetune_cli_registrar_##name( \
      #name, summary, fn)
