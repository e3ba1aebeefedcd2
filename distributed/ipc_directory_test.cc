#include "distributed/ipc_directory.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace inferno {
namespace {

bool Exists(const std::string& path) {
  struct stat info {};
  return lstat(path.c_str(), &info) == 0;
}

// A pid that ran a moment ago and has been reaped.
pid_t PidOfAnEndedProcess() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(IpcDirectory, IsPrivateToTheUserAndRemovedWithWhatItHolds) {
  std::string path;
  {
    Result<IpcDirectory> directory = IpcDirectory::Create();
    ASSERT_TRUE(directory.ok()) << directory.error().ToString();
    path = directory->path();
    EXPECT_LE(path.size(), 80u);
    struct stat info {};
    ASSERT_EQ(lstat(path.c_str(), &info), 0);
    EXPECT_TRUE(S_ISDIR(info.st_mode));
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    EXPECT_EQ(info.st_uid, getuid());
    // A socket file that ZeroMQ failed to remove.
    FILE* left = std::fopen((path + "/rank-0").c_str(), "w");
    ASSERT_NE(left, nullptr);
    std::fclose(left);
    IpcDirectory moved(std::move(*directory));
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(Exists(path)) << path;
}

TEST(IpcDirectory, CreateRemovesDirectoriesOfEndedProcessesOnly) {
  Result<IpcDirectory> live = IpcDirectory::Create();
  ASSERT_TRUE(live.ok()) << live.error().ToString();
  const std::string base = live->path().substr(0, live->path().rfind('/'));
  // What a SIGKILLed rank leaves: its directory with a socket file in it.
  const std::string stale = base + "/inferno-ipc-" + std::to_string(getuid()) + "-" +
                            std::to_string(PidOfAnEndedProcess()) + "-test01";
  ASSERT_EQ(mkdir(stale.c_str(), 0700), 0) << stale;
  FILE* left = std::fopen((stale + "/rank-1").c_str(), "w");
  ASSERT_NE(left, nullptr);
  std::fclose(left);
  Result<IpcDirectory> next = IpcDirectory::Create();
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_FALSE(Exists(stale)) << stale;
  EXPECT_TRUE(Exists(live->path())) << "the directory of a running process was removed";
}

}  // namespace
}  // namespace inferno
