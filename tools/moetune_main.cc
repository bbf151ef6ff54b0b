// moetune: the command-line client. `moetune help` lists the subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli/command_registry.h"

int main(int argc, char** argv) {
  using moetune::cli::Commands;
  std::string name = argc > 1 ? argv[1] : "help";
  if (name == "help" || name == "--help" || name == "-h") {
    std::cout << "usage: moetune <command> [flags]\n\ncommands:\n";
    for (const auto& [n, c] : Commands()) std::cout << "  " << n << "\t" << c.summary << "\n";
    std::cout << "\n`moetune <command> --help` shows a command's flags.\n";
    return argc > 1 ? moetune::cli::kExitOk : moetune::cli::kExitBadInput;
  }
  auto it = Commands().find(name);
  if (it == Commands().end()) {
    std::cerr << "moetune: unknown command '" << name << "' (see `moetune help`)\n";
    return moetune::cli::kExitBadInput;
  }
  return it->second.run(std::vector<std::string>(argv + 2, argv + argc));
}
