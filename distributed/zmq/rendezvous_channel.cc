#include "distributed/zmq/rendezvous_channel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "distributed/zmq/curve_auth.h"

namespace inferno {
namespace {

// Bounded so that closing never blocks on a vanished peer.
constexpr int kLingerMs = 1000;

// The largest rendezvous message accepted: far above any real endpoint table,
// far below what a stranger's length field could make ZeroMQ allocate.
constexpr int64_t kMaxRendezvousMessageBytes = 1 << 20;

// Time left until `deadline`, at least 0.
std::chrono::milliseconds TimeLeft(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

// The IPv4 address `address` (a literal or a host name) resolves to.
Result<std::string> ResolveIpv4(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(address.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Error::Transport("rendezvous: rank 0 cannot resolve MASTER_ADDR '" + address +
                            "': " + gai_strerror(rc));
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof(text));
  freeaddrinfo(found);
  return std::string(text);
}

// The largest rendezvous message on the wire: CURVE makes each one longer.
int64_t MaxWireMessageBytes(const std::optional<JobSecret>& secret) {
  return kMaxRendezvousMessageBytes + (secret ? kCurveMessageOverhead : 0);
}

// Waits until one of `sockets` is readable or `deadline` passes; true if one
// is readable.
bool WaitReadable(std::initializer_list<zmq::socket_t*> sockets, Deadline deadline) {
  std::vector<zmq::pollitem_t> items;
  for (zmq::socket_t* socket : sockets) items.push_back({socket->handle(), 0, ZMQ_POLLIN, 0});
  while (true) {
    try {
      return zmq::poll(items.data(), items.size(), TimeLeft(deadline)) > 0;
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) throw;
    }
  }
}

// Why a secured server and an unsecured client cannot talk.
std::string SecretOnOneSide() {
  return std::string("the security handshake failed: is ") + kJobSecretVariable +
         " set on every rank or on none?";
}

}  // namespace

struct RendezvousServer::Impl {
  zmq::context_t context{1};
  std::unique_ptr<ZapHandler> zap_handler;  // secured: stops before the context
  zmq::socket_t router{context, zmq::socket_type::router};
  std::string address;
  int port = 0;
};

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Listen(const std::string& address, int port,
                                                                   const std::optional<JobSecret>& secret) {
  auto impl = std::make_unique<Impl>();
  impl->address = address;
  const std::string where = address + ":" + std::to_string(port);
  Result<std::string> resolved = ResolveIpv4(address);
  if (!resolved) return std::move(resolved).error();
  std::optional<CurveKeys> keys;
  if (secret) {
    keys = DeriveCurveKeys(*secret);
    Result<std::unique_ptr<ZapHandler>> zap_handler =
        ZapHandler::Start(impl->context, *keys, "rank 0's rendezvous at " + address);
    if (!zap_handler) return std::move(zap_handler).error();
    impl->zap_handler = std::move(*zap_handler);
  }
  try {
    if (keys) MakeCurveServer(impl->router, *keys);
    impl->router.set(zmq::sockopt::router_mandatory, true);
    impl->router.set(zmq::sockopt::linger, kLingerMs);
    impl->router.set(zmq::sockopt::maxmsgsize, MaxWireMessageBytes(secret));
    impl->router.bind("tcp://" + *resolved + ":" + std::to_string(port));
    const std::string bound = impl->router.get(zmq::sockopt::last_endpoint);
    impl->port = std::stoi(bound.substr(bound.rfind(':') + 1));
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: rank 0 cannot listen on " + where + ": " + error.what());
  }
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(std::move(impl)));
}

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() = default;

int RendezvousServer::port() const { return impl_->port; }

Result<RendezvousServer::Request> RendezvousServer::Receive(Deadline deadline) {
  const Clock::time_point start = Clock::now();
  try {
    while (WaitReadable({&impl_->router}, deadline)) {
      zmq::message_t client;
      zmq::message_t body;
      if (!impl_->router.recv(client, zmq::recv_flags::dontwait)) continue;
      if (!client.more() || !impl_->router.recv(body, zmq::recv_flags::none)) continue;
      // Skip any further parts: a well-behaved client sends exactly one.
      for (bool more = body.more(); more;) {
        zmq::message_t extra;
        if (!impl_->router.recv(extra, zmq::recv_flags::none)) break;
        more = extra.more();
      }
      return Request{client.to_string(), body.to_string()};
    }
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: receive at " + impl_->address + ":" + std::to_string(impl_->port) +
                            ": " + error.what());
  }
  return Error::Timeout("rendezvous at " + impl_->address + ":" + std::to_string(impl_->port), -1,
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
}

Status RendezvousServer::Reply(const std::string& client, const std::string& body) {
  try {
    impl_->router.send(zmq::buffer(client), zmq::send_flags::sndmore);
    impl_->router.send(zmq::buffer(body), zmq::send_flags::none);
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: reply from " + impl_->address + ":" + std::to_string(impl_->port) +
                            ": " + error.what());
  }
  return {};
}

struct RendezvousClient::Impl {
  zmq::context_t context{1};
  zmq::socket_t dealer{context, zmq::socket_type::dealer};
  // Receives the DEALER's failed-handshake events.
  zmq::socket_t handshake_monitor{context, zmq::socket_type::pair};
  std::string where;
  bool secured = false;
  // Unsecured only: a connection was dropped during the handshake. The
  // client retries, so this is reported only if no table ever arrives.
  bool handshake_dropped = false;

  ~Impl() {
    // Stop the events before their reader closes: ZeroMQ's I/O thread would
    // block on an event nobody reads.
    zmq_socket_monitor(dealer.handle(), nullptr, 0);
  }

  // A Transport error if the server refused the handshake (reads one event).
  Status CheckHandshake();

  // The error for a secured client refused by the server, or for an
  // unsecured one whose handshakes failed.
  Error Refused(const std::string& reason) const;
};

Status RendezvousClient::Impl::CheckHandshake() {
  zmq::message_t event;
  if (!handshake_monitor.recv(event, zmq::recv_flags::dontwait)) return {};
  zmq::message_t endpoint;
  if (event.more()) (void)handshake_monitor.recv(endpoint, zmq::recv_flags::none);
  uint16_t id = 0;
  if (event.size() >= sizeof(id)) std::memcpy(&id, event.data(), sizeof(id));
  // A secured server meeting an unsecured client usually says so (protocol),
  // but when it drops the connection before the client has read its greeting
  // the client sees no detail; a client without a secret notes that and
  // keeps waiting, since a dropped handshake alone proves nothing.
  if (!secured && id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
    handshake_dropped = true;
    return {};
  }
  // A server holding another secret cannot read the client's CURVE hello and
  // drops the connection (no detail); one that holds no secret, or whose
  // handler refuses the key, says so.
  if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) return Refused(SecretOnOneSide());
  return Refused(std::string("it does not accept this rank's key: is ") + kJobSecretVariable +
                 " the same on every rank?");
}

Error RendezvousClient::Impl::Refused(const std::string& reason) const {
  return Error::Transport("rendezvous: rank 0 at " + where + " refused this rank: " + reason);
}

Result<std::unique_ptr<RendezvousClient>> RendezvousClient::Connect(const std::string& address, int port,
                                                                    const std::optional<JobSecret>& secret) {
  auto impl = std::make_unique<Impl>();
  impl->where = address + ":" + std::to_string(port);
  impl->secured = secret.has_value();
  try {
    if (secret) MakeCurveClient(impl->dealer, DeriveCurveKeys(*secret));
    impl->dealer.set(zmq::sockopt::linger, kLingerMs);
    impl->dealer.set(zmq::sockopt::maxmsgsize, MaxWireMessageBytes(secret));
    const std::string monitor_endpoint =
        "inproc://rendezvous-handshake-" + std::to_string(reinterpret_cast<uintptr_t>(impl.get()));
    const int events = ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                       ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (zmq_socket_monitor(impl->dealer.handle(), monitor_endpoint.c_str(), events) != 0) {
      throw zmq::error_t();
    }
    impl->handshake_monitor.connect(monitor_endpoint);
    impl->dealer.connect("tcp://" + impl->where);
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: cannot connect to " + impl->where + ": " + error.what());
  }
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(std::move(impl)));
}

RendezvousClient::RendezvousClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousClient::~RendezvousClient() = default;

Status RendezvousClient::Send(const std::string& body) {
  try {
    impl_->dealer.send(zmq::buffer(body), zmq::send_flags::none);
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: send to " + impl_->where + ": " + error.what());
  }
  return {};
}

Result<std::string> RendezvousClient::Receive(Deadline deadline) {
  const Clock::time_point start = Clock::now();
  try {
    while (WaitReadable({&impl_->dealer, &impl_->handshake_monitor}, deadline)) {
      Status handshake = impl_->CheckHandshake();
      if (!handshake) return std::move(handshake).error();
      zmq::message_t body;
      if (impl_->dealer.recv(body, zmq::recv_flags::dontwait)) return body.to_string();
    }
  } catch (const zmq::error_t& error) {
    return Error::Transport("rendezvous: receive from " + impl_->where + ": " + error.what());
  }
  if (impl_->handshake_dropped) return impl_->Refused(SecretOnOneSide());
  return Error::Timeout("rendezvous: waiting for the table from rank 0 at " + impl_->where, 0,
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
}

}  // namespace inferno
