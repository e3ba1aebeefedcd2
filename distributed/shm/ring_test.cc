#include "distributed/shm/ring.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A zero-filled shared anonymous mapping: shared with children forked later.
class SharedMapping {
 public:
  explicit SharedMapping(size_t bytes) : size_(bytes) {
    void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(address != MAP_FAILED) << "mmap of " << bytes << " bytes: " << std::strerror(errno);
    data_ = static_cast<std::byte*>(address);
  }
  ~SharedMapping() { munmap(data_, size_); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  std::span<std::byte> bytes() { return {data_, size_}; }

 private:
  size_t size_;
  std::byte* data_;
};

// A formatted ring of `capacity` bytes in its own shared mapping.
class TestRing {
 public:
  explicit TestRing(size_t capacity) : mapping_(RingBytes(capacity)) {
    FormatRing(mapping_.bytes(), capacity);
  }
  std::span<std::byte> memory() { return mapping_.bytes(); }

  // The writer is rank 0, the reader rank 1.
  RingWriter Writer(WaitPolicy wait = {}) { return *RingWriter::Attach(memory(), {1, std::move(wait)}); }
  RingReader Reader(WaitPolicy wait = {}) { return *RingReader::Attach(memory(), {0, std::move(wait)}); }

 private:
  SharedMapping mapping_;
};

// The bytes message `index` of a run carries: a function of both, so a byte
// out of place or from another message shows.
std::vector<std::byte> MessageBytes(size_t index, size_t length) {
  std::vector<std::byte> bytes(length);
  for (size_t i = 0; i < length; ++i)
    bytes[i] = static_cast<std::byte>((index * 131 + i * 7 + (i >> 8)) & 0xFF);
  return bytes;
}

FrameKey MessageKey(size_t index) {
  return FrameKey{static_cast<uint32_t>(index * 3 + 1), CollectiveOp::kAllReduce, index * 5, index * 11};
}

// What a test sends: random lengths from empty to several times the ring's
// capacity, split at a random point into head and tail.
struct Planned {
  size_t length;
  size_t split;
};

std::vector<Planned> RandomPlan(uint64_t seed, size_t capacity, size_t count) {
  std::mt19937_64 random(seed);
  std::vector<Planned> plan;
  for (size_t i = 0; i < count; ++i) {
    size_t length = 0;
    switch (random() % 4) {
      case 0:
        length = random() % 16;
        break;
      case 1:
        length = random() % capacity;
        break;
      default:
        length = random() % (3 * capacity + 1);
        break;
    }
    plan.push_back({length, length == 0 ? 0 : static_cast<size_t>(random() % (length + 1))});
  }
  return plan;
}

Status SendPlanned(RingWriter& writer, const std::vector<Planned>& plan, Deadline deadline) {
  for (size_t i = 0; i < plan.size(); ++i) {
    const std::vector<std::byte> bytes = MessageBytes(i, plan[i].length);
    const std::span<const std::byte> all(bytes);
    Status sent = writer.Write(MessageKey(i), all.first(plan[i].split), all.subspan(plan[i].split), deadline);
    if (!sent) return sent;
  }
  return {};
}

// "" if `message` is message `index` of `plan`, else what differs.
std::string Mismatch(const Message& message, size_t index, const std::vector<Planned>& plan) {
  const FrameKey want = MessageKey(index);
  if (message.key.tag != want.tag || message.key.op != want.op || message.key.sequence != want.sequence ||
      message.key.element_count != want.element_count) {
    return "message " + std::to_string(index) + ": wrong key (tag " + std::to_string(message.key.tag) + ")";
  }
  const std::vector<std::byte> bytes = MessageBytes(index, plan[index].length);
  if (message.payload.size() != bytes.size()) {
    return "message " + std::to_string(index) + ": " + std::to_string(message.payload.size()) +
           " bytes, sent " + std::to_string(bytes.size());
  }
  if (!std::equal(bytes.begin(), bytes.end(), message.payload.bytes().begin())) {
    return "message " + std::to_string(index) + ": payload differs";
  }
  return "";
}

struct RingCase {
  size_t capacity;
  uint64_t seed;
  // Read with 1 ms deadlines and retry on Timeout (resuming part-read messages).
  bool short_reads;
  // Spin before sleeping (else sleep at once).
  bool spin;
};

class RingProperty : public testing::TestWithParam<RingCase> {};

TEST_P(RingProperty, RandomMessagesArriveWholeAndInOrderThroughWrapAroundAndAFullRing) {
  const RingCase ring_case = GetParam();
  const std::vector<Planned> plan = RandomPlan(ring_case.seed, ring_case.capacity, 400);
  TestRing ring(ring_case.capacity);
  WaitPolicy wait;
  if (!ring_case.spin) {
    wait.busy_spin = std::chrono::nanoseconds(0);
    wait.spin = std::chrono::nanoseconds(0);
  }
  RingWriter writer = ring.Writer(wait);
  RingReader reader = ring.Reader(wait);
  const Deadline deadline = Clock::now() + seconds(60);

  Status sent;
  std::thread producer([&] { sent = SendPlanned(writer, plan, deadline); });
  std::string failure;
  for (size_t i = 0; i < plan.size() && failure.empty(); ++i) {
    Result<Message> message = Error::Timeout("not read yet", 1, milliseconds(0));
    do {
      message =
          reader.Read(ring_case.short_reads ? std::min(deadline, Clock::now() + milliseconds(1)) : deadline);
    } while (!message && message.error().kind == ErrorKind::kTimeout && Clock::now() < deadline);
    if (!message) {
      failure = "message " + std::to_string(i) + ": " + message.error().ToString();
    } else {
      failure = Mismatch(*message, i, plan);
    }
  }
  if (!failure.empty()) reader.Close();  // unblocks the producer
  producer.join();
  EXPECT_EQ(failure, "") << "seed " << ring_case.seed;
  EXPECT_TRUE(sent.ok()) << sent.error().ToString();
}

INSTANTIATE_TEST_SUITE_P(CapacitiesAndSeeds, RingProperty,
                         testing::Values(RingCase{64, 1, false, true}, RingCase{64, 2, true, false},
                                         RingCase{256, 3, false, false}, RingCase{256, 4, true, true},
                                         RingCase{4096, 5, false, true}, RingCase{4096, 6, true, false},
                                         RingCase{65536, 7, false, true}, RingCase{65536, 8, true, true}));

TEST(Ring, WriteTimesOutCleanlyWhenTheRingIsFull) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  const std::vector<std::byte> fills(256 - sizeof(RecordHeader), std::byte{7});
  EXPECT_TRUE(writer.Fits(fills.size()));
  ASSERT_TRUE(writer.Write(MessageKey(0), fills, {}, Clock::now() + seconds(10)).ok());
  EXPECT_FALSE(writer.Fits(0));

  Status blocked = writer.Write(MessageKey(1), fills, {}, Clock::now() + milliseconds(20));
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().kind, ErrorKind::kTimeout) << blocked.error().ToString();

  // Nothing of the timed-out message went in: the ring still works.
  Result<Message> first = reader.Read(Clock::now() + seconds(10));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->payload.size(), fills.size());
  EXPECT_TRUE(writer.Fits(fills.size()));
  ASSERT_TRUE(writer.Write(MessageKey(2), fills, {}, Clock::now() + seconds(10)).ok());
  Result<Message> second = reader.Read(Clock::now() + seconds(10));
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(second->key.tag, MessageKey(2).tag);
}

TEST(Ring, WriterThatTimesOutMidMessageAbandonsTheRing) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  ASSERT_TRUE(writer.Write(MessageKey(0), MessageBytes(0, 10), {}, Clock::now() + seconds(10)).ok());
  Status too_big = writer.Write(MessageKey(1), MessageBytes(1, 1000), {}, Clock::now() + milliseconds(20));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().kind, ErrorKind::kTimeout);

  Result<Message> complete = reader.Read(Clock::now() + seconds(10));
  ASSERT_TRUE(complete.ok()) << complete.error().ToString();
  EXPECT_EQ(complete->payload.size(), 10u);
  Result<Message> abandoned = reader.Read(Clock::now() + seconds(10));
  ASSERT_FALSE(abandoned.ok());
  EXPECT_EQ(abandoned.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(abandoned.error().message.find("part-way"), std::string::npos) << abandoned.error().message;
  Status later = writer.Write(MessageKey(2), {}, {}, Clock::now() + seconds(10));
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().kind, ErrorKind::kClosed);
}

TEST(Ring, ReadTimesOutWhenNothingArrives) {
  TestRing ring(256);
  RingReader reader = ring.Reader();
  Result<Message> nothing = reader.Read(Clock::now() + milliseconds(20));
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().kind, ErrorKind::kTimeout);
  EXPECT_NE(nothing.error().message.find("no message from rank 0"), std::string::npos)
      << nothing.error().message;
}

TEST(Ring, ClosedWriterDeliversWhatItWroteThenPeerLost) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  ASSERT_TRUE(writer.Write(MessageKey(0), MessageBytes(0, 5), {}, Clock::now() + seconds(10)).ok());
  writer.Close();
  ASSERT_TRUE(reader.Read(Clock::now() + seconds(10)).ok());
  Result<Message> after = reader.Read(Clock::now() + seconds(10));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(after.error().message.find("closed the ring"), std::string::npos) << after.error().message;
}

TEST(Ring, ClosedReaderFailsTheWriterWithPeerLost) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  reader.Close();
  Status sent = writer.Write(MessageKey(0), MessageBytes(0, 5), {}, Clock::now() + seconds(10));
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().kind, ErrorKind::kPeerLost);
}

TEST(Ring, CloseWakesABlockedReadInAnotherThread) {
  TestRing ring(256);
  WaitPolicy no_recheck;
  no_recheck.check_interval = milliseconds(600000);
  RingReader reader = ring.Reader(no_recheck);
  Result<Message> read = Error::Timeout("not read yet", 1, milliseconds(0));
  std::thread blocked([&] { read = reader.Read(Clock::now() + seconds(60)); });
  std::this_thread::sleep_for(milliseconds(20));
  reader.Close();
  blocked.join();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, ErrorKind::kClosed) << read.error().ToString();
}

TEST(Ring, RecordWithoutItsMarkerIsCorruption) {
  TestRing ring(256);
  RingWriter writer = ring.Writer();
  RingReader reader = ring.Reader();
  ASSERT_TRUE(writer.Write(MessageKey(0), MessageBytes(0, 5), {}, Clock::now() + seconds(10)).ok());
  ring.memory()[kRingLayoutBytes] ^= std::byte{0xFF};
  Result<Message> read = reader.Read(Clock::now() + seconds(10));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, ErrorKind::kCorruption) << read.error().ToString();
}

TEST(Ring, AttachRejectsMemoryThatIsNotAFormattedRing) {
  SharedMapping memory(RingBytes(256));
  Result<RingReader> reader = RingReader::Attach(memory.bytes(), {});
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.error().kind, ErrorKind::kCorruption);
}

// A check that fails with PeerLost once the child `pid` has exited (reaped or
// not), as a transport's liveness check would for a peer process.
WaitPolicy WatchingChild(pid_t pid) {
  WaitPolicy wait;
  wait.check_interval = milliseconds(20);
  wait.check = [pid]() -> Status {
    siginfo_t info{};
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return Error::PeerLost("test child", 1);
    }
    return {};
  };
  return wait;
}

// Waits (bounded) for the child to exit; kills it if it does not.
int ExitStatusOf(pid_t pid) {
  const Deadline deadline = Clock::now() + seconds(30);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return status;
}

// The child echoes every message of `plan` back through a second ring; the
// parent checks each echo. Both directions cross the process boundary, and
// sleeping waiters are woken by the other process's futex wake.
TEST(RingAcrossProcesses, ChildEchoesRandomMessagesBack) {
  constexpr size_t kCapacity = 4096;
  const std::vector<Planned> plan = RandomPlan(11, kCapacity, 300);
  TestRing to_child(kCapacity);
  TestRing to_parent(kCapacity);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RingReader in = *RingReader::Attach(to_child.memory(), {0, {}});
    RingWriter out = *RingWriter::Attach(to_parent.memory(), {0, {}});
    const Deadline deadline = Clock::now() + seconds(30);
    for (size_t i = 0; i < plan.size(); ++i) {
      Result<Message> message = in.Read(deadline);
      if (!message || !out.Write(message->key, message->payload.bytes(), {}, deadline)) _exit(1);
    }
    _exit(0);
  }
  RingWriter out = to_child.Writer(WatchingChild(child));
  RingReader in = to_parent.Reader(WatchingChild(child));
  const Deadline deadline = Clock::now() + seconds(30);
  std::thread sender([&] { EXPECT_TRUE(SendPlanned(out, plan, deadline).ok()); });
  std::string failure;
  for (size_t i = 0; i < plan.size() && failure.empty(); ++i) {
    Result<Message> echo = in.Read(deadline);
    failure = echo ? Mismatch(*echo, i, plan) : echo.error().ToString();
  }
  if (!failure.empty()) kill(child, SIGKILL);
  sender.join();
  EXPECT_EQ(failure, "");
  const int status = ExitStatusOf(child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST(RingAcrossProcesses, ReaderGetsPeerLostWhenTheWriterProcessIsKilled) {
  constexpr size_t kCapacity = 4096;
  TestRing ring(kCapacity);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RingWriter writer = *RingWriter::Attach(ring.memory(), {0, {}});
    const std::vector<std::byte> bytes = MessageBytes(0, 3 * kCapacity);
    // Writes until killed; the deadline only bounds a child the test lost.
    const Deadline deadline = Clock::now() + seconds(60);
    while (writer.Write(MessageKey(0), bytes, {}, deadline)) {
    }
    _exit(1);
  }
  RingReader reader = ring.Reader(WatchingChild(child));
  const Deadline deadline = Clock::now() + seconds(30);
  Result<Message> first = reader.Read(deadline);
  EXPECT_TRUE(first.ok()) << first.error().ToString();
  kill(child, SIGKILL);
  Result<Message> read = Error::Timeout("not read yet", 1, milliseconds(0));
  do {
    read = reader.Read(deadline);
  } while (read.ok());
  EXPECT_EQ(read.error().kind, ErrorKind::kPeerLost) << read.error().ToString();
  const int status = ExitStatusOf(child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
}

}  // namespace
}  // namespace inferno
