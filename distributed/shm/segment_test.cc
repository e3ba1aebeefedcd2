#include "distributed/shm/segment.h"
#include "distributed/testing/dev_shm_entries.h"

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits (bounded) for the child to exit and returns its exit code; kills it
// and returns -1 if it does not exit in time or dies of a signal.
int ExitCodeOf(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SegmentAddress, RoundTripsThroughText) {
  const SegmentAddress address{1234, 7, 1 << 20};
  Result<SegmentAddress> parsed = SegmentAddress::Parse(address.ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ(parsed->pid, 1234);
  EXPECT_EQ(parsed->fd, 7);
  EXPECT_EQ(parsed->bytes, size_t{1} << 20);
}

TEST(SegmentAddress, ParseRejectsMalformedText) {
  for (const std::string text : {"", "12:3", "12:3:4x", "0:3:4", "12:3:0", "a:b:c"}) {
    Result<SegmentAddress> parsed = SegmentAddress::Parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kInvalidArgument);
  }
}

TEST(SharedSegment, CreatedSegmentIsZeroFilledAndHasNoNameInDevShm) {
  const std::set<std::string> before = DevShmEntries();
  Result<SharedSegment> segment = SharedSegment::Create(1 << 16);
  ASSERT_TRUE(segment.ok()) << segment.error().ToString();
  EXPECT_EQ(DevShmEntries(), before);
  const std::span<std::byte> bytes = segment->bytes();
  EXPECT_EQ(bytes.size(), size_t{1} << 16);
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; }));
}

// The child maps the segment through its address (not the mapping fork
// copied) and writes through it; the parent sees the write in its own mapping.
TEST(SharedSegmentAcrossProcesses, PeerOpensItByAddressAndSharesItsBytes) {
  Result<SharedSegment> segment = SharedSegment::Create(4096);
  ASSERT_TRUE(segment.ok()) << segment.error().ToString();
  segment->bytes()[0] = std::byte{42};
  const SegmentAddress address = segment->address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<SharedSegment> opened = SharedSegment::Open(address);
    if (!opened || opened->bytes()[0] != std::byte{42}) _exit(1);
    opened->bytes()[1] = std::byte{43};
    _exit(0);
  }
  EXPECT_EQ(ExitCodeOf(child), 0);
  EXPECT_EQ(segment->bytes()[1], std::byte{43});
}

TEST(SharedSegment, NoOneCanOpenItAfterStopSharing) {
  Result<SharedSegment> segment = SharedSegment::Create(4096);
  ASSERT_TRUE(segment.ok()) << segment.error().ToString();
  const SegmentAddress address = segment->address();
  segment->StopSharing();
  EXPECT_EQ(segment->address().fd, -1);
  Result<SharedSegment> opened = SharedSegment::Open(address);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().kind, ErrorKind::kIo) << opened.error().ToString();
  segment->bytes()[0] = std::byte{1};  // still mapped
}

TEST(SharedSegmentAcrossProcesses, OpenSaysTheCreatorHasEnded) {
  int address_pipe[2];
  ASSERT_EQ(pipe(address_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<SharedSegment> segment = SharedSegment::Create(4096);
    const std::string text = segment ? segment->address().ToString() : "";
    _exit(write(address_pipe[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(address_pipe[1]);
  char text[64] = {};
  const ssize_t got = read(address_pipe[0], text, sizeof(text) - 1);
  close(address_pipe[0]);
  ASSERT_EQ(ExitCodeOf(child), 0);
  ASSERT_GT(got, 0);
  Result<SegmentAddress> address = SegmentAddress::Parse(std::string(text, got));
  ASSERT_TRUE(address.ok()) << address.error().ToString();
  Result<SharedSegment> opened = SharedSegment::Open(*address);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().kind, ErrorKind::kPeerLost) << opened.error().ToString();
}

// Needs root, to become another user; skipped otherwise.
TEST(SharedSegmentAcrossProcesses, ProcessOfAnotherUserCannotOpenIt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a process as another user";
  Result<SharedSegment> segment = SharedSegment::Create(4096);
  ASSERT_TRUE(segment.ok()) << segment.error().ToString();
  const SegmentAddress address = segment->address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    constexpr uid_t kNobody = 65534;
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    Result<SharedSegment> opened = SharedSegment::Open(address);
    _exit(!opened.ok() && opened.error().kind == ErrorKind::kIo ? 0 : 1);
  }
  EXPECT_EQ(ExitCodeOf(child), 0) << "exit 1: another user opened the segment; 2: could not become nobody";
}

}  // namespace
}  // namespace inferno
