// The sockets of the rendezvous (see distributed/rendezvous.h), kept here so
// that only //distributed/zmq includes ZeroMQ: rank 0 listens with a
// RendezvousServer, every other rank talks to it through a RendezvousClient.
// Messages are opaque strings. Given a job secret, both ends use CURVE (see
// curve_auth.h): the server admits only clients holding the secret, and a
// client learns at once when the server refuses its key.
//
// Thread-safety: each object is used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "distributed/job_secret.h"
#include "distributed/transport.h"

namespace inferno {

class RendezvousServer {
 public:
  struct Request {
    std::string client;  // opaque id to reply to
    std::string body;
  };

  // Listens on tcp://`address`:`port` (port 0: any free port; a host name
  // listens on the IPv4 address it resolves to, never on every interface).
  // With `secret`, only clients holding it get through. Errors: Transport
  // naming address:port (the name does not resolve, the port is in use).
  static Result<std::unique_ptr<RendezvousServer>> Listen(const std::string& address, int port,
                                                          const std::optional<JobSecret>& secret);
  ~RendezvousServer();

  // The port actually bound.
  int port() const;

  // The next request; Timeout (peer -1) if none arrives by `deadline`.
  Result<Request> Receive(Deadline deadline);

  // Sends `body` to the client that sent a request. Errors: Transport when
  // the client is gone.
  Status Reply(const std::string& client, const std::string& body);

 private:
  struct Impl;
  explicit RendezvousServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class RendezvousClient {
 public:
  // Connects (asynchronously: the server may come up later) to
  // tcp://`address`:`port`, with `secret` as a CURVE client.
  static Result<std::unique_ptr<RendezvousClient>> Connect(const std::string& address, int port,
                                                           const std::optional<JobSecret>& secret);
  ~RendezvousClient();

  // Queues `body` for the server.
  Status Send(const std::string& body);

  // The server's next message; Timeout (peer 0) if none arrives by
  // `deadline`; Transport as soon as the server refuses the handshake (its
  // key or security mechanism differs from this client's).
  Result<std::string> Receive(Deadline deadline);

 private:
  struct Impl;
  explicit RendezvousClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferno
