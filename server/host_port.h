// HostPort: a HOST:PORT flag value (serve --listen, serve_front --listen and
// --backend), split at its last colon.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace inferno {

struct HostPort {
  std::string host;
  int port = 0;  // 0..65535 (0: any free port, where the flag allows it)
};

// Parses `text`, the value of `--flag`. Errors: InvalidArgument, "--listen:
// 'x' is not HOST:PORT" or "--listen: 'x' is not a port number".
Result<HostPort> ParseHostPort(std::string_view flag, const std::string& text);

}  // namespace inferno
