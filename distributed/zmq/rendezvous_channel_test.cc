#include "distributed/zmq/rendezvous_channel.h"

#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "distributed/testing/secret_filled_with.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

// Sends "hello" from a client holding `client_secret` to a server holding
// `server_secret` (on localhost, a host name) and returns what the server
// received, or the client's error once the server never answers.
std::string Exchange(const std::optional<JobSecret>& server_secret,
                     const std::optional<JobSecret>& client_secret) {
  Result<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen("localhost", 0, server_secret);
  if (!server) return server.error().ToString();
  EXPECT_GT((*server)->port(), 0);
  Result<std::unique_ptr<RendezvousClient>> client =
      RendezvousClient::Connect("127.0.0.1", (*server)->port(), client_secret);
  if (!client) return client.error().ToString();
  EXPECT_TRUE((*client)->Send("hello"));
  Result<RendezvousServer::Request> request = (*server)->Receive(Clock::now() + milliseconds(2000));
  if (!request) {
    Result<std::string> reply = (*client)->Receive(Clock::now() + milliseconds(2000));
    return reply ? "unexpected reply" : reply.error().ToString();
  }
  EXPECT_TRUE((*server)->Reply(request->client, "table"));
  Result<std::string> reply = (*client)->Receive(Clock::now() + milliseconds(2000));
  EXPECT_TRUE(reply && *reply == "table");
  return request->body;
}

TEST(RendezvousChannel, HostNameListensOnItsAddress) {
  EXPECT_EQ(Exchange(std::nullopt, std::nullopt), "hello");
}

TEST(RendezvousChannel, UnresolvableHostNameIsAnErrorNamingMasterAddr) {
  Result<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Listen("no-such-host.invalid", 0, std::nullopt);
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().kind, ErrorKind::kTransport);
  EXPECT_NE(server.error().message.find("MASTER_ADDR 'no-such-host.invalid'"), std::string::npos)
      << server.error().message;
}

TEST(RendezvousChannel, SameSecretOnBothEndsExchanges) {
  EXPECT_EQ(Exchange(SecretFilledWith(4), SecretFilledWith(4)), "hello");
}

TEST(RendezvousChannel, ClientWithAnotherSecretIsToldItWasRefused) {
  const std::string result = Exchange(SecretFilledWith(4), SecretFilledWith(5));
  EXPECT_EQ(result.rfind("Transport: rendezvous: rank 0 at 127.0.0.1:", 0), 0u) << result;
  EXPECT_NE(result.find("does not accept this rank's key"), std::string::npos) << result;
}

TEST(RendezvousChannel, ClientWithoutASecretIsToldTheHandshakeFailed) {
  const std::string result = Exchange(SecretFilledWith(4), std::nullopt);
  EXPECT_NE(result.find("the security handshake failed"), std::string::npos) << result;
}

TEST(RendezvousChannel, SecuredClientOfAnUnsecuredServerIsToldTheHandshakeFailed) {
  const std::string result = Exchange(std::nullopt, SecretFilledWith(4));
  EXPECT_NE(result.find("refused this rank"), std::string::npos) << result;
}

}  // namespace
}  // namespace inferno
