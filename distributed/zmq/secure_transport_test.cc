// ZmqTransport with a job secret: CURVE-encrypted, and closed to processes
// that do not hold the secret.
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "distributed/frame_header.h"
#include "distributed/testing/secret_filled_with.h"
#include "distributed/testing/zmq_world.h"
#include "distributed/zmq/curve_auth.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kJob = 0x5EC0DE;
constexpr uint32_t kTag = 5;
constexpr int kWorld = 3;
// Rank 2 is bound but never connects, so a stranger can claim its routing id
// at rank 1 without colliding with a real connection.
constexpr int kImpersonatedRank = 2;

// Ranks 0 and 1 of a world of kWorld, connected; rank 2 only bound.
std::vector<std::shared_ptr<ZmqTransport>> World(const std::optional<JobSecret>& secret) {
  ZmqTransportOptions options;
  options.timeout = milliseconds(5000);
  options.job_secret = secret;
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(kWorld, options);
  ConnectZmqWorld(transports, kJob, kImpersonatedRank);
  return transports;
}

std::string Text(const Message& message) {
  const auto bytes = message.payload.bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// How a stranger's socket is set up before it connects.
enum class StrangerKind { kPlain, kCurveWithItsOwnKey };

enum class Handshake { kSucceeded, kFailed, kNone };

// Watches the handshakes of a socket through a ZeroMQ socket monitor; make
// it before the socket connects, and destroy it before the socket's context.
class HandshakeWatch {
 public:
  HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket) : monitor_(context, zmq::socket_type::pair) {
    static std::atomic<int> next{0};
    const std::string address = "inproc://handshake-watch-" + std::to_string(next++);
    EXPECT_EQ(zmq_socket_monitor(socket.handle(), address.c_str(),
                                 ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH),
              0);
    monitor_.set(zmq::sockopt::linger, 0);
    monitor_.connect(address);
  }

  // The outcome of the next handshake, waiting for it up to `timeout`.
  Handshake Next(milliseconds timeout) {
    zmq::pollitem_t item{monitor_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) != 1) return Handshake::kNone;
    zmq::message_t event, endpoint;
    if (!monitor_.recv(event) || !monitor_.recv(endpoint) || event.size() < sizeof(uint16_t)) {
      return Handshake::kNone;
    }
    uint16_t kind = 0;
    std::memcpy(&kind, event.data(), sizeof(kind));
    return kind == ZMQ_EVENT_HANDSHAKE_SUCCEEDED ? Handshake::kSucceeded : Handshake::kFailed;
  }

 private:
  zmq::socket_t monitor_;
};

// A stranger that sent rank 1 a well-formed frame of this job claiming to
// come from rank 2, over a connection whose routing id is rank 2's; it stays
// connected (retrying refused handshakes) while it lives.
struct Stranger {
  Stranger(const std::string& endpoint, StrangerKind kind) {
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::routing_id, "inferno-rank-" + std::to_string(kImpersonatedRank));
    if (kind == StrangerKind::kCurveWithItsOwnKey) {
      // The job's public key is no secret; the stranger's own pair differs.
      const CurveKeys job_keys = DeriveCurveKeys(SecretFilledWith(1));
      const CurveKeys own_keys = DeriveCurveKeys(SecretFilledWith(2));
      socket.set(zmq::sockopt::curve_serverkey, job_keys.public_key);
      socket.set(zmq::sockopt::curve_publickey, own_keys.public_key);
      socket.set(zmq::sockopt::curve_secretkey, own_keys.secret_key);
    }
    socket.connect(endpoint);
    FrameHeader header;
    header.job_id = kJob;
    header.source_rank = kImpersonatedRank;
    header.tag = kTag;
    header.message_length = 4;
    header.payload_length = 4;
    const EncodedFrameHeader encoded = EncodeFrameHeader(header);
    (void)socket.send(zmq::buffer(encoded), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)socket.send(zmq::str_buffer("evil"), zmq::send_flags::dontwait);
  }

  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
  HandshakeWatch handshakes{context, socket};
};

TEST(SecureZmqTransport, RanksHoldingTheSecretExchangeMessages) {
  auto transports = World(SecretFilledWith(1));
  const std::string hello = "hello";
  ASSERT_TRUE(transports[0]->Send(1, FrameKey{kTag}, std::as_bytes(std::span(hello)),
                                  Clock::now() + milliseconds(5000)));
  Result<Message> got = transports[1]->Recv(0, kTag, Clock::now() + milliseconds(5000));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(Text(*got), hello);
  const std::string big(3 * kMaxChunkBytes + 17, 'x');
  ASSERT_TRUE(transports[1]->Send(0, FrameKey{kTag}, std::as_bytes(std::span(big)),
                                  Clock::now() + milliseconds(5000)));
  got = transports[0]->Recv(1, kTag, Clock::now() + milliseconds(5000));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(Text(*got), big);
}

// Issue 16: idle plain connections holding the routing ids of ranks 0 and 1,
// opened at every rank before the ranks connect to each other, made an
// unsecured job fail after its timeout, blaming an innocent rank (the real
// rank's connection found its routing id taken). Under a secret the
// squatters never complete a handshake, so they hold no routing id.
TEST(SecureZmqTransport, StrangersClaimingTheRanksRoutingIdsFirstChangeNothing) {
  ZmqTransportOptions options;
  options.timeout = milliseconds(5000);
  options.job_secret = SecretFilledWith(1);
  std::vector<std::shared_ptr<ZmqTransport>> transports = BindZmqWorld(2, options);
  zmq::context_t context(1);
  std::vector<zmq::socket_t> squatters;
  std::vector<std::unique_ptr<HandshakeWatch>> watches;
  for (const std::shared_ptr<ZmqTransport>& transport : transports) {
    for (int rank : {0, 1}) {
      squatters.emplace_back(context, zmq::socket_type::dealer);
      squatters.back().set(zmq::sockopt::linger, 0);
      squatters.back().set(zmq::sockopt::routing_id, "inferno-rank-" + std::to_string(rank));
      watches.push_back(std::make_unique<HandshakeWatch>(context, squatters.back()));
      squatters.back().connect(transport->endpoints().front());
    }
  }
  // The squatters are first: each has tried its handshake, and been refused,
  // before the ranks connect.
  for (size_t i = 0; i < watches.size(); ++i) {
    ASSERT_EQ(watches[i]->Next(milliseconds(10000)), Handshake::kFailed) << "squatter " << i;
  }
  ConnectZmqWorld(transports, kJob);
  const std::string hello = "hello";
  for (int from : {0, 1}) {
    const int to = 1 - from;
    ASSERT_TRUE(transports[from]->Send(to, FrameKey{kTag}, std::as_bytes(std::span(hello)),
                                       Clock::now() + milliseconds(5000)));
    Result<Message> got = transports[to]->Recv(from, kTag, Clock::now() + milliseconds(5000));
    ASSERT_TRUE(got) << "rank " << to << " from rank " << from << ": " << got.error().ToString();
    EXPECT_EQ(Text(*got), hello);
  }
}

// The control for the tests below: without a secret, the injected frame is
// one the transport accepts.
TEST(SecureZmqTransport, WithoutASecretAStrangersFrameIsDelivered) {
  auto transports = World(std::nullopt);
  Stranger stranger(transports[1]->endpoints().front(), StrangerKind::kPlain);
  ASSERT_EQ(stranger.handshakes.Next(milliseconds(10000)), Handshake::kSucceeded);
  Result<Message> got = transports[1]->Recv(kImpersonatedRank, kTag, Clock::now() + milliseconds(5000));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(Text(*got), "evil");
}

class SecureZmqTransportStranger : public testing::TestWithParam<StrangerKind> {};

TEST_P(SecureZmqTransportStranger, CannotDeliverAFrame) {
  auto transports = World(SecretFilledWith(1));
  Stranger stranger(transports[1]->endpoints().front(), GetParam());
  // Refused: the frame has nowhere to go (nor on the retries during the Recv).
  ASSERT_EQ(stranger.handshakes.Next(milliseconds(10000)), Handshake::kFailed);
  Result<Message> injected = transports[1]->Recv(kImpersonatedRank, kTag, Clock::now() + milliseconds(1000));
  ASSERT_FALSE(injected) << "the stranger's frame arrived: '" << Text(*injected) << "'";
  EXPECT_EQ(injected.error().kind, ErrorKind::kTimeout) << injected.error().ToString();
  // The real rank 0 still gets through.
  const std::string real = "real";
  ASSERT_TRUE(transports[0]->Send(1, FrameKey{kTag}, std::as_bytes(std::span(real)),
                                  Clock::now() + milliseconds(5000)));
  Result<Message> got = transports[1]->Recv(0, kTag, Clock::now() + milliseconds(5000));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(Text(*got), real);
}

INSTANTIATE_TEST_SUITE_P(Strangers, SecureZmqTransportStranger,
                         testing::Values(StrangerKind::kPlain, StrangerKind::kCurveWithItsOwnKey),
                         [](const testing::TestParamInfo<StrangerKind>& info) {
                           return info.param == StrangerKind::kPlain ? "Plain" : "CurveWithItsOwnKey";
                         });

TEST(SecureZmqTransport, RankWithAnotherSecretCannotReachAPeer) {
  ZmqTransportOptions options;
  options.world_size = 2;
  options.timeout = milliseconds(1000);
  options.job_secret = SecretFilledWith(1);
  Result<std::shared_ptr<ZmqTransport>> first = ZmqTransport::Bind(options);
  options.rank = 1;
  options.job_secret = SecretFilledWith(3);
  Result<std::shared_ptr<ZmqTransport>> second = ZmqTransport::Bind(options);
  ASSERT_TRUE(first && second);
  const std::vector<std::string> endpoints = {(*first)->endpoints().front(), (*second)->endpoints().front()};
  ASSERT_TRUE((*first)->Connect(endpoints, kJob));
  ASSERT_TRUE((*second)->Connect(endpoints, kJob));
  const std::string hello = "hello";
  (void)(*second)->Send(0, FrameKey{kTag}, std::as_bytes(std::span(hello)),
                        Clock::now() + milliseconds(1000));
  Result<Message> got = (*first)->Recv(1, kTag, Clock::now() + milliseconds(1000));
  ASSERT_FALSE(got) << "a rank with another secret delivered '" << Text(*got) << "'";
}

}  // namespace
}  // namespace inferno
