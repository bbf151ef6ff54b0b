#include "tools/cli/args.h"

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace moetune::cli {
namespace {

// Flags are matched with '_' and '-' treated alike: --top-k and --top_k are
// one flag, so scripts written either way keep working.
std::string Canonical(std::string name) {
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

}  // namespace

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& args,
                                 const std::vector<FlagSpec>& specs) {
  std::map<std::string, const FlagSpec*> by_name;
  for (const FlagSpec& s : specs) by_name[Canonical(s.name)] = &s;
  Args out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      out.positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    name = Canonical(name);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (it->second->is_boolean) {
      if (value && *value != "true" && *value != "false") {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " takes true or false, got '", *value, "'"));
      }
      out.values_[name] = value.value_or("true");
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = args[++i];
    }
    out.values_[name] = *value;
  }
  return out;
}

bool Args::Has(const std::string& name) const { return values_.count(Canonical(name)) > 0; }

std::optional<std::string> Args::Get(const std::string& name) const {
  auto it = values_.find(Canonical(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::GetOr(const std::string& name, const std::string& fallback) const {
  return Get(name).value_or(fallback);
}

absl::StatusOr<std::optional<long long>> Args::GetInt(const std::string& name) const {
  auto v = Get(name);
  if (!v) return std::optional<long long>();
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --", name, " needs an integer, got '", *v, "'"));
  }
  return std::optional<long long>(parsed);
}

absl::StatusOr<std::optional<double>> Args::GetDouble(const std::string& name) const {
  auto v = Get(name);
  if (!v) return std::optional<double>();
  errno = 0;
  char* end = nullptr;
  double parsed = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || errno == ERANGE) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --", name, " needs a number, got '", *v, "'"));
  }
  return std::optional<double>(parsed);
}

std::string Args::Usage(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& s : specs) {
    absl::StrAppend(&out, "  --", s.name, s.is_boolean ? "" : " VALUE", "\n      ", s.help,
                    "\n");
  }
  return out;
}

absl::StatusOr<OptimizerOffloadFlags> ParseOptimizerOffloadFlags(const Args& args) {
  OptimizerOffloadFlags out;
  if (args.Has("optimizer-offload-fraction")) {
    absl::StatusOr<std::optional<double>> f = args.GetDouble("optimizer-offload-fraction");
    if (!f.ok()) return f.status();
    if (!f->has_value() || !(**f >= 0.0 && **f <= 1.0)) {
      return absl::InvalidArgumentError("--optimizer-offload-fraction must be a number in [0, 1]");
    }
    out.fraction = **f;
  }
  out.overlap = args.Has("optimizer-offload-overlap");
  if (out.overlap && out.fraction <= 0) {
    return absl::InvalidArgumentError(
        "--optimizer-offload-overlap needs --optimizer-offload-fraction > 0");
  }
  return out;
}

}  // namespace moetune::cli
