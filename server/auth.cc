#include "server/auth.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace moetune::server {
namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 4096;
constexpr char kBearer[] = "Bearer ";

bool PrintableNoSpace(absl::string_view s) {
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

std::string RolesText(uint8_t roles) {
  std::string out;
  for (Role r : {Role::kAgent, Role::kUser}) {
    if (roles & static_cast<uint8_t>(r)) absl::StrAppend(&out, out.empty() ? "" : "+", RoleName(r));
  }
  return out.empty() ? "none" : out;
}

}  // namespace

const char* RoleName(Role role) { return role == Role::kAgent ? "agent" : "user"; }

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte position up to the longer length is visited whatever the
  // contents; differences are OR-ed together, never branched on.
  const size_t n = std::max(a.size(), b.size());
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text,
                                                       absl::string_view file_label) {
  std::vector<TokenEntry> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat(file_label, ":", line_no);
    if (fields.size() > 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected TOKEN or NAME TOKEN, got ", fields.size(), " fields"));
    }
    TokenEntry e;
    e.name = fields.size() == 2 ? std::string(fields[0]) : where;
    absl::string_view token = fields.back();
    if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": token must be ", kMinTokenBytes,
                                                     " to ", kMaxTokenBytes, " bytes, got ",
                                                     token.size()));
    }
    if (!PrintableNoSpace(token)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token must be printable ASCII without spaces"));
    }
    e.token = std::string(token);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::vector<TokenEntry>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string msg = absl::StrCat("token file ", path, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(msg) : absl::NotFoundError(msg);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  absl::StatusOr<std::vector<TokenEntry>> tokens = ParseTokenFile(ss.str(), path);
  if (tokens.ok() && tokens->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, " holds no token"));
  }
  return tokens;
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::Create(std::vector<TokenEntry> agent_tokens,
                                                              std::vector<TokenEntry> user_tokens) {
  TokenAuthenticator a;
  a.enabled_ = true;
  auto add = [&a](TokenEntry& e, Role role) {
    for (Known& k : a.tokens_) {
      if (k.token == e.token) {  // same token in both files: both roles
        k.roles |= static_cast<uint8_t>(role);
        return;
      }
    }
    a.tokens_.push_back({std::move(e.name), std::move(e.token), static_cast<uint8_t>(role)});
  };
  for (TokenEntry& e : agent_tokens) add(e, Role::kAgent);
  for (TokenEntry& e : user_tokens) add(e, Role::kUser);
  if (a.tokens_.empty()) return absl::InvalidArgumentError("authentication enabled without tokens");
  return a;
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFiles(const std::string& agent_file,
                                                                 const std::string& user_file) {
  if (agent_file.empty() && user_file.empty()) return TokenAuthenticator();
  std::vector<TokenEntry> agents, users;
  if (!agent_file.empty()) {
    absl::StatusOr<std::vector<TokenEntry>> t = ReadTokenFile(agent_file);
    if (!t.ok()) return t.status();
    agents = std::move(*t);
  }
  if (!user_file.empty()) {
    absl::StatusOr<std::vector<TokenEntry>> t = ReadTokenFile(user_file);
    if (!t.ok()) return t.status();
    users = std::move(*t);
  }
  return Create(std::move(agents), std::move(users));
}

absl::StatusOr<Principal> TokenAuthenticator::Authorize(absl::string_view authorization, Role role,
                                                        absl::string_view method) const {
  if (!enabled_) return Principal{"anonymous", 3};
  if (!absl::StartsWith(authorization, kBearer)) {
    return absl::UnauthenticatedError(
        absl::StrCat(method, " needs a bearer token (metadata 'authorization: Bearer TOKEN')"));
  }
  const absl::string_view presented = authorization.substr(sizeof(kBearer) - 1);
  const Known* match = nullptr;
  for (const Known& k : tokens_) {  // no early exit: every token is compared
    const bool eq = ConstantTimeEquals(presented, k.token);
    if (eq && match == nullptr) match = &k;
  }
  if (match == nullptr) {
    return absl::UnauthenticatedError(absl::StrCat(method, ": the bearer token is not valid"));
  }
  Principal p{match->name, match->roles};
  if (!p.Has(role)) {
    return absl::PermissionDeniedError(absl::StrCat("token '", p.name, "' has role ",
                                                    RolesText(p.roles), "; ", method,
                                                    " needs role ", RoleName(role)));
  }
  return p;
}

}  // namespace moetune::server
