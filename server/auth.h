// Bearer-token authentication and role-based authorization of RPCs.
//
// Tokens come from files, one per line: `TOKEN` or `NAME TOKEN` (NAME names
// the holder in logs and per-user limits; the token itself is never logged).
// Blank lines and lines starting with '#' are skipped. A token must be 16 to
// 4096 printable ASCII characters without spaces (e.g. `openssl rand -hex 32`).
//
// Two roles: kAgent (AgentService: register, heartbeat, tasks, reports,
// rendezvous) and kUser (PlannerService: predict, plan, jobs, configs,
// agents, calibration, measurements). A token listed in both files holds both.
//
// Clients send `authorization: Bearer TOKEN` metadata. Tokens are compared in
// constant time against every known token (no early exit), so the time a
// check takes does not depend on how much of a guess was right.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace moetune::server {

enum class Role : uint8_t { kAgent = 1, kUser = 2 };
const char* RoleName(Role role);  // "agent", "user"

// True when a and b hold the same bytes; the time taken depends only on the
// lengths, never on the contents.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

struct TokenEntry {
  std::string name;   // from the file, or "<file>:<line>"
  std::string token;  // secret
};

// Parses a token file's text. InvalidArgument naming the line (never echoing
// the token) for malformed lines.
absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text,
                                                       absl::string_view file_label);
// Reads and parses a token file. NotFound / PermissionDenied naming the path
// when it cannot be read; InvalidArgument when it holds no token.
absl::StatusOr<std::vector<TokenEntry>> ReadTokenFile(const std::string& path);

// Who made a call, once authenticated.
struct Principal {
  std::string name;
  uint8_t roles = 0;  // bit set of Role
  bool Has(Role r) const { return (roles & static_cast<uint8_t>(r)) != 0; }
};

class TokenAuthenticator {
 public:
  // Disabled: every call is allowed as principal "anonymous" with both roles.
  TokenAuthenticator() = default;
  // Enabled with the given tokens (either list may be empty: that role then
  // has no holder).
  static absl::StatusOr<TokenAuthenticator> Create(std::vector<TokenEntry> agent_tokens,
                                                   std::vector<TokenEntry> user_tokens);
  // From files; an empty path contributes no tokens. Disabled when both are
  // empty.
  static absl::StatusOr<TokenAuthenticator> FromFiles(const std::string& agent_token_file,
                                                      const std::string& user_token_file);

  bool enabled() const { return enabled_; }
  size_t token_count() const { return tokens_.size(); }

  // Checks the `authorization` metadata value of a call to `method` (for
  // messages) that needs `role`:
  //  * missing, not "Bearer ...", or no token matches: Unauthenticated;
  //  * a valid token without the role: PermissionDenied naming the holder,
  //    its roles and the method.
  absl::StatusOr<Principal> Authorize(absl::string_view authorization, Role role,
                                      absl::string_view method) const;

 private:
  struct Known {
    std::string name;
    std::string token;
    uint8_t roles = 0;
  };
  bool enabled_ = false;
  std::vector<Known> tokens_;
};

}  // namespace moetune::server
