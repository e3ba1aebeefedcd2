#include "distributed/zmq/transport.h"

#include <arpa/inet.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "base/byte_codec.h"
#include "base/progress.h"
#include "distributed/frame_header.h"
#include "distributed/process_group.h"
#include "distributed/testing/rank_threads.h"
#include "distributed/testing/zmq_world.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kJob = 0xC0FFEE;

// Two transports over tcp on loopback with a known job id.
std::vector<std::shared_ptr<ZmqTransport>> ConnectedPair(milliseconds timeout) {
  ZmqTransportOptions options;
  options.timeout = timeout;
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(2, options);
  ConnectZmqWorld(transports, kJob);
  return transports;
}

int PortOf(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

// Connects a plain TCP socket to `port` on loopback, writes `bytes`, ends
// its side of the connection and waits (10 s at most) until the transport
// has closed its side too: it read the bytes and gave up on them.
void WriteRawBytes(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() < until) {
    pollfd item{fd, POLLIN, 0};
    if (poll(&item, 1, 100) != 1) continue;
    char discard[256];
    closed = read(fd, discard, sizeof(discard)) <= 0;  // ZMTP's greeting, then the close
  }
  EXPECT_TRUE(closed) << "the transport kept a connection of raw bytes open for 10 s";
  close(fd);
}

// The WARNING lines glog writes while it is alive (the transport's drops).
class WarningLines : public google::LogSink {
 public:
  WarningLines() { google::AddLogSink(this); }
  ~WarningLines() override { google::RemoveLogSink(this); }

  void send(google::LogSeverity severity, const char*, const char*, int, const struct ::tm*,
            const char* message, size_t length) override {
    if (severity != google::GLOG_WARNING) return;
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.emplace_back(message, length);
  }

  // The lines so far that contain `text`.
  int Count(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    }));
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

std::string AllReduceAndExchange(ProcessGroup& group) {
  std::vector<float> data = {1.0f + group.rank(), 10.0f};
  Status reduced = group.all_reduce(data, ReduceKind::kSum);
  if (!reduced) return reduced.error().ToString();
  if (data != std::vector<float>{3.0f, 20.0f}) return "wrong all_reduce result";
  const std::vector<int32_t> sent = {group.rank(), 7};
  if (!group.send_i32(1 - group.rank(), 5, sent)) return "send failed";
  Result<std::vector<int32_t>> got = group.recv_i32(1 - group.rank(), 5);
  if (!got) return got.error().ToString();
  if (*got != std::vector<int32_t>{1 - group.rank(), 7}) return "wrong message";
  return "";
}

TEST(ZmqTransport, StrangerWritingGarbageIsDroppedAndGroupKeepsWorking) {
  WarningLines warnings;
  auto transports = ConnectedPair(milliseconds(10000));
  const int port = PortOf(transports[0]->endpoints().front());

  // Not ZeroMQ at all: libzmq rejects the handshake.
  WriteRawBytes(port, std::string(200, '\xAB'));
  WriteRawBytes(port, "GET / HTTP/1.0\r\n\r\n");

  // A ZeroMQ peer sending malformed and foreign frames: each is dropped.
  zmq::context_t context(1);
  zmq::socket_t stranger(context, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 1000);
  stranger.connect(transports[0]->endpoints().front());
  stranger.send(zmq::str_buffer("one part only"), zmq::send_flags::none);
  stranger.send(zmq::str_buffer("bad header"), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer("payload"), zmq::send_flags::none);
  FrameHeader foreign;
  foreign.job_id = kJob + 1;
  foreign.tag = 5;
  const EncodedFrameHeader foreign_bytes = EncodeFrameHeader(foreign);
  stranger.send(zmq::buffer(foreign_bytes), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer(""), zmq::send_flags::none);
  // Right job, but claiming to be rank 1 from a stranger's connection.
  FrameHeader spoofed;
  spoofed.job_id = kJob;
  spoofed.source_rank = 1;
  spoofed.tag = 5;
  spoofed.message_length = 4;
  spoofed.payload_length = 4;
  const EncodedFrameHeader spoofed_bytes = EncodeFrameHeader(spoofed);
  stranger.send(zmq::buffer(spoofed_bytes), zmq::send_flags::sndmore);
  stranger.send(zmq::str_buffer("evil"), zmq::send_flags::none);

  // Rank 0 reads the stranger's frames while it works: the group works on
  // until rank 0 has dropped all four (10 s at most), and every round is right.
  const std::vector<std::string> drops = {
      "rank 0 dropped a message of 2 parts",
      "rank 0 dropped a frame from connection",  // the bad header, then the foreign job's
      "rank 0 dropped a frame claiming rank 1 from connection",
  };
  const auto dropped_all = [&] {
    return warnings.Count(drops[0]) == 1 && warnings.Count(drops[1]) == 2 && warnings.Count(drops[2]) == 1;
  };
  std::vector<std::shared_ptr<Transport>> as_transports(transports.begin(), transports.end());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int rounds = 0;
  do {
    auto results = RunRanks(as_transports, AllReduceAndExchange);
    ASSERT_EQ(results[0], "") << "round " << rounds;
    ASSERT_EQ(results[1], "") << "round " << rounds;
    ++rounds;
  } while (!dropped_all() && std::chrono::steady_clock::now() < until);
  for (const std::string& drop : drops) EXPECT_GT(warnings.Count(drop), 0) << "no warning '" << drop << "'";
  EXPECT_TRUE(dropped_all()) << "after " << rounds << " rounds";
}

TEST(ZmqTransport, MessagesLargerThanAChunkArriveWhole) {
  auto transports = ConnectedPair(milliseconds(10000));
  std::vector<std::byte> big(5 * kMaxChunkBytes + 3);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 7 % 253);
  const FrameKey key{9, CollectiveOp::kPointToPoint, 0, big.size()};
  const Deadline deadline = Clock::now() + milliseconds(10000);
  ASSERT_TRUE(transports[0]->Send(1, key, big, deadline).ok());
  ASSERT_TRUE(transports[0]->Send(1, key, std::span(big).first(10), deadline).ok());
  Result<Message> first = transports[1]->Recv(0, 9, deadline);
  Result<Message> second = transports[1]->Recv(0, 9, deadline);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(first->key.element_count, big.size());
  EXPECT_TRUE(std::ranges::equal(first->payload.bytes(), big));
  EXPECT_TRUE(std::ranges::equal(second->payload.bytes(), std::span(big).first(10)));
}

TEST(ZmqTransport, PayloadMayChangeOnceSendReturnsEvenBeforeThePeerReceives) {
  auto transports = ConnectedPair(milliseconds(10000));
  std::vector<std::byte> buffer(4 * kMaxChunkBytes);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>(i % 249);
  const std::vector<std::byte> original = buffer;
  const Deadline deadline = Clock::now() + milliseconds(10000);
  ASSERT_TRUE(transports[0]->Send(1, FrameKey{4}, buffer, deadline).ok());
  std::fill(buffer.begin(), buffer.end(), std::byte{0});
  Result<Message> got = transports[1]->Recv(0, 4, deadline);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload.bytes(), original));
}

TEST(ZmqTransport, PeerThatClosedInOrderIsReportedPromptlyAfterItsLastMessage) {
  auto transports = ConnectedPair(milliseconds(30000));
  const std::vector<std::byte> bytes = {std::byte{7}};
  const Deadline started = Clock::now();
  const Deadline deadline = started + milliseconds(30000);
  ASSERT_TRUE(transports[1]->Send(0, FrameKey{6}, bytes, deadline).ok());
  transports[1]->Close();
  Result<Message> last = transports[0]->Recv(1, 6, deadline);
  ASSERT_TRUE(last.ok()) << last.error().ToString();
  EXPECT_TRUE(std::ranges::equal(last->payload.bytes(), bytes));
  Result<Message> after = transports[0]->Recv(1, 6, deadline);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().kind, ErrorKind::kPeerLost) << after.error().ToString();
  EXPECT_NE(after.error().message.find("rank 1 closed its transport"), std::string::npos)
      << after.error().message;
  EXPECT_LT(Clock::now() - started, milliseconds(10000));
}

TEST(ZmqTransport, AbortFailsThePeersWaitOnAnyRankWithTheReason) {
  auto transports = ConnectedPair(milliseconds(30000));
  auto results =
      RunRanks({transports[0], transports[1]}, [](ProcessGroup& group) { return group.barrier().ok(); });
  ASSERT_TRUE(results[0] && results[1]);
  const Deadline started = Clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(milliseconds(50));
    transports[0]->Abort("recv at rank 0 from rank 7: timed out");
  });
  // Rank 1 waits on a message from itself, not from the aborting rank.
  Result<Message> got = transports[1]->Recv(1, 3, started + milliseconds(30000));
  aborter.join();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kPeerLost) << got.error().ToString();
  EXPECT_NE(got.error().message.find("rank 0 gave up on the job: recv at rank 0 from rank 7: timed out"),
            std::string::npos)
      << got.error().message;
  EXPECT_LT(Clock::now() - started, milliseconds(10000));
}

TEST(ZmqTransport, CheckAbortNoticesIsOkUntilAPeerAbortsThenQuotesIt) {
  auto transports = ConnectedPair(milliseconds(30000));
  auto results =
      RunRanks({transports[0], transports[1]}, [](ProcessGroup& group) { return group.barrier().ok(); });
  ASSERT_TRUE(results[0] && results[1]);
  EXPECT_TRUE(transports[1]->CheckAbortNotices().ok());
  transports[0]->Abort("all_reduce #2 lost rank 5");
  // Nobody else reads rank 1's sockets: the check itself must take the notice.
  const Deadline give_up = Clock::now() + milliseconds(10000);
  Status checked = transports[1]->CheckAbortNotices();
  while (checked.ok() && Clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
    checked = transports[1]->CheckAbortNotices();
  }
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().kind, ErrorKind::kPeerLost);
  EXPECT_NE(checked.error().message.find("rank 0 gave up on the job: all_reduce #2 lost rank 5"),
            std::string::npos)
      << checked.error().message;
}

TEST(ZmqTransport, SenderBlockedOnAFullQueueEndsOnAnAbortNoticeFromAnotherRank) {
  ZmqTransportOptions options;
  // Without reading the notice, the blocked Send ends with Timeout after this.
  options.timeout = milliseconds(20000);
  options.high_water_mark = 2;
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(3, options);
  ConnectZmqWorld(transports, kJob);
  auto results = RunRanks({transports[0], transports[1], transports[2]},
                          [](ProcessGroup& group) { return group.barrier().ok(); });
  ASSERT_TRUE(results[0] && results[1] && results[2]);
  // Rank 2 gives up on the job; rank 1 never reads, so rank 0's sends to it
  // fill the queue and the socket buffers, and the last one blocks. Nothing
  // else reads rank 0's sockets: the blocked Send must read the notice itself.
  transports[2]->Abort("recv at rank 2 from rank 5: rank 5 was lost");
  const std::vector<std::byte> chunk(1 << 20);
  Status sent;
  for (int i = 0; i < 10000 && sent.ok(); ++i) {
    sent = transports[0]->Send(1, FrameKey{3}, chunk, Clock::now() + options.timeout);
  }
  ASSERT_FALSE(sent.ok()) << "10000 MiB queued for a rank that never reads";
  EXPECT_EQ(sent.error().kind, ErrorKind::kPeerLost) << sent.error().ToString();
  EXPECT_NE(
      sent.error().message.find("rank 2 gave up on the job: recv at rank 2 from rank 5: rank 5 was lost"),
      std::string::npos)
      << sent.error().message;
}

// Sends rank 0 of a 2-rank world `beats` heartbeats of rank 1 reporting a
// stall of `stalled_ms`, through a DEALER that holds rank 1's routing id (as
// the real rank 1 would, had it connected), then falls silent.
void HeartbeatsAsRank1(const std::string& endpoint, int beats, int64_t stalled_ms) {
  zmq::context_t context(1);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 1000);
  dealer.set(zmq::sockopt::routing_id, "inferno-rank-1");
  dealer.connect(endpoint);
  std::array<std::byte, 8> payload;
  StoreLittleEndian<int64_t>(payload, stalled_ms);
  FrameHeader header;
  header.op = CollectiveOp::kHeartbeat;
  header.job_id = kJob;
  header.source_rank = 1;
  header.message_length = header.payload_length = payload.size();
  const EncodedFrameHeader encoded = EncodeFrameHeader(header);
  for (int beat = 0; beat < beats; ++beat) {
    dealer.send(zmq::const_buffer(encoded.data(), encoded.size()), zmq::send_flags::sndmore);
    dealer.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none);
  }
}

// Rank 0 of a 2-rank world whose rank 1 is bound but never connects (its
// heartbeats are sent by the test), with a timeout far above the liveness
// limits.
std::vector<std::shared_ptr<ZmqTransport>> WorldWithAnImpersonatedRank1() {
  ZmqTransportOptions options;
  options.timeout = milliseconds(60000);
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(2, options);
  ConnectZmqWorld(transports, kJob, /*connected_ranks=*/1);
  return transports;
}

TEST(ZmqTransportLiveness, PeerSilentAfterItsHeartbeatsIsNamedLongBeforeTheTimeout) {
  auto transports = WorldWithAnImpersonatedRank1();
  const Deadline started = Clock::now();
  HeartbeatsAsRank1(transports[0]->endpoints().front(), 1, 0);
  Result<Message> got = transports[0]->Recv(1, 5, started + milliseconds(60000));
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::kPeerLost) << got.error().ToString();
  EXPECT_NE(got.error().message.find("(rank 1 is unresponsive: nothing arrived from it for "),
            std::string::npos)
      << got.error().message;
  // Named at the silent limit (1.5 s) plus a beat, not at the 60 s timeout;
  // the bound leaves room for a loaded machine.
  EXPECT_GE(took, milliseconds(1500));
  EXPECT_LT(took, milliseconds(20000));
}

TEST(ZmqTransportLiveness, PeerReportingAStallIsNamedHung) {
  auto transports = WorldWithAnImpersonatedRank1();
  HeartbeatsAsRank1(transports[0]->endpoints().front(), 1, 1600);
  Result<Message> got = transports[0]->Recv(1, 5, Clock::now() + milliseconds(60000));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::kPeerLost) << got.error().ToString();
  EXPECT_NE(got.error().message.find("(rank 1 is unresponsive: hung: it made no progress for 1600 ms in the "
                                     "middle of a step, outside any wait on a peer)"),
            std::string::npos)
      << got.error().message;
}

// The ranks of these two tests share this process's progress counters
// (base/progress.h), so rank 1's step below is also rank 0's: what rank 0
// judges is the stall rank 1's heartbeats report.
TEST(ZmqTransportLiveness, LongStepThatProgressesIsNotAHang) {
  auto transports = ConnectedPair(milliseconds(60000));
  const std::string done = "done";
  std::thread rank1([&] {
    const ProgressExpected step;
    const Deadline until = Clock::now() + milliseconds(3000);  // twice the stall limit
    while (Clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(5));  // a few milliseconds of compute
      ProgressAdvanced();
    }
    ASSERT_TRUE(transports[1]->Send(0, FrameKey{5}, std::as_bytes(std::span(done)),
                                    Clock::now() + milliseconds(5000)));
  });
  // Rank 0 waits only once rank 1's step is over: no wait covers the step.
  rank1.join();
  Result<Message> got = transports[0]->Recv(1, 5, Clock::now() + milliseconds(60000));
  ASSERT_TRUE(got) << got.error().ToString();
}

TEST(ZmqTransportLiveness, StepWithoutProgressOutsideAnyWaitIsNamedHung) {
  auto transports = ConnectedPair(milliseconds(60000));
  std::thread rank1([] {
    const ProgressExpected step;
    std::this_thread::sleep_for(milliseconds(3000));  // stuck, as if deadlocked
  });
  rank1.join();
  Result<Message> got = transports[0]->Recv(1, 5, Clock::now() + milliseconds(60000));
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("(rank 1 is unresponsive: hung: it made no progress for "),
            std::string::npos)
      << got.error().message;
}

TEST(ZmqTransport, SendToSelfIsDelivered) {
  auto transports = ConnectedPair(milliseconds(10000));
  const std::vector<std::byte> bytes = {std::byte{1}, std::byte{2}};
  const Deadline deadline = Clock::now() + milliseconds(5000);
  ASSERT_TRUE(transports[1]->Send(1, FrameKey{3}, bytes, deadline).ok());
  Result<Message> got = transports[1]->Recv(1, 3, deadline);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload.bytes(), bytes));
}

TEST(ZmqTransport, ClosedPeerIsPeerLostBeforeTheTimeout) {
  auto transports = ConnectedPair(milliseconds(30000));
  // Let the connections come up before one side goes away.
  auto results =
      RunRanks({transports[0], transports[1]}, [](ProcessGroup& group) { return group.barrier().ok(); });
  ASSERT_TRUE(results[0] && results[1]);
  transports[1]->Close();
  const Clock::time_point start = Clock::now();
  Result<Message> got = transports[0]->Recv(1, 3, Clock::now() + milliseconds(30000));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kPeerLost) << got.error().ToString();
  EXPECT_LT(Clock::now() - start, milliseconds(10000));
}

TEST(ZmqTransport, BindingAnEndpointInUseNamesIt) {
  auto transports = ConnectedPair(milliseconds(1000));
  ZmqTransportOptions options;
  options.bind_endpoints = {transports[0]->endpoints().front()};
  Result<std::shared_ptr<ZmqTransport>> bound = ZmqTransport::Bind(options);
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().kind, ErrorKind::kTransport);
  EXPECT_NE(bound.error().message.find(transports[0]->endpoints().front()), std::string::npos)
      << bound.error().message;
}

TEST(ZmqTransport, RecvAfterCloseIsClosed) {
  auto transports = ConnectedPair(milliseconds(1000));
  transports[0]->Close();
  Result<Message> got = transports[0]->Recv(1, 3, Clock::now() + milliseconds(1000));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kClosed);
  Status sent = transports[0]->Send(1, FrameKey{3}, {}, Clock::now() + milliseconds(1000));
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().kind, ErrorKind::kClosed);
}

}  // namespace
}  // namespace inferno
