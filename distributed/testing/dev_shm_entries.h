// Test support: what /dev/shm holds, so that a test can check that a job,
// even one whose ranks were killed, leaves nothing there.
// Thread-safety: reads the directory; safe from any thread.
#pragma once

#include <dirent.h>

#include <set>
#include <string>

namespace inferno {

// The names in /dev/shm (empty when it cannot be read).
inline std::set<std::string> DevShmEntries() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

}  // namespace inferno
