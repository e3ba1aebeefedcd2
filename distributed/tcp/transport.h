// TcpTransport: a Transport over one plain TCP connection per pair of ranks
// on different hosts, both directions on it (so acknowledgements ride on the
// reverse traffic: with one connection per direction, the receiver's delayed
// ACKs stalled decode's small messages for tens of ms), written and read by
// the calling threads themselves (no I/O thread), each frame sealed
// (frame_seal.h). It carries
// data only: the job's control plane (rendezvous, heartbeats, liveness and
// abort notices) stays on ZeroMQ, and reaches this transport's waits through
// TcpTransportOptions::also_check (RoutedTransport joins the two).
//
// Each rank listens on one port (Listen) and, in Connect, connects to every
// higher peer's port, sends a sealed hello, and accepts the connections of
// its lower peers: a
// connection whose first frame does not open under the key of the rank it
// claims to be (a stranger, junk, a replay, a rank already connected) is
// closed and logged, and the job goes on. Once every peer is in, the
// listening socket is closed, so later strangers are refused by the kernel.
// Sockets have TCP_NODELAY and large buffers (TcpTransportOptions).
//
// Sending seals the message in frames of at most kMaxChunkBytes and writes
// them under the peer's send lock; while the socket is full the sender reads
// whatever its peers sent meanwhile into the Mailbox, so two ranks sending
// each other more than the socket buffers hold never wait on each other.
// Receiving: one Recv caller at a time reads a peer's socket, queuing
// messages with other tags in a Mailbox where concurrent callers find
// theirs. A reader that finds nothing spins on the non-blocking socket for
// TcpTransportOptions::busy_poll, then sleeps in poll() for at most
// check_interval at a time, running also_check between sleeps, up to the
// caller's deadline. A peer's closed connection is PeerLost once its
// messages are taken (at once after its goodbye; after lost_grace, in which
// an abort notice on the control plane can still arrive, otherwise).
// Close sends every peer a goodbye, Abort the reason (as kAbort); both then
// shut the connections down.
//
//   auto transport = TcpTransport::Listen(options);   // every rank
//   ... publish (*transport)->port() and ->key() to every rank ...
//   (*transport)->Connect(addresses, job_id, deadline);
//
// Thread-safety: Send, Recv, Close and Abort may be called from several
// threads at once once Connect has returned; Listen and Connect are called
// once, by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/tcp/frame_seal.h"
#include "distributed/transport.h"

namespace inferno {

struct TcpTransportOptions {
  int rank = 0;
  int world_size = 1;
  // Transport::timeout(): how long one wait may take.
  std::chrono::milliseconds timeout{60000};
  // The numeric IPv4 address to listen on (port chosen by the kernel).
  std::string bind_address = "127.0.0.1";
  // How long a reader polls its non-blocking socket before sleeping in
  // poll(): a reply within it costs no wake-up.
  std::chrono::microseconds busy_poll{50};
  // SO_SNDBUF and SO_RCVBUF of every connection.
  int socket_buffer_bytes = 4 << 20;
  // The longest single sleep of a wait; also_check runs at least this often.
  std::chrono::milliseconds check_interval{50};
  // After a peer's connection closes without a goodbye, how long a Recv
  // from it still waits for an abort notice before failing with PeerLost.
  std::chrono::milliseconds lost_grace{500};
  // Unset, or run between the sleeps of every wait: an error ends the wait
  // with it (the control plane's abort notices and liveness verdicts).
  std::function<Status()> also_check;
};

// Where a peer's data port is and the key its frames are sealed for.
struct TcpPeerAddress {
  std::string address;  // numeric IPv4
  int port = 0;
  DataKey key;
};

class TcpTransport : public Transport {
 public:
  // Listens on options.bind_address and makes this rank's DataKey. Errors:
  // InvalidArgument (rank outside the world), Transport naming the address
  // that could not be listened on.
  static Result<std::shared_ptr<TcpTransport>> Listen(const TcpTransportOptions& options);

  ~TcpTransport() override;

  int port() const;
  // The key peers seal their frames to this rank with (from which each
  // direction's key is derived); publish it only over a secured channel.
  const DataKey& key() const;

  // Connects to every peer that has an address (`peers[i]` is rank i's;
  // this rank's entry is ignored; a peer without one is not reachable over
  // this transport, and must leave this rank out likewise) and accepts each
  // such peer's connection, all by `deadline`; then stops listening.
  // Errors: InvalidArgument (wrong table size, called twice), Transport
  // naming the rank whose port could not be reached, Timeout naming the
  // ranks whose connection did not arrive.
  Status Connect(const std::vector<std::optional<TcpPeerAddress>>& peers, uint64_t job_id, Deadline deadline);

  int rank() const override;
  int world_size() const override;
  std::chrono::milliseconds timeout() const override;
  using Transport::Send;
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
              Deadline deadline) override;
  Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) override;
  // An abort notice that arrived over this transport, then also_check.
  Status CheckAbortNotices() override;
  void Close() override;
  void Abort(const std::string& reason) override;

 private:
  struct Impl;
  explicit TcpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferno
