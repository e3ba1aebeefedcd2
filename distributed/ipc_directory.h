// IpcDirectory: a private directory for a rank's ipc:// socket files.
//
// ZeroMQ ipc:// endpoints are Unix socket files; whoever may open the file
// may connect. Abstract names (ipc://@name) have no permissions at all: any
// process in the network namespace can connect. A rank therefore binds its
// ipc:// endpoint inside a directory that only its user can enter (mode 0700,
// owned by the user, checked after creation), named
//   $XDG_RUNTIME_DIR/inferno-ipc-<uid>-<pid>-XXXXXX  (when XDG_RUNTIME_DIR is
//                                                     set, absolute, short)
//   /tmp/inferno-ipc-<uid>-<pid>-XXXXXX               (otherwise)
// The destructor removes the directory and what is left in it. A process
// killed before its destructors run leaves its directory behind; Create
// first removes the directories of this user whose pid no longer runs, so
// leftovers do not accumulate (a reused pid keeps one alive until the next
// start after that process ends).
//
// Thread-safety: Create may be called from several threads at once; one
// IpcDirectory is not shared between threads while it is destroyed.
#pragma once

#include <string>

#include "base/error.h"

namespace inferno {

class IpcDirectory {
 public:
  // Creates a fresh private directory (after sweeping stale ones, see
  // above). Errors: Io naming the path when it cannot be created, or when
  // the created directory is not owned by this user with mode 0700.
  static Result<IpcDirectory> Create();

  IpcDirectory(IpcDirectory&& other) noexcept;
  IpcDirectory& operator=(IpcDirectory&&) = delete;
  IpcDirectory(const IpcDirectory&) = delete;
  IpcDirectory& operator=(const IpcDirectory&) = delete;
  ~IpcDirectory();

  // The directory's absolute path (at most 80 characters, so that a socket
  // file name of up to 20 characters fits Unix socket paths).
  const std::string& path() const { return path_; }

 private:
  explicit IpcDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;  // empty once moved from
};

}  // namespace inferno
