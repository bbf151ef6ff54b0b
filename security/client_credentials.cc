#include "security/client_credentials.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <grpcpp/create_channel.h>
#include <grpcpp/support/client_interceptor.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace moetune::security {
namespace {

namespace gx = ::grpc::experimental;

absl::StatusOr<std::string> ReadFile(const char* option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(option, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class BearerInterceptor : public gx::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* value) : value_(value) {}
  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *value_});
    }
    methods->Proceed();
  }

 private:
  const std::string* value_;
};

class BearerFactory : public gx::ClientInterceptorFactoryInterface {
 public:
  explicit BearerFactory(std::string token) : value_(absl::StrCat("Bearer ", token)) {}
  gx::Interceptor* CreateClientInterceptor(gx::ClientRpcInfo*) override {
    return new BearerInterceptor(&value_);
  }

 private:
  const std::string value_;  // outlives every call: the channel owns the factory
};

}  // namespace

absl::StatusOr<std::string> TokenFromFileText(const std::string& text, const std::string& path) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    return std::string(fields.back());
  }
  return absl::InvalidArgumentError(absl::StrCat("token file ", path, " holds no token"));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientSecurityOptions& o,
                                                           const grpc::ChannelArguments& args) {
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments channel_args = args;
  if (o.tls_ca.empty()) {
    if (!o.tls_cert.empty() || !o.tls_key.empty()) {
      return absl::InvalidArgumentError("--tls_cert/--tls_key need --tls_ca (the server's CA)");
    }
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadFile("--tls_ca", o.tls_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (o.tls_cert.empty() != o.tls_key.empty()) {
      return absl::InvalidArgumentError("--tls_cert and --tls_key must be given together");
    }
    if (!o.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadFile("--tls_cert", o.tls_cert);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadFile("--tls_key", o.tls_key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(ssl);
    if (!o.tls_server_name.empty()) {
      channel_args.SetSslTargetNameOverride(o.tls_server_name);
    }
  }
  if (o.token_file.empty()) return grpc::CreateCustomChannel(target, creds, channel_args);
  absl::StatusOr<std::string> text = ReadFile("--token_file", o.token_file);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::string> token = TokenFromFileText(*text, o.token_file);
  if (!token.ok()) return token.status();
  std::vector<std::unique_ptr<gx::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerFactory>(*token));
  return gx::CreateCustomChannelWithInterceptors(target, creds, channel_args,
                                                 std::move(interceptors));
}

}  // namespace moetune::security
