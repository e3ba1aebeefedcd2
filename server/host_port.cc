#include "server/host_port.h"

namespace inferno {

Result<HostPort> ParseHostPort(std::string_view flag, const std::string& text) {
  const std::string name = "--" + std::string(flag);
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Error::InvalidArgument(name + ": '" + text + "' is not HOST:PORT");
  }
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return Error::InvalidArgument(name + ": '" + port + "' is not a port number");
  }
  return HostPort{text.substr(0, colon), std::stoi(port)};
}

}  // namespace inferno
