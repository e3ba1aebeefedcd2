#include "distributed/host_identity.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include <glog/logging.h>
#include <gtest/gtest.h>

namespace inferno {
namespace {

// HostIdentity() as a child process sees it, in a new network namespace if
// `own_network`; nullopt if the child could not enter one.
std::optional<std::string> IdentityOfChild(bool own_network) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  const pid_t child = fork();
  CHECK_GE(child, 0);
  if (child == 0) {
    if (own_network && unshare(CLONE_NEWNET) != 0) _exit(2);
    const std::string identity = HostIdentity();
    _exit(write(fds[1], identity.data(), identity.size()) == static_cast<ssize_t>(identity.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string identity;
  char buffer[256];
  ssize_t got;
  while ((got = read(fds[0], buffer, sizeof(buffer))) > 0) identity.append(buffer, got);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return identity;
}

TEST(HostIdentity, IsTheSameForTwoProcessesOfOneHost) {
  const std::string mine = HostIdentity();
  EXPECT_EQ(HostIdentity(), mine);
  EXPECT_NE(mine.find("net:["), std::string::npos) << mine;
  EXPECT_NE(mine.find("ipc:["), std::string::npos) << mine;
  EXPECT_NE(mine.find("pid:["), std::string::npos) << mine;
  EXPECT_EQ(IdentityOfChild(false), mine);
}

// Needs root, to enter a new network namespace; skipped otherwise.
TEST(HostIdentity, DiffersInAnotherNetworkNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for unshare(CLONE_NEWNET)";
  std::optional<std::string> theirs = IdentityOfChild(true);
  if (!theirs) GTEST_SKIP() << "unshare(CLONE_NEWNET) refused here";
  EXPECT_NE(*theirs, HostIdentity());
}

}  // namespace
}  // namespace inferno
