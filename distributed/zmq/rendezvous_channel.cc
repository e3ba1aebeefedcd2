#include "distributed/zmq/rendezvous_channel.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include <zmq.hpp>

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

bool IsIpv4Literal(const std::string& address) {
  in_addr parsed;
  return inet_pton(AF_INET, address.c_str(), &parsed) == 1;
}

// Waits until `socket` is readable or `deadline` passes; true if readable.
bool WaitReadable(zmq::socket_t& socket, Deadline deadline) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  while (true) {
    try {
      return zmq::poll(&item, 1, TimeLeft(deadline)) > 0;
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) throw;
    }
  }
}

}  // namespace

struct RendezvousServer::Impl {
  zmq::context_t context{1};
  zmq::socket_t router{context, zmq::socket_type::router};
  std::string address;
  int port = 0;
};

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Listen(const std::string& address,
                                                                   int port) {
  auto impl = std::make_unique<Impl>();
  impl->address = address;
  const std::string where = address + ":" + std::to_string(port);
  try {
    impl->router.set(zmq::sockopt::router_mandatory, true);
    impl->router.set(zmq::sockopt::linger, kLingerMs);
    impl->router.set(zmq::sockopt::maxmsgsize, kMaxRendezvousMessageBytes);
    impl->router.bind("tcp://" + (IsIpv4Literal(address) ? address : std::string("*")) + ":" +
                      std::to_string(port));
    const std::string bound = impl->router.get(zmq::sockopt::last_endpoint);
    impl->port = std::stoi(bound.substr(bound.rfind(':') + 1));
  } catch (const zmq::error_t& error) {
    return CollectiveError::Transport("rendezvous: rank 0 cannot listen on " + where + ": " +
                                      error.what());
  }
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(std::move(impl)));
}

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() = default;

int RendezvousServer::port() const { return impl_->port; }

Result<RendezvousServer::Request> RendezvousServer::Receive(Deadline deadline) {
  const Clock::time_point start = Clock::now();
  try {
    while (WaitReadable(impl_->router, deadline)) {
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
    return CollectiveError::Transport("rendezvous: receive at " + impl_->address + ":" +
                                      std::to_string(impl_->port) + ": " + error.what());
  }
  return CollectiveError::Timeout(
      "rendezvous at " + impl_->address + ":" + std::to_string(impl_->port), -1,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
}

Status RendezvousServer::Reply(const std::string& client, const std::string& body) {
  try {
    impl_->router.send(zmq::buffer(client), zmq::send_flags::sndmore);
    impl_->router.send(zmq::buffer(body), zmq::send_flags::none);
  } catch (const zmq::error_t& error) {
    return CollectiveError::Transport("rendezvous: reply from " + impl_->address + ":" +
                                      std::to_string(impl_->port) + ": " + error.what());
  }
  return {};
}

struct RendezvousClient::Impl {
  zmq::context_t context{1};
  zmq::socket_t dealer{context, zmq::socket_type::dealer};
  std::string where;
};

Result<std::unique_ptr<RendezvousClient>> RendezvousClient::Connect(const std::string& address,
                                                                    int port) {
  auto impl = std::make_unique<Impl>();
  impl->where = address + ":" + std::to_string(port);
  try {
    impl->dealer.set(zmq::sockopt::linger, kLingerMs);
    impl->dealer.set(zmq::sockopt::maxmsgsize, kMaxRendezvousMessageBytes);
    impl->dealer.connect("tcp://" + impl->where);
  } catch (const zmq::error_t& error) {
    return CollectiveError::Transport("rendezvous: cannot connect to " + impl->where + ": " +
                                      error.what());
  }
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(std::move(impl)));
}

RendezvousClient::RendezvousClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousClient::~RendezvousClient() = default;

Status RendezvousClient::Send(const std::string& body) {
  try {
    impl_->dealer.send(zmq::buffer(body), zmq::send_flags::none);
  } catch (const zmq::error_t& error) {
    return CollectiveError::Transport("rendezvous: send to " + impl_->where + ": " +
                                      error.what());
  }
  return {};
}

Result<std::string> RendezvousClient::Receive(Deadline deadline) {
  const Clock::time_point start = Clock::now();
  try {
    while (WaitReadable(impl_->dealer, deadline)) {
      zmq::message_t body;
      if (impl_->dealer.recv(body, zmq::recv_flags::dontwait)) return body.to_string();
    }
  } catch (const zmq::error_t& error) {
    return CollectiveError::Transport("rendezvous: receive from " + impl_->where + ": " +
                                      error.what());
  }
  return CollectiveError::Timeout(
      "rendezvous: waiting for the table from rank 0 at " + impl_->where, 0,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
}

}  // namespace inferno
