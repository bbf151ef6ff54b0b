#include "tools/cli/command_registry.h"

namespace moetune::cli {

std::map<std::string, Command>& Commands() {
  static auto* commands = new std::map<std::string, Command>();
  return *commands;
}

}  // namespace moetune::cli
