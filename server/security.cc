#include "server/security.h"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, agent_token_file, "",
          "file of bearer tokens for role agent (one per line: TOKEN or NAME TOKEN)");
ABSL_FLAG(std::string, user_token_file, "",
          "file of bearer tokens for role user (one per line: TOKEN or NAME TOKEN)");
ABSL_FLAG(bool, insecure, false,
          "allow listening on a non-loopback address without token files");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve over TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: agents must present a client certificate it signed (mutual TLS)");
ABSL_FLAG(int32_t, max_message_bytes, 16 << 20, "largest request accepted");
ABSL_FLAG(int32_t, max_samples_per_measurement, 100000, "samples in one measurement");
ABSL_FLAG(int32_t, max_calls_per_agent, 16, "calls of one agent in flight at once");
ABSL_FLAG(int32_t, max_jobs_per_user, 4, "plan jobs of one user queued or running at once");

namespace moetune::server {
namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  if (!absl::StrContains(pem, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", path, " is not PEM"));
  }
  return pem;
}

}  // namespace

SecurityConfig SecurityConfigFromFlags(const std::string& listen) {
  SecurityConfig c;
  c.listen = listen;
  c.agent_token_file = absl::GetFlag(FLAGS_agent_token_file);
  c.user_token_file = absl::GetFlag(FLAGS_user_token_file);
  c.insecure = absl::GetFlag(FLAGS_insecure);
  c.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  c.tls_key = absl::GetFlag(FLAGS_tls_key);
  c.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  c.limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  c.limits.max_samples_per_measurement = absl::GetFlag(FLAGS_max_samples_per_measurement);
  c.limits.max_concurrent_calls_per_agent = absl::GetFlag(FLAGS_max_calls_per_agent);
  c.limits.max_jobs_in_flight_per_user = absl::GetFlag(FLAGS_max_jobs_per_user);
  return c;
}

bool IsLoopbackAddress(const std::string& listen) {
  std::string host = listen;
  if (absl::StartsWith(host, "[")) {
    const size_t end = host.find(']');
    host = end == std::string::npos ? "" : host.substr(1, end - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return memcmp(&v6, &kLoopback, sizeof(v6)) == 0;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<ServingSecurity>> ServingSecurity::Create(
    const SecurityConfig& config) {
  std::unique_ptr<ServingSecurity> s(new ServingSecurity());
  s->config_ = config;
  absl::StatusOr<TokenAuthenticator> auth =
      TokenAuthenticator::FromFiles(config.agent_token_file, config.user_token_file);
  if (!auth.ok()) return auth.status();
  s->auth_ = std::move(*auth);
  if (!s->auth_.enabled() && !IsLoopbackAddress(config.listen) && !config.insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to listen on ", config.listen,
        " without authentication: give --agent_token_file and --user_token_file, listen on "
        "127.0.0.1, or pass --insecure (trusted networks only)"));
  }
  if (config.limits.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_bytes must be > 0, got ", config.limits.max_message_bytes));
  }
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must be given together");
  }
  if (!config.tls_client_ca.empty() && config.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
  }
  if (config.tls_cert.empty()) {
    s->credentials_ = grpc::InsecureServerCredentials();
    return s;
  }
  absl::StatusOr<std::string> cert = ReadPem("tls_cert", config.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls_key", config.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions opts;
  opts.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls_client_ca", config.tls_client_ca);
    if (!ca.ok()) return ca.status();
    opts.pem_root_certs = *ca;
    // Verified when presented; agent calls then insist on one (users may
    // come with a token only).
    opts.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  s->credentials_ = grpc::SslServerCredentials(opts);
  return s;
}

std::string ServingSecurity::Describe() const {
  std::string out = auth_.enabled()
                        ? absl::StrCat("authentication on (", auth_.token_count(), " tokens)")
                        : (IsLoopbackAddress(config_.listen)
                               ? std::string("authentication OFF (no token files): loopback only")
                               : std::string("authentication OFF (--insecure)"));
  absl::StrAppend(&out, ", TLS ",
                  config_.tls_cert.empty()
                      ? "off"
                      : (config_.tls_client_ca.empty() ? "on" : "on, mutual for agents"));
  absl::StrAppend(&out, ", limits: ", config_.limits.max_message_bytes, " B/message, ",
                  config_.limits.max_samples_per_measurement, " samples/measurement, ",
                  config_.limits.max_concurrent_calls_per_agent, " calls/agent, ",
                  config_.limits.max_jobs_in_flight_per_user, " jobs/user");
  return out;
}

GuardOptions ServingSecurity::Guard() const {
  GuardOptions g;
  g.auth = &auth_;
  g.limits = config_.limits;
  g.require_agent_client_cert = !config_.tls_client_ca.empty();
  return g;
}

grpc::Service* ServingSecurity::Agent(moetune::v1::AgentService::Service* inner) {
  agent_ = std::make_unique<GuardedAgentService>(inner, Guard());
  return agent_.get();
}

grpc::Service* ServingSecurity::Planner(moetune::v1::PlannerService::Service* inner,
                                        std::function<bool(const std::string&)> job_finished) {
  planner_ = std::make_unique<GuardedPlannerService>(inner, Guard(), std::move(job_finished));
  return planner_.get();
}

}  // namespace moetune::server
