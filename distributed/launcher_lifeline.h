// The launcher's lifeline: how a rank notices that the launch that started
// it is gone, however it went (SIGKILL included), even when a shell or
// another wrapper stands between them.
//
// launch opens a pipe per job and keeps its only write end; every rank
// inherits the read end, whose descriptor number travels in
// INFERNO_LIFELINE_FD (through `sh -c`, `env`, `nice` and the like, which keep
// inherited descriptors). When launch dies the kernel closes the write end and
// the read end reports end of file.
//
// Thread-safety: WatchLauncherLifeline may be called from several threads;
// the first call that finds the variable starts the one watcher thread.
#pragma once

#include <functional>

#include "base/error.h"

namespace inferno {

inline constexpr char kLifelineVariable[] = "INFERNO_LIFELINE_FD";

// When `getenv(kLifelineVariable)` names a readable pipe, starts a thread that
// ends this process (one line on stderr naming the launcher, exit status 1)
// within milliseconds of the pipe's end of file. A no-op when the variable is
// unset, and on every later call. Errors: InvalidArgument when the variable
// is not a descriptor number or the descriptor is not open.
Status WatchLauncherLifeline(const std::function<const char*(const char*)>& getenv);

}  // namespace inferno
