#include "security/client_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, token_file, "", "file holding this client's bearer token");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA that signed the server's certificate: connect over TLS");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate for mutual TLS (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "", "name to verify in the server's certificate");

namespace moetune::security {

ClientSecurityOptions ClientSecurityFromFlags() {
  ClientSecurityOptions o;
  o.token_file = absl::GetFlag(FLAGS_token_file);
  o.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  return o;
}

}  // namespace moetune::security
