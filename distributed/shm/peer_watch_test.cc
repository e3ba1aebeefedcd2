#include "distributed/shm/peer_watch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/shm/ring.h"
#include "distributed/shm/segment.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A child that blocks until its stdin-like pipe closes, then exits 0.
pid_t StartWaitingChild(int& release_fd) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  const pid_t child = fork();
  CHECK_GE(child, 0);
  if (child == 0) {
    close(fds[1]);
    char byte;
    _exit(read(fds[0], &byte, 1) >= 0 ? 0 : 1);
  }
  close(fds[0]);
  release_fd = fds[1];
  return child;
}

TEST(PeerWatch, SeesARunningAndAStoppedProcessAsAlive) {
  int release = -1;
  const pid_t child = StartWaitingChild(release);
  Result<PeerWatch> watch = PeerWatch::Open(3, child);
  ASSERT_TRUE(watch.ok()) << watch.error().ToString();
  EXPECT_TRUE(watch->Check().ok());
  EXPECT_FALSE(watch->Stopped());
  kill(child, SIGSTOP);
  EXPECT_TRUE(watch->Check().ok());
  // The stop takes effect asynchronously.
  const auto give_up = std::chrono::steady_clock::now() + seconds(10);
  while (!watch->Stopped() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(watch->Stopped());
  kill(child, SIGCONT);
  while (watch->Stopped() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_FALSE(watch->Stopped());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(release);
}

TEST(PeerWatch, SeesAKilledProcessAsLostBeforeAndAfterItIsReaped) {
  int release = -1;
  const pid_t child = StartWaitingChild(release);
  Result<PeerWatch> watch = PeerWatch::Open(3, child);
  ASSERT_TRUE(watch.ok()) << watch.error().ToString();
  kill(child, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);  // a zombie now
  Status zombie = watch->Check();
  ASSERT_FALSE(zombie.ok());
  EXPECT_EQ(zombie.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(zombie.error().message.find("rank 3 (pid " + std::to_string(child)), std::string::npos)
      << zombie.error().message;
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(watch->Check().ok());
  close(release);
}

TEST(PeerWatch, OpenOfAnEndedProcessIsPeerLost) {
  int release = -1;
  const pid_t child = StartWaitingChild(release);
  close(release);
  waitpid(child, nullptr, 0);
  Result<PeerWatch> watch = PeerWatch::Open(2, child);
  ASSERT_FALSE(watch.ok());
  EXPECT_EQ(watch.error().kind, ErrorKind::kPeerLost);
}

// The pieces together, as a transport uses them: a ring in a segment that the
// peer opened by address, read by a survivor that watches the peer. Killing
// the writer ends the reader's wait with PeerLost naming it, long before the
// deadline (with a deadline an hour away, a missed death hangs the test).
TEST(PeerWatch, EndsARingReadWhenTheWriterProcessIsKilled) {
  constexpr size_t kCapacity = 1 << 16;
  Result<SharedSegment> segment = SharedSegment::Create(RingBytes(kCapacity));
  ASSERT_TRUE(segment.ok()) << segment.error().ToString();
  FormatRing(segment->bytes(), kCapacity);
  int started[2];
  ASSERT_EQ(pipe(started), 0);
  const SegmentAddress address = segment->address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(started[0]);
    Result<SharedSegment> opened = SharedSegment::Open(address);
    if (!opened) _exit(1);
    Result<RingWriter> writer = RingWriter::Attach(opened->bytes(), {0, {}});
    if (!writer) _exit(1);
    const std::vector<std::byte> bytes(4 * kCapacity, std::byte{5});
    const Deadline deadline = Clock::now() + seconds(60);
    (void)!write(started[1], "x", 1);
    while (writer->Write(FrameKey{}, bytes, {}, deadline)) {
    }
    _exit(1);
  }
  close(started[1]);
  char byte;
  ASSERT_EQ(read(started[0], &byte, 1), 1);  // the child has opened the segment
  close(started[0]);
  segment->StopSharing();

  Result<PeerWatch> watch = PeerWatch::Open(1, child);
  ASSERT_TRUE(watch.ok()) << watch.error().ToString();
  WaitPolicy wait;
  wait.check = [&watch] { return watch->Check(); };
  Result<RingReader> reader = RingReader::Attach(segment->bytes(), {1, wait});
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  const Deadline deadline = Clock::now() + std::chrono::hours(1);
  Result<Message> first = reader->Read(deadline);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  kill(child, SIGKILL);
  Result<Message> read_after = Error::Timeout("not read yet", 1, milliseconds(0));
  do {
    read_after = reader->Read(deadline);
  } while (read_after.ok());
  EXPECT_EQ(read_after.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(read_after.error().message.find("rank 1 (pid " + std::to_string(child)), std::string::npos)
      << read_after.error().message;
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace inferno
