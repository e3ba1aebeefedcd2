#include "distributed/host_identity.h"

#include <unistd.h>

#include <fstream>
#include <random>

namespace inferno {
namespace {

// The target of the namespace link /proc/self/ns/<kind>, e.g. "net:[4026531840]".
std::string NamespaceOf(const char* kind) {
  char target[64] = {};
  const std::string link = std::string("/proc/self/ns/") + kind;
  const ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
  return length > 0 ? std::string(target, static_cast<size_t>(length)) : "";
}

}  // namespace

std::string HostIdentity() {
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  char hostname[256] = {};
  const std::string host = gethostname(hostname, sizeof(hostname) - 1) == 0 ? hostname : "";
  std::string identity;
  bool complete = !boot_id.empty() && !host.empty();
  identity = (boot_id.empty() ? "?" : boot_id) + " " + (host.empty() ? "?" : host);
  for (const char* kind : {"net", "ipc", "pid"}) {
    const std::string name = NamespaceOf(kind);
    complete = complete && !name.empty();
    identity += " " + (name.empty() ? std::string("?") : name);
  }
  if (!complete) identity += " unknown-" + std::to_string(std::random_device()());
  return identity;
}

}  // namespace inferno
