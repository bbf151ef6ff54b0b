// Minimal flag parsing for `moetune` subcommands.
//
// Accepts `--key value`, `--key=value` and bare boolean `--key`; '_' and '-'
// in flag names are interchangeable (--top-k == --top_k). Every flag a
// subcommand reads must be declared; anything else is an InvalidArgument naming
// the flag, so typos never pass silently.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace moetune::cli {

struct FlagSpec {
  std::string name;       // without the leading "--"
  bool is_boolean = false;  // takes no value
  std::string help;
};

class Args {
 public:
  // Parses args against specs. Positional arguments (not starting with "--")
  // are kept in order.
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& args,
                                    const std::vector<FlagSpec>& specs);

  bool Has(const std::string& name) const;
  std::optional<std::string> Get(const std::string& name) const;
  std::string GetOr(const std::string& name, const std::string& fallback) const;
  // Integer flag; InvalidArgument naming the flag and value when malformed.
  absl::StatusOr<std::optional<long long>> GetInt(const std::string& name) const;
  absl::StatusOr<std::optional<double>> GetDouble(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // "  --name  help" lines for usage messages.
  static std::string Usage(const std::vector<FlagSpec>& specs);

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The optimizer-state CPU offload as `plan` and `predict` take it:
// --optimizer-offload-fraction F (a number in [0, 1], default 0) and the
// boolean --optimizer-offload-overlap (needs F > 0). Both flags must be
// declared by the caller. InvalidArgument naming the flag otherwise.
struct OptimizerOffloadFlags {
  double fraction = 0;
  bool overlap = false;
};
absl::StatusOr<OptimizerOffloadFlags> ParseOptimizerOffloadFlags(const Args& args);

}  // namespace moetune::cli
