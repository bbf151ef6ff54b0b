// Client side of moetune's transport security, shared by moetune-agent and
// the moetune CLI: a channel that sends `authorization: Bearer TOKEN` on every
// call (token read from a file) and speaks TLS, with a client certificate for
// mutual TLS, when asked to.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"

namespace moetune::security {

struct ClientSecurityOptions {
  std::string token_file;  // first TOKEN (or NAME TOKEN) line is sent
  std::string tls_ca;      // PEM roots that signed the server's certificate: use TLS
  std::string tls_cert;    // PEM client certificate (mutual TLS), with tls_key
  std::string tls_key;
  std::string tls_server_name;  // overrides the name checked in the server's certificate
};

// The token in a token file's text: the last field of its first line that is
// neither blank nor a comment. InvalidArgument when there is none.
absl::StatusOr<std::string> TokenFromFileText(const std::string& text, const std::string& path);

// A channel to `target` with these options (insecure and token-less when all
// are empty). InvalidArgument / NotFound naming the option and file.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientSecurityOptions& options,
                                                           const grpc::ChannelArguments& args);

}  // namespace moetune::security
