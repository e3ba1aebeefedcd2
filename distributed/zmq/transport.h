// ZmqTransport: a Transport over ZeroMQ for ranks in separate processes or
// hosts (tcp://) or on one host (ipc://).
//
// Each rank binds one ROUTER socket that receives from every peer, and
// connects one DEALER per peer to send (so DEALER's round-robin never picks
// the wrong peer). There is no I/O thread in the data path: one Recv caller
// at a time holds the ROUTER's mutex and reads it (saving a thread hop per
// message), and only while none does, the liveness thread (below) reads it;
// it validates each frame's header (malformed or foreign frames are dropped
// with a LOG(WARNING) line), reassembles chunked messages and queues them in
// a Mailbox, where concurrent Recv callers find theirs; when it has its own
// message, another waiting caller takes over. Senders use a peer's DEALER
// under that peer's mutex. Payloads travel in chunks of at most
// kMaxChunkBytes, each copied into a ZeroMQ message (see Send). Close sends
// every peer a goodbye frame, so an orderly departure is recorded quietly and
// a later Recv from that rank fails with PeerLost at once; ZeroMQ's own
// heartbeats and the connection monitors find closed connections, and the
// liveness thread stopped and hung peers (see
// ZmqTransportOptions::beat_interval), both seen as PeerLost. A Recv
// that times out pings the peer and says in its Timeout whether the peer
// answered (alive, and waiting too) or not (stopped, hung or unreachable);
// for a peer that answers it waits up to a second longer, so that the abort
// notice of the rank that saw the fault first (see Abort) reaches it. Every
// wait has a deadline; LINGER is bounded so Close never blocks for long.
// With ZmqTransportOptions::job_secret, every connection is CURVE-encrypted
// and only holders of the secret can connect (see curve_auth.h).
//
// Process-wide side effect: the first Bind raises glibc's malloc mmap and
// trim thresholds (32 MiB, 128 MiB), so the memory of received chunks is
// reused instead of unmapped and faulted in again for every message.
//
// Only this library includes zmq.hpp; ZeroMQ's exceptions are caught here and
// become CollectiveErrors.
//
//   auto transport = ZmqTransport::Bind(options);          // every rank
//   ... exchange (*transport)->endpoints() with the other ranks ...
//   (*transport)->Connect(endpoints_of_every_rank, job_id);
//
// Thread-safety: Send, Recv and Close may be called from several threads at
// once once Connect has returned; Bind and Connect are called once, by one
// thread. Connect starts the liveness thread; Close joins it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/ipc_directory.h"
#include "distributed/job_secret.h"
#include "distributed/transport.h"

namespace inferno {

struct ZmqTransportOptions {
  int rank = 0;
  int world_size = 1;
  // Endpoints the ROUTER binds, e.g. {"tcp://127.0.0.1:0", "ipc:///tmp/d/0"}.
  // Port 0 picks a free port; endpoints() reports the result.
  std::vector<std::string> bind_endpoints = {"tcp://127.0.0.1:0"};
  // Transport::timeout(): how long one wait may take.
  std::chrono::milliseconds timeout{60000};
  // ZMQ_HEARTBEAT_IVL / ZMQ_HEARTBEAT_TIMEOUT (and _TTL) on every connection
  // this rank makes (its DEALERs); the ROUTER only answers them.
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // Liveness, the job's one watch for stopped and hung peers on every
  // transport (RoutedTransport's waits on shared memory read it through
  // CheckAbortNotices). From Connect to Close a thread of this transport
  // sends every peer, every `beat_interval`, a heartbeat carrying how long
  // this process has been stalled (base/progress.h: busy in a step, without
  // progress, outside any wait), and reads what arrived when no other
  // thread does; it never waits for the main thread. A peer is watched from
  // its first heartbeat until it says goodbye or its connection drops; a
  // watched peer from which nothing arrived for `silent_limit` (stopped,
  // frozen, unreachable), or whose heartbeat reports a stall of
  // `stall_limit` (hung), is unresponsive: every pending and later wait of
  // this rank, on any peer, fails with PeerLost naming it and saying which
  // (Mailbox::MarkPeerUnresponsive). So every rank names a stopped or hung
  // rank within about the limit plus one beat, whatever `timeout` is, and a
  // rank that computes a long step, or waits on a peer, is never named.
  // While this rank is dropping a stranger's input (within the last
  // silent_limit), its own reading lags behind the junk, so silence is not
  // the peer's: a peer is called silent only after `flooded_silent_limit`
  // then (a reported stall still counts at once).
  // A zero beat_interval turns the watch off.
  std::chrono::milliseconds beat_interval{100};
  std::chrono::milliseconds silent_limit{1500};
  std::chrono::milliseconds flooded_silent_limit{10000};
  std::chrono::milliseconds stall_limit{1500};
  // ZMQ_LINGER: how long Close lets unsent messages drain.
  std::chrono::milliseconds linger{2000};
  // After a peer disconnects, how long a Recv still waits for its messages
  // already in flight before failing with PeerLost.
  std::chrono::milliseconds lost_grace{500};
  // ZMQ_SNDHWM / ZMQ_RCVHWM, in messages (chunks).
  int high_water_mark = 100000;
  // Set: every connection is CURVE-encrypted and only processes holding this
  // secret can connect (see distributed/zmq/curve_auth.h); every rank of the
  // job must have the same one. Unset: plain ZeroMQ.
  std::optional<JobSecret> job_secret;
  // The private directory that holds the ipc:// endpoints of bind_endpoints,
  // if any: the transport keeps it until its sockets are closed, so the
  // directory is removed after them.
  std::shared_ptr<const IpcDirectory> ipc_directory;
};

class ZmqTransport : public Transport {
 public:
  // Creates the ROUTER and binds every endpoint of `options` (with a job
  // secret: as a CURVE server, behind a ZAP handler that admits only holders
  // of the secret). Errors: Transport naming the endpoint that could not be
  // bound (e.g. in use).
  static Result<std::shared_ptr<ZmqTransport>> Bind(const ZmqTransportOptions& options);

  ~ZmqTransport() override;

  // The bound endpoints with actual ports ("tcp://127.0.0.1:41234").
  const std::vector<std::string>& endpoints() const;

  // Connects to every peer — `peer_endpoints[i]` is where rank i receives
  // (entry of this rank ignored) — and starts receiving frames of job
  // `job_id`. Call once, before Send/Recv. Errors: InvalidArgument (wrong
  // table size, called twice), Transport (a bad endpoint).
  Status Connect(const std::vector<std::string>& peer_endpoints, uint64_t job_id);

  int rank() const override;
  int world_size() const override;
  std::chrono::milliseconds timeout() const override;
  using Transport::Send;
  // Every chunk is copied from `head` and `tail` into a message ZeroMQ owns,
  // never sent zero-copy from them: ZeroMQ never frees messages queued for a
  // peer that died, so a zero-copy send could keep reading a caller's buffer
  // forever. A Send waiting for room in a full queue also reads the sockets
  // (unless another thread does) at least every 100 ms, so it ends with
  // PeerLost on an abort notice from any rank or the loss of `peer`, not at
  // its deadline.
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
              Deadline deadline) override;
  Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) override;
  void Close() override;
  // The notice is a kAbort frame queued like the goodbye of Close.
  void Abort(const std::string& reason) override;

  // Reads the frames that have already arrived, without waiting (skipped
  // while another thread reads them: that thread does it), and returns
  // PeerLost naming the rank and quoting its reason once a peer's abort
  // notice is among what arrived; OK otherwise. Also for waits on another
  // transport that must end on a notice sent over this one (RoutedTransport).
  Status CheckAbortNotices() override;
  // The liveness watch's verdicts (see beat_interval): peers found
  // unresponsive or whose connection dropped without a goodbye or abort
  // notice, and this rank once its own beat thread finds that this process
  // was frozen (no beat for silent_limit: SIGSTOP) or stalled for
  // stall_limit (its peers judge it by the same numbers). Call after
  // Connect.
  std::vector<int> LostRanks() const override;

 private:
  struct Impl;
  explicit ZmqTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferno
