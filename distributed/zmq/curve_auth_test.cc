#include "distributed/zmq/curve_auth.h"

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "distributed/testing/secret_filled_with.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

// A CURVE server ROUTER of the job on `context`, bound to a free loopback port.
struct Server {
  zmq::socket_t router;
  std::string endpoint;

  Server(zmq::context_t& context, const CurveKeys& keys) : router(context, zmq::socket_type::router) {
    router.set(zmq::sockopt::linger, 0);
    MakeCurveServer(router, keys);
    router.bind("tcp://127.0.0.1:0");
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }

  // The body of the next message ("" if none arrives within `wait`).
  std::string Receive(milliseconds wait) {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) == 0) return "";
    zmq::message_t routing_id, body;
    EXPECT_TRUE(router.recv(routing_id));
    EXPECT_TRUE(router.recv(body));
    return body.to_string();
  }
};

zmq::socket_t Dealer(zmq::context_t& context) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  return dealer;
}

TEST(ZapHandler, AdmitsAClientHoldingTheJobKey) {
  const CurveKeys keys = DeriveCurveKeys(SecretFilledWith(1));
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> zap = ZapHandler::Start(context, keys, "test server");
  ASSERT_TRUE(zap) << zap.error().ToString();
  Server server(context, keys);
  zmq::socket_t client = Dealer(context);
  MakeCurveClient(client, keys);
  client.connect(server.endpoint);
  client.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  EXPECT_EQ(server.Receive(milliseconds(5000)), "hello");
  EXPECT_EQ((*zap)->denied(), 0);
}

TEST(ZapHandler, RefusesAClientWithAnotherKeyThatKnowsTheServerKey) {
  const CurveKeys keys = DeriveCurveKeys(SecretFilledWith(1));
  const CurveKeys stranger_keys = DeriveCurveKeys(SecretFilledWith(2));
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> zap = ZapHandler::Start(context, keys, "test server");
  ASSERT_TRUE(zap) << zap.error().ToString();
  Server server(context, keys);
  zmq::socket_t stranger = Dealer(context);
  // The public server key is no secret: the stranger knows it.
  stranger.set(zmq::sockopt::curve_serverkey, keys.public_key);
  stranger.set(zmq::sockopt::curve_publickey, stranger_keys.public_key);
  stranger.set(zmq::sockopt::curve_secretkey, stranger_keys.secret_key);
  stranger.connect(server.endpoint);
  stranger.send(zmq::str_buffer("injected"), zmq::send_flags::dontwait);
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while ((*zap)->denied() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GT((*zap)->denied(), 0);
  EXPECT_EQ(server.Receive(milliseconds(500)), "");
}

TEST(ZapHandler, RefusesAClientWithoutCurve) {
  const CurveKeys keys = DeriveCurveKeys(SecretFilledWith(1));
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> zap = ZapHandler::Start(context, keys, "test server");
  ASSERT_TRUE(zap) << zap.error().ToString();
  Server server(context, keys);
  zmq::context_t stranger_context(1);
  zmq::socket_t stranger = Dealer(stranger_context);
  stranger.connect(server.endpoint);
  stranger.send(zmq::str_buffer("plain text"), zmq::send_flags::dontwait);
  EXPECT_EQ(server.Receive(milliseconds(1000)), "");
}

TEST(ZapHandler, SecondHandlerOnOneContextIsAnError) {
  const CurveKeys keys = DeriveCurveKeys(SecretFilledWith(1));
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> first = ZapHandler::Start(context, keys, "first");
  ASSERT_TRUE(first);
  Result<std::unique_ptr<ZapHandler>> second = ZapHandler::Start(context, keys, "second");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, ErrorKind::kTransport);
  EXPECT_NE(second.error().message.find("second"), std::string::npos);
}

TEST(ZapHandler, StopsPromptlyWhenDestroyed) {
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> zap =
      ZapHandler::Start(context, DeriveCurveKeys(SecretFilledWith(1)), "test server");
  ASSERT_TRUE(zap);
  const auto started = std::chrono::steady_clock::now();
  zap->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(1000));
}

TEST(ZapHandler, StopsWhenItsContextShutsDown) {
  zmq::context_t context(1);
  Result<std::unique_ptr<ZapHandler>> zap =
      ZapHandler::Start(context, DeriveCurveKeys(SecretFilledWith(1)), "test server");
  ASSERT_TRUE(zap);
  context.shutdown();
  const auto started = std::chrono::steady_clock::now();
  zap->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(1000));
}

}  // namespace
}  // namespace inferno
