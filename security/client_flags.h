// ABSL flags of a daemon's client security (moetune-agent): --token_file,
// --tls_ca, --tls_cert, --tls_key, --tls_server_name.
#pragma once

#include "security/client_credentials.h"

namespace moetune::security {
ClientSecurityOptions ClientSecurityFromFlags();
}  // namespace moetune::security
