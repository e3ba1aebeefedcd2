// ZmqTransport with a job secret: CURVE-encrypted, and closed to processes
// that do not hold the secret.
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
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

// Sends rank 1 a well-formed frame of this job claiming to come from rank 2,
// over a connection whose routing id is rank 2's; returns after the message
// had time to arrive.
void InjectFrame(const std::string& endpoint, StrangerKind kind) {
  zmq::context_t context(1);
  zmq::socket_t stranger(context, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.set(zmq::sockopt::routing_id, "inferno-rank-" + std::to_string(kImpersonatedRank));
  if (kind == StrangerKind::kCurveWithItsOwnKey) {
    // The job's public key is no secret; the stranger's own pair differs.
    const CurveKeys job_keys = DeriveCurveKeys(SecretFilledWith(1));
    const CurveKeys own_keys = DeriveCurveKeys(SecretFilledWith(2));
    stranger.set(zmq::sockopt::curve_serverkey, job_keys.public_key);
    stranger.set(zmq::sockopt::curve_publickey, own_keys.public_key);
    stranger.set(zmq::sockopt::curve_secretkey, own_keys.secret_key);
  }
  stranger.connect(endpoint);
  FrameHeader header;
  header.job_id = kJob;
  header.source_rank = kImpersonatedRank;
  header.tag = kTag;
  header.message_length = 4;
  header.payload_length = 4;
  const EncodedFrameHeader encoded = EncodeFrameHeader(header);
  (void)stranger.send(zmq::buffer(encoded), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  (void)stranger.send(zmq::str_buffer("evil"), zmq::send_flags::dontwait);
  zmq::pollitem_t item{stranger.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, milliseconds(500));
}

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
  for (const std::shared_ptr<ZmqTransport>& transport : transports) {
    for (int rank : {0, 1}) {
      squatters.emplace_back(context, zmq::socket_type::dealer);
      squatters.back().set(zmq::sockopt::linger, 0);
      squatters.back().set(zmq::sockopt::routing_id, "inferno-rank-" + std::to_string(rank));
      squatters.back().connect(transport->endpoints().front());
    }
  }
  // Give the squatters' connections time to be first (not an assertion).
  std::this_thread::sleep_for(milliseconds(300));
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
  InjectFrame(transports[1]->endpoints().front(), StrangerKind::kPlain);
  Result<Message> got = transports[1]->Recv(kImpersonatedRank, kTag, Clock::now() + milliseconds(5000));
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(Text(*got), "evil");
}

class SecureZmqTransportStranger : public testing::TestWithParam<StrangerKind> {};

TEST_P(SecureZmqTransportStranger, CannotDeliverAFrame) {
  auto transports = World(SecretFilledWith(1));
  InjectFrame(transports[1]->endpoints().front(), GetParam());
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
