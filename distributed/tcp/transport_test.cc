#include "distributed/tcp/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;

std::vector<std::byte> Bytes(size_t size, int seed) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return bytes;
}

Deadline In(milliseconds wait) { return Clock::now() + wait; }

// Listening transports for a world of `world_size` on loopback.
std::vector<std::shared_ptr<TcpTransport>> ListenAll(
    int world_size, const std::function<void(TcpTransportOptions&)>& adjust = {}) {
  std::vector<std::shared_ptr<TcpTransport>> transports;
  for (int rank = 0; rank < world_size; ++rank) {
    TcpTransportOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.timeout = milliseconds(10000);
    if (adjust) adjust(options);
    Result<std::shared_ptr<TcpTransport>> listening = TcpTransport::Listen(options);
    EXPECT_TRUE(listening) << listening.error().ToString();
    transports.push_back(*listening);
  }
  return transports;
}

std::vector<std::optional<TcpPeerAddress>> AddressesOf(
    const std::vector<std::shared_ptr<TcpTransport>>& all) {
  std::vector<std::optional<TcpPeerAddress>> addresses;
  for (const auto& transport : all)
    addresses.push_back(TcpPeerAddress{"127.0.0.1", transport->port(), transport->key()});
  return addresses;
}

// Connects every transport (each from its own thread); returns their results.
std::vector<Status> ConnectAll(const std::vector<std::shared_ptr<TcpTransport>>& all,
                               const std::vector<std::optional<TcpPeerAddress>>& addresses,
                               milliseconds wait) {
  std::vector<Status> results(all.size());
  std::vector<std::thread> threads;
  for (size_t rank = 0; rank < all.size(); ++rank) {
    threads.emplace_back([&, rank] { results[rank] = all[rank]->Connect(addresses, 77, In(wait)); });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

std::vector<std::shared_ptr<TcpTransport>> Connected(
    int world_size, const std::function<void(TcpTransportOptions&)>& adjust = {}) {
  std::vector<std::shared_ptr<TcpTransport>> all = ListenAll(world_size, adjust);
  for (const Status& status : ConnectAll(all, AddressesOf(all), milliseconds(10000))) {
    EXPECT_TRUE(status) << status.error().ToString();
  }
  return all;
}

// A plain TCP connection to `port` on loopback (a stranger).
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  return fd;
}

TEST(TcpTransport, DeliversMessagesOfEverySizeInOrderPerTag) {
  auto all = Connected(2);
  const std::vector<size_t> sizes = {0, 1, 4096, 3 * kMaxChunkBytes + 5};
  std::thread sender([&] {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::vector<std::byte> head = Bytes(sizes[i] / 3, 1), tail = Bytes(sizes[i] - sizes[i] / 3, 2);
      ASSERT_TRUE(
          all[0]->Send(1, FrameKey{static_cast<uint32_t>(i % 2)}, head, tail, In(milliseconds(10000))));
    }
  });
  // Tag 1 first: the tag-0 messages wait in the mailbox meanwhile.
  for (uint32_t tag : {1u, 0u}) {
    for (size_t i = tag; i < sizes.size(); i += 2) {
      Result<Message> got = all[1]->Recv(0, tag, In(milliseconds(10000)));
      ASSERT_TRUE(got) << got.error().ToString();
      std::vector<std::byte> want = Bytes(sizes[i] / 3, 1);
      const std::vector<std::byte> tail = Bytes(sizes[i] - sizes[i] / 3, 2);
      want.insert(want.end(), tail.begin(), tail.end());
      EXPECT_EQ(got->key.tag, tag);
      EXPECT_TRUE(
          std::equal(want.begin(), want.end(), got->payload.bytes().begin(), got->payload.bytes().end()))
          << "message " << i;
    }
  }
  sender.join();
}

TEST(TcpTransport, RanksSendingEachOtherMoreThanTheSocketsHoldBothFinish) {
  // A ring of 3 where every rank first sends 24 MiB to the next, then
  // receives from the previous: only reading while blocked in Send lets it end.
  auto all = Connected(3);
  const std::vector<std::byte> big = Bytes(24 << 20, 5);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      EXPECT_TRUE(all[rank]->Send((rank + 1) % 3, FrameKey{9}, big, In(milliseconds(20000))));
      Result<Message> got = all[rank]->Recv((rank + 2) % 3, 9, In(milliseconds(20000)));
      ASSERT_TRUE(got) << got.error().ToString();
      EXPECT_TRUE(
          std::equal(big.begin(), big.end(), got->payload.bytes().begin(), got->payload.bytes().end()));
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(TcpTransport, StrangersAtTheDataPortAreRefusedAndTheRanksConnect) {
  auto all = ListenAll(2);
  // Junk, a silent connection, and a claim to be rank 0 with a frame not
  // sealed under rank 1's key, all before the ranks connect.
  const int junk = ConnectTo(all[1]->port());
  const std::vector<std::byte> noise = Bytes(500, 3);
  ASSERT_EQ(write(junk, noise.data(), noise.size()), static_cast<ssize_t>(noise.size()));
  const int silent = ConnectTo(all[1]->port());
  const int impostor = ConnectTo(all[1]->port());
  std::vector<std::byte> hello(4 + 4 + 64 + 16);
  hello[4] = std::byte{64 + 16};  // a plausible length, rank 0 claimed
  ASSERT_EQ(write(impostor, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  for (const Status& status : ConnectAll(all, AddressesOf(all), milliseconds(10000))) {
    ASSERT_TRUE(status) << status.error().ToString();
  }
  const std::vector<std::byte> payload = Bytes(4096, 4);
  ASSERT_TRUE(all[0]->Send(1, FrameKey{3}, payload, In(milliseconds(5000))));
  Result<Message> got = all[1]->Recv(0, 3, In(milliseconds(5000)));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->payload.size(), payload.size());
  // The port is closed once every rank is in: a later stranger is refused.
  const int late = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(all[1]->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect(late, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  for (int fd : {junk, silent, impostor, late}) close(fd);
}

TEST(TcpTransport, HelloUnderAWrongKeyIsRefusedAndNamedAtTheDeadline) {
  auto all = ListenAll(2);
  std::vector<std::optional<TcpPeerAddress>> addresses = AddressesOf(all);
  std::vector<std::optional<TcpPeerAddress>> wrong = addresses;
  wrong[1]->key = DataKey::Random();  // rank 0 seals for a key rank 1 does not hold
  std::vector<Status> results(2);
  std::thread zero([&] { results[0] = all[0]->Connect(wrong, 77, In(milliseconds(1000))); });
  results[1] = all[1]->Connect(addresses, 77, In(milliseconds(1000)));
  zero.join();
  ASSERT_FALSE(results[1]);
  EXPECT_EQ(results[1].error().kind, ErrorKind::kTimeout);
  EXPECT_NE(results[1].error().message.find("no connection arrived from rank(s) 0"), std::string::npos)
      << results[1].error().message;
}

TEST(TcpTransport, CloseIsPeerLostOnceQueuedMessagesAreTaken) {
  auto all = Connected(2);
  const std::vector<std::byte> payload = Bytes(100, 6);
  ASSERT_TRUE(all[0]->Send(1, FrameKey{1}, payload, In(milliseconds(5000))));
  all[0]->Close();
  EXPECT_TRUE(all[1]->Recv(0, 1, In(milliseconds(5000))));
  const Deadline started = Clock::now();
  Result<Message> after = all[1]->Recv(0, 1, In(milliseconds(5000)));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().kind, ErrorKind::kPeerLost) << after.error().ToString();
  EXPECT_LT(Clock::now() - started, milliseconds(400));  // a goodbye: no lost grace
  EXPECT_EQ(all[0]->Recv(1, 1, In(milliseconds(100))).error().kind, ErrorKind::kClosed);
}

TEST(TcpTransport, AbortReasonEndsThePeersWaitOnAnyRank) {
  auto all = Connected(3);
  std::thread waiter([&] {
    Result<Message> got = all[1]->Recv(2, 1, In(milliseconds(10000)));  // waits on rank 2
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().kind, ErrorKind::kPeerLost);
    EXPECT_NE(got.error().message.find("matmul exploded"), std::string::npos) << got.error().message;
  });
  std::this_thread::sleep_for(milliseconds(100));
  all[0]->Abort("rank 0: all_reduce: matmul exploded");
  waiter.join();
}

TEST(TcpTransport, RecvTimesOutAtItsDeadline) {
  auto all = Connected(2);
  const Deadline started = Clock::now();
  Result<Message> got = all[1]->Recv(0, 1, In(milliseconds(200)));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::kTimeout);
  EXPECT_GE(Clock::now() - started, milliseconds(200));
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
}

TEST(TcpTransport, ControlPlaneVerdictEndsAWait) {
  std::atomic<bool> verdict{false};
  auto all = Connected(2, [&](TcpTransportOptions& options) {
    options.also_check = [&]() -> Status {
      if (verdict.load()) return Error{ErrorKind::kPeerLost, "rank 0 is unresponsive: sent no heartbeat"};
      return {};
    };
  });
  std::thread judge([&] {
    std::this_thread::sleep_for(milliseconds(100));
    verdict = true;
  });
  const Deadline started = Clock::now();
  Result<Message> got = all[1]->Recv(0, 1, In(milliseconds(10000)));
  judge.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "rank 0 is unresponsive: sent no heartbeat");
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
}

}  // namespace
}  // namespace inferno
