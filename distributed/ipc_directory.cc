#include "distributed/ipc_directory.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace inferno {
namespace {

constexpr size_t kMaxBaseLength = 56;  // + "/inferno-ipc-<uid>-<pid>-XXXXXX" <= 80

std::string Prefix() { return "inferno-ipc-" + std::to_string(getuid()) + "-"; }

std::string BaseDirectory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/' && std::strlen(runtime) <= kMaxBaseLength) return runtime;
  return "/tmp";
}

// Removes the entries of `path` (socket files; no subdirectories are made
// there) and then `path`; errors are ignored, what remains is swept later.
void RemoveDirectory(const std::string& path) {
  if (DIR* dir = opendir(path.c_str())) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") unlink((path + "/" + name).c_str());
    }
    closedir(dir);
  }
  rmdir(path.c_str());
}

// Removes this user's directories in `base` whose creating process is gone.
void SweepStale(const std::string& base) {
  DIR* dir = opendir(base.c_str());
  if (dir == nullptr) return;
  const std::string prefix = Prefix();
  std::vector<std::string> stale;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + prefix.size(), nullptr, 10));
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string path = base + "/" + name;
    struct stat info {};
    if (lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == getuid()) {
      stale.push_back(path);
    }
  }
  closedir(dir);
  for (const std::string& path : stale) RemoveDirectory(path);
}

}  // namespace

Result<IpcDirectory> IpcDirectory::Create() {
  const std::string base = BaseDirectory();
  SweepStale(base);
  std::string path = base + "/" + Prefix() + std::to_string(getpid()) + "-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    return Error::Io("cannot create a private directory for ipc sockets " + path + ": " +
                     std::strerror(errno));
  }
  IpcDirectory directory(path);
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != getuid() ||
      (info.st_mode & 0777) != 0700) {
    return Error::Io("the ipc socket directory " + path + " is not a directory of mode 0700 owned by uid " +
                     std::to_string(getuid()));
  }
  return directory;
}

IpcDirectory::IpcDirectory(IpcDirectory&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

IpcDirectory::~IpcDirectory() {
  if (!path_.empty()) RemoveDirectory(path_);
}

}  // namespace inferno
