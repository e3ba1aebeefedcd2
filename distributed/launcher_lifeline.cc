#include "distributed/launcher_lifeline.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace inferno {
namespace {

// Blocks until the launcher's end of the pipe closes, then ends the process.
// Nothing is ever written to the pipe: readable means end of file.
[[noreturn]] void WatchUntilClosed(int fd) {
  pollfd watched{fd, POLLIN, 0};
  while (poll(&watched, 1, -1) < 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "rank (pid %d): the launcher that started this rank is gone; exiting\n",
               static_cast<int>(getpid()));
  std::fflush(stderr);
  _exit(1);
}

}  // namespace

Status WatchLauncherLifeline(const std::function<const char*(const char*)>& getenv) {
  const char* text = getenv(kLifelineVariable);
  if (text == nullptr) return {};
  char* end = nullptr;
  errno = 0;
  const long fd = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || fd < 0 || fd > 1 << 20) {
    return Error::InvalidArgument(std::string(kLifelineVariable) + ": '" + text +
                                  "' is not a descriptor number");
  }
  if (fcntl(static_cast<int>(fd), F_GETFD) < 0) {
    return Error::InvalidArgument(std::string(kLifelineVariable) + ": descriptor " + text +
                                  " is not open (was this rank started by launch?)");
  }
  static std::once_flag started;
  std::call_once(started, [fd] {
    // Children this rank starts must not keep the launcher's lifeline alive
    // in its place, nor see it as theirs.
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    std::thread(WatchUntilClosed, static_cast<int>(fd)).detach();
  });
  return {};
}

}  // namespace inferno
