#include "distributed/zmq/transport.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <malloc.h>

#include <glog/logging.h>
#include <zmq.hpp>

#include "base/byte_codec.h"
#include "base/progress.h"
#include "distributed/frame_header.h"
#include "distributed/mailbox.h"
#include "distributed/zmq/curve_auth.h"
#include "distributed/zmq/drop_log.h"

namespace inferno {
namespace {

// Chunks at least this large are copied into a pooled buffer (see ChunkPool);
// smaller ones into a message ZeroMQ allocates.
constexpr size_t kPooledChunkBytes = 32 << 10;

// A message's payload as the caller passed it: the bytes of `head` followed by
// those of `tail`, cut into chunks without concatenating them first.
struct GatheredBytes {
  std::span<const std::byte> head;
  std::span<const std::byte> tail;

  size_t size() const { return head.size() + tail.size(); }
  // Bytes [offset, offset + length) when they lie within one part.
  std::optional<std::span<const std::byte>> Contiguous(size_t offset, size_t length) const {
    if (offset + length <= head.size()) return head.subspan(offset, length);
    if (offset >= head.size()) return tail.subspan(offset - head.size(), length);
    return std::nullopt;
  }
  // Copies bytes [offset, offset + out.size()) into `out`.
  void CopyTo(size_t offset, std::span<std::byte> out) const {
    size_t copied = 0;
    if (offset < head.size()) {
      copied = std::min(out.size(), head.size() - offset);
      std::memcpy(out.data(), head.data() + offset, copied);
    }
    if (copied < out.size()) {
      std::memcpy(out.data() + copied, tail.data() + (offset + copied - head.size()), out.size() - copied);
    }
  }
};

// How many free buffers of kMaxChunkBytes a ChunkPool keeps for reuse.
constexpr size_t kMaxFreeChunkBuffers = 32;

// How long one wait on the sockets may last before checking for shutdown.
constexpr std::chrono::milliseconds kIoPollInterval{100};

// How often the reading thread looks at the connection monitors (for lost
// peers) while it waits for frames on the ROUTER.
constexpr std::chrono::milliseconds kMonitorCheckInterval{20};

// How long a receiving thread that is not reading the ROUTER itself sleeps
// before checking whether it should take over.
constexpr std::chrono::milliseconds kFollowerSlice{2};

// After a connection to a peer drops, how long the ROUTER is still read for
// that peer's goodbye frame (which travels on another connection and may
// arrive a little later) before the drop is reported as a lost peer.
constexpr std::chrono::milliseconds kGoodbyeWait{200};
// How long a closing rank waits, for all its peers together, for room in
// their queues for its goodbye or abort notice (SayFarewell).
constexpr std::chrono::milliseconds kFarewellWait{500};

// An abort notice's reason is cut to this many bytes.
constexpr size_t kMaxAbortReasonBytes = 4096;

// The longest a reader that owes other work reads the ROUTER in one go (see
// DrainRouter): half the default beat_interval, so a beat thread reading a
// flood still sends its heartbeats. Before this bound, a rank reading a
// stranger's flood on a loaded machine sent none for 10 s, and its peers
// judged it lost (stranger_flood_test in a CI run of 6 December).
constexpr std::chrono::milliseconds kDrainSlice{50};

// When a Recv times out, the peer is pinged: how long it has to answer, and,
// when it answers (it is alive, and waiting too), how much longer the Recv
// waits for the message or for the abort notice of the rank that saw the
// fault first. Together well under the 2 s a rank may take past its timeout.
constexpr std::chrono::milliseconds kPingWait{250};
constexpr std::chrono::milliseconds kAliveGrace{1000};

// Each DEALER announces itself with this routing id so the receiver can check
// that a frame's source_rank matches the connection it came on.
std::string RoutingId(int rank) { return "inferno-rank-" + std::to_string(rank); }

Error ZmqError(const std::string& what, const zmq::error_t& error) {
  return Error::Transport(what + ": " + error.what());
}

// Bytes from the network (a routing id, an abort reason) as text,
// non-printable bytes as \xNN (strangers send anything).
std::string Printable(const zmq::message_t& bytes) {
  std::string text;
  for (char c : bytes.to_string_view()) {
    if (c >= 0x20 && c < 0x7F) {
      text += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned char>(c));
      text += escaped;
    }
  }
  return text;
}

int Millis(std::chrono::milliseconds duration) { return static_cast<int>(duration.count()); }

// Buffers of kMaxChunkBytes that large chunks are copied into before sending.
// Reusing them spares a fresh allocation, and its page faults, per chunk. A
// buffer belongs to ZeroMQ from the send until ZeroMQ frees the message
// (after writing it, or when the context terminates if the peer died), which
// returns it here through ReturnChunk; so the pool must outlive the context.
// Thread-safety: Take and Return may be called from any thread.
class ChunkPool {
 public:
  std::unique_ptr<std::byte[]> Take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<std::byte[]> buffer = std::move(free_.back());
        free_.pop_back();
        return buffer;
      }
    }
    return std::make_unique_for_overwrite<std::byte[]>(kMaxChunkBytes);
  }

  // Takes back a buffer from Take; frees it if enough are kept already.
  void Return(std::byte* buffer) {
    std::unique_ptr<std::byte[]> returned(buffer);
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxFreeChunkBuffers) free_.push_back(std::move(returned));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<std::byte[]>> free_;  // guarded by mutex_
};

// ZeroMQ allocates every large received message (up to kMaxChunkBytes) with
// malloc, and a collective frees the chunks queued ahead of it several MiB at
// a time; messages longer than a chunk are reassembled into one buffer of
// their length. With glibc's defaults that memory goes back to the kernel
// (the heap is trimmed; blocks of a few MiB are mmapped and unmapped each
// time), so the next message faults in and zeroes fresh pages: ~10% of all CPU samples of a 2-rank 16 MiB
// all_reduce, ~25% of a 16 MiB ping-pong. Serving blocks up to kMallocMmapThresholdBytes from the heap,
// trimmed only past kMallocTrimBytes, lets them be reused. Process-wide; set once, by the first transport.
constexpr int kMallocMmapThresholdBytes = 32 << 20;
constexpr int kMallocTrimBytes = 128 << 20;

struct KeepFreedChunkMemory {
  KeepFreedChunkMemory() {
#ifdef __GLIBC__
    static std::once_flag once;
    std::call_once(once, [] {
      mallopt(M_MMAP_THRESHOLD, kMallocMmapThresholdBytes);
      mallopt(M_TRIM_THRESHOLD, kMallocTrimBytes);
    });
#endif
  }
};

// ZeroMQ's free function for pooled chunks: `hint` is the ChunkPool.
void ReturnChunk(void* data, void* hint) {
  static_cast<ChunkPool*>(hint)->Return(static_cast<std::byte*>(data));
}

// A chunked message being reassembled from one source.
struct PartialMessage {
  FrameHeader first;
  // Left uninitialised: every byte is written by exactly one chunk.
  std::shared_ptr<std::byte[]> bytes;
  uint64_t received = 0;
};

// Where a received message came from, for the drop log: its connection's
// peer address ("127.0.0.1:53412"; empty over ipc), else "an ipc peer".
std::string SourceOf(const zmq::message_t& part) {
  const char* address = zmq_msg_gets(part.handle(), "Peer-Address");
  return address != nullptr && *address != '\0' ? address : "an ipc peer";
}

}  // namespace

struct ZmqTransport::Impl {
  explicit Impl(ZmqTransportOptions transport_options)
      : options(std::move(transport_options)),
        drops("rank " + std::to_string(options.rank), "dropped", "frames",
              [](const std::string& line) { LOG(WARNING) << line; }) {}

  ZmqTransportOptions options;
  DropLog drops;  // every "dropped" warning, rate-limited per source
  KeepFreedChunkMemory keep_freed_chunk_memory;
  ChunkPool chunk_pool;  // declared before context: outlives ZeroMQ's messages
  zmq::context_t context{1};
  // Set for a secured job; the handler is declared after the context so that
  // it stops before the context terminates.
  std::optional<CurveKeys> curve_keys;
  std::unique_ptr<ZapHandler> zap_handler;
  zmq::socket_t router;
  std::vector<std::string> endpoints;

  struct Peer {
    std::mutex mutex;
    zmq::socket_t dealer;  // guarded by mutex
    std::atomic<bool> lost{false};
    // The peer said goodbye (closed in order); set by the ROUTER reader.
    std::atomic<bool> departed{false};
    std::atomic<uint64_t> pongs{0};  // kPong frames received from the peer
    // Liveness, written by the ROUTER reader, judged by the beat thread:
    // when a frame of the peer last arrived (Clock ticks; 0: no heartbeat
    // yet, so the peer is not watched), the stall its last heartbeat
    // reported (ms), and whether it was found unresponsive.
    std::atomic<int64_t> last_heard{0};
    std::atomic<int64_t> stalled_ms{0};
    std::atomic<bool> unresponsive{false};
  };
  std::vector<std::unique_ptr<Peer>> peers;
  // This rank's own verdict on itself, set by the beat thread (see LostRanks).
  std::atomic<bool> self_lost{false};

  // The receiving side: whichever Recv caller holds router_mutex reads the
  // ROUTER and the connection monitors and queues what arrives in the mailbox
  // for every caller.
  std::mutex router_mutex;
  std::vector<zmq::socket_t> monitors;           // guarded by router_mutex
  std::vector<PartialMessage> partial_messages;  // per source; guarded by router_mutex
  Deadline next_monitor_check{};                 // guarded by router_mutex
  int router_receive_timeout_ms = -1;            // ZMQ_RCVTIMEO; guarded by router_mutex

  std::unique_ptr<Mailbox> mailbox;
  uint64_t job_id = 0;
  std::atomic<bool> stopping{false};
  std::atomic<bool> connected{false};
  std::once_flag close_once;

  // The liveness thread (see ZmqTransportOptions::beat_interval), started by
  // Connect and stopped first by Shutdown.
  std::thread beat_thread;
  std::mutex beat_mutex;
  std::condition_variable beat_wake;
  bool beat_stop = false;  // guarded by beat_mutex

  std::string SendWhere(int peer) const {
    return "send from rank " + std::to_string(options.rank) + " to rank " + std::to_string(peer);
  }
  std::string RecvWhere(int peer) const {
    return "recv at rank " + std::to_string(options.rank) + " from rank " + std::to_string(peer);
  }
  // A header of `op` from this rank in this job, for a message of
  // `message_length` bytes; the caller sets the rest.
  FrameHeader OwnHeader(CollectiveOp op, uint64_t message_length) const {
    FrameHeader header;
    header.op = op;
    header.job_id = job_id;
    header.source_rank = static_cast<uint32_t>(options.rank);
    header.message_length = message_length;
    return header;
  }

  void PollSockets(Deadline until);
  void CheckMonitors();
  bool ReceiveFrame(zmq::recv_flags flags);
  // Reads and handles what the ROUTER holds until it is empty or, when
  // `stop_by` is given, that time has passed: under a stranger's flood the
  // queue never empties, and a reader that owes other work (the beat thread
  // its heartbeats) must come back to it.
  void DrainRouter(Deadline stop_by = Deadline::max());
  void HandleFrame(const zmq::message_t& routing_id, const zmq::message_t& header_bytes,
                   zmq::message_t payload);
  void HandleMonitorEvent(int peer);
  Result<Message> Await(int peer, uint32_t tag, Deadline started, Deadline deadline);
  Result<Message> ProbeAfterTimeout(int peer, uint32_t tag, Deadline started);
  bool SendControlFrame(Peer& peer_state, CollectiveOp op, std::string_view payload);
  void SayFarewell(CollectiveOp op, std::string_view reason);
  Status SendChunks(Peer& peer_state, const FrameKey& key, const GatheredBytes& payload, Deadline deadline,
                    int peer);
  void Shutdown();
  void Beat();
  void JudgePeer(int peer, Deadline now);
  void RecordHeard(int source, const zmq::message_t* heartbeat);
};

Result<std::shared_ptr<ZmqTransport>> ZmqTransport::Bind(const ZmqTransportOptions& options) {
  CHECK(options.rank >= 0 && options.rank < options.world_size)
      << "rank " << options.rank << " of " << options.world_size;
  auto impl = std::make_unique<Impl>(options);
  impl->mailbox = std::make_unique<Mailbox>(options.world_size, options.lost_grace);
  impl->partial_messages.resize(options.world_size);
  if (options.job_secret) {
    impl->curve_keys = DeriveCurveKeys(*options.job_secret);
    Result<std::unique_ptr<ZapHandler>> zap_handler =
        ZapHandler::Start(impl->context, *impl->curve_keys, "rank " + std::to_string(options.rank));
    if (!zap_handler) return std::move(zap_handler).error();
    impl->zap_handler = std::move(*zap_handler);
  }
  std::string endpoint;
  try {
    impl->router = zmq::socket_t(impl->context, zmq::socket_type::router);
    if (impl->curve_keys) MakeCurveServer(impl->router, *impl->curve_keys);
    impl->router.set(zmq::sockopt::router_mandatory, true);
    impl->router.set(zmq::sockopt::rcvhwm, options.high_water_mark);
    impl->router.set(zmq::sockopt::maxmsgsize,
                     static_cast<int64_t>(kMaxChunkBytes) + (impl->curve_keys ? kCurveMessageOverhead : 0));
    impl->router.set(zmq::sockopt::linger, Millis(options.linger));
    // No heartbeats of the ROUTER's own (the DEALERs' heartbeats, answered
    // by it, find lost peers): libzmq 4.3.4 sends a heartbeat from a timer
    // without checking for an I/O error, and aborts ("!_io_error") when a
    // connection whose input was stopped by a full queue, as a flood leaves
    // it, was closed by the other end before the timer fired.
    for (const std::string& bind_endpoint : options.bind_endpoints) {
      endpoint = bind_endpoint;
      impl->router.bind(bind_endpoint);
      impl->endpoints.push_back(impl->router.get(zmq::sockopt::last_endpoint));
    }
  } catch (const zmq::error_t& error) {
    return ZmqError("rank " + std::to_string(options.rank) + " cannot bind " + endpoint, error);
  }
  return std::shared_ptr<ZmqTransport>(new ZmqTransport(std::move(impl)));
}

ZmqTransport::ZmqTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ZmqTransport::~ZmqTransport() { Close(); }

const std::vector<std::string>& ZmqTransport::endpoints() const { return impl_->endpoints; }

int ZmqTransport::rank() const { return impl_->options.rank; }

int ZmqTransport::world_size() const { return impl_->options.world_size; }

std::chrono::milliseconds ZmqTransport::timeout() const { return impl_->options.timeout; }

Status ZmqTransport::Connect(const std::vector<std::string>& peer_endpoints, uint64_t job_id) {
  Impl& impl = *impl_;
  const int world = impl.options.world_size;
  if (static_cast<int>(peer_endpoints.size()) != world) {
    return Error::InvalidArgument("connect: " + std::to_string(peer_endpoints.size()) +
                                  " endpoints for a world of " + std::to_string(world));
  }
  if (impl.connected.exchange(true)) {
    return Error::InvalidArgument("connect: rank " + std::to_string(impl.options.rank) +
                                  " is already connected");
  }
  impl.job_id = job_id;
  std::string endpoint;
  try {
    for (int peer = 0; peer < world; ++peer) {
      impl.peers.push_back(std::make_unique<Impl::Peer>());
      if (peer == impl.options.rank) continue;
      zmq::socket_t& dealer = impl.peers.back()->dealer;
      dealer = zmq::socket_t(impl.context, zmq::socket_type::dealer);
      dealer.set(zmq::sockopt::routing_id, RoutingId(impl.options.rank));
      if (impl.curve_keys) MakeCurveClient(dealer, *impl.curve_keys);
      dealer.set(zmq::sockopt::immediate, true);
      dealer.set(zmq::sockopt::sndhwm, impl.options.high_water_mark);
      dealer.set(zmq::sockopt::linger, Millis(impl.options.linger));
      dealer.set(zmq::sockopt::heartbeat_ivl, Millis(impl.options.heartbeat_interval));
      dealer.set(zmq::sockopt::heartbeat_timeout, Millis(impl.options.heartbeat_timeout));
      dealer.set(zmq::sockopt::heartbeat_ttl, Millis(impl.options.heartbeat_timeout));
      // Watch the connection so a peer that goes away becomes PeerLost.
      const std::string monitor_endpoint = "inproc://monitor-" +
                                           std::to_string(reinterpret_cast<uintptr_t>(&impl)) + "-" +
                                           std::to_string(peer);
      endpoint = monitor_endpoint;
      if (zmq_socket_monitor(dealer.handle(), monitor_endpoint.c_str(),
                             ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
        throw zmq::error_t();
      }
      zmq::socket_t monitor(impl.context, zmq::socket_type::pair);
      monitor.connect(monitor_endpoint);
      impl.monitors.push_back(std::move(monitor));
      endpoint = peer_endpoints[peer];
      dealer.connect(peer_endpoints[peer]);
    }
  } catch (const zmq::error_t& error) {
    return ZmqError("rank " + std::to_string(impl.options.rank) + " cannot connect to " + endpoint, error);
  }
  if (impl.options.beat_interval.count() > 0 && world > 1) {
    impl.beat_thread = std::thread([&impl] { impl.Beat(); });
  }
  return {};
}

Status ZmqTransport::Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                          std::span<const std::byte> tail, Deadline deadline) {
  Impl& impl = *impl_;
  if (peer < 0 || peer >= impl.options.world_size) {
    return Error::UnknownRank(impl.SendWhere(peer), peer, impl.options.world_size);
  }
  if (impl.stopping.load()) return Error::Closed(impl.SendWhere(peer));
  if (!impl.connected.load()) {
    return Error::InvalidArgument(impl.SendWhere(peer) + ": Send before Connect");
  }
  if (peer == impl.options.rank) {
    impl.mailbox->Deliver(peer, Message{key, ConcatenatedPayload(head, tail)});
    return {};
  }
  Impl::Peer& peer_state = *impl.peers[peer];
  if (peer_state.lost.load()) return Error::PeerLost(impl.SendWhere(peer), peer);
  // A job another rank gave up on ends every send at once, room or not: a
  // send that never waits for room would never look (the peer's beat thread
  // drains its queue every beat, so the queue may never stay full).
  if (Status aborted = impl.mailbox->JobAborted(); !aborted) return aborted;
  const WaitingOutside waiting;  // for room in the peer's queue
  return impl.SendChunks(peer_state, key, GatheredBytes{head, tail}, deadline, peer);
}

Status ZmqTransport::Impl::SendChunks(Peer& peer_state, const FrameKey& key, const GatheredBytes& payload,
                                      Deadline deadline, int peer) {
  std::lock_guard<std::mutex> lock(peer_state.mutex);
  if (!peer_state.dealer) return Error::Closed(SendWhere(peer));
  FrameHeader header = OwnHeader(key.op, payload.size());
  header.tag = key.tag;
  header.sequence = key.sequence;
  header.element_count = key.element_count;
  size_t offset = 0;
  try {
    do {
      const size_t length = std::min<size_t>(kMaxChunkBytes, payload.size() - offset);
      header.chunk_offset = offset;
      header.payload_length = static_cast<uint32_t>(length);
      const EncodedFrameHeader encoded = EncodeFrameHeader(header);
      // Wait for room under the high-water mark; later parts of a message
      // never block once its first part is queued.
      while (!peer_state.dealer.send(zmq::const_buffer(encoded.data(), encoded.size()),
                                     zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
          return Error::Timeout(SendWhere(peer) + " (send queue full)", peer, options.timeout);
        }
        // Read what arrived meanwhile (unless another thread does): an
        // abort notice, or the monitor's word that the peer is gone, ends
        // the wait now rather than at the deadline.
        if (std::unique_lock<std::mutex> reading(router_mutex, std::try_to_lock); reading.owns_lock()) {
          PollSockets(Clock::now());
        }
        if (peer_state.lost.load()) return Error::PeerLost(SendWhere(peer), peer);
        if (Status aborted = mailbox->JobAborted(); !aborted) return aborted;
        zmq::pollitem_t item{peer_state.dealer.handle(), 0, ZMQ_POLLOUT, 0};
        zmq::poll(&item, 1, std::min(left, kIoPollInterval));
      }
      const std::optional<std::span<const std::byte>> chunk = payload.Contiguous(offset, length);
      if (length >= kPooledChunkBytes) {
        std::unique_ptr<std::byte[]> buffer = chunk_pool.Take();
        payload.CopyTo(offset, std::span<std::byte>(buffer.get(), length));
        zmq::message_t message(buffer.get(), length, &ReturnChunk, &chunk_pool);
        buffer.release();  // ZeroMQ returns it through ReturnChunk
        peer_state.dealer.send(message, zmq::send_flags::none);
      } else if (chunk) {
        peer_state.dealer.send(zmq::const_buffer(chunk->data(), length), zmq::send_flags::none);
      } else {
        zmq::message_t message(length);  // a chunk straddling head and tail
        payload.CopyTo(offset, std::span<std::byte>(static_cast<std::byte*>(message.data()), length));
        peer_state.dealer.send(message, zmq::send_flags::none);
      }
      offset += length;
    } while (offset < payload.size());
  } catch (const zmq::error_t& error) {
    return ZmqError(SendWhere(peer), error);
  }
  return {};
}

Result<Message> ZmqTransport::Recv(int peer, uint32_t tag, Deadline deadline) {
  Impl& impl = *impl_;
  if (!impl.connected.load()) {
    return Error::InvalidArgument(impl.RecvWhere(peer) + ": Recv before Connect");
  }
  const WaitingOutside waiting;
  const Deadline started = Clock::now();
  Result<Message> got = impl.Await(peer, tag, started, deadline);
  if (got || got.error().kind != ErrorKind::kTimeout || peer == impl.options.rank) return got;
  return impl.ProbeAfterTimeout(peer, tag, started);
}

// Tells a stopped, hung or unreachable peer from one that is alive and
// waiting too, and gives the abort notice of the rank that saw the fault
// first (see Abort) time to arrive, so that this rank reports that fault
// rather than a neighbour waiting like itself.
Result<Message> ZmqTransport::Impl::ProbeAfterTimeout(int peer, uint32_t tag, Deadline started) {
  Peer& peer_state = *peers[peer];
  const uint64_t pongs_before = peer_state.pongs.load();
  {
    std::lock_guard<std::mutex> lock(peer_state.mutex);
    SendControlFrame(peer_state, CollectiveOp::kPing, {});
  }
  Result<Message> got = Await(peer, tag, started, Clock::now() + kPingWait);
  if (got || got.error().kind != ErrorKind::kTimeout) return got;
  if (peer_state.pongs.load() == pongs_before) {
    Error timeout = std::move(got).error();
    timeout.message += "; rank " + std::to_string(peer) + " did not answer a ping within " +
                       std::to_string(kPingWait.count()) + " ms (stopped, hung or unreachable)";
    return timeout;
  }
  got = Await(peer, tag, started, Clock::now() + kAliveGrace);
  if (got || got.error().kind != ErrorKind::kTimeout) return got;
  Error timeout = std::move(got).error();
  timeout.message += "; rank " + std::to_string(peer) + " answers pings but sent nothing";
  return timeout;
}

// Waits for the message, reading the sockets while no other thread does.
Result<Message> ZmqTransport::Impl::Await(int peer, uint32_t tag, Deadline started, Deadline deadline) {
  while (true) {
    std::unique_lock<std::mutex> reading(router_mutex, std::try_to_lock);
    if (!reading.owns_lock()) {
      // Another thread reads the sockets; wait for it to deliver.
      Result<std::optional<Message>> taken =
          mailbox->TakeUntil(peer, tag, started, deadline, std::min(deadline, Clock::now() + kFollowerSlice));
      if (!taken) return std::move(taken).error();
      if (*taken) return std::move(**taken);
      continue;
    }
    // This thread reads the sockets until its own message is queued.
    Result<std::optional<Message>> taken{std::optional<Message>()};
    // Sleeping in PollSockets at once, rather than spinning first, measured
    // faster on small machines, where a spinning reader takes the CPU that
    // ZeroMQ's I/O threads need to deliver the message it waits for.
    while (true) {
      taken = mailbox->TakeUntil(peer, tag, started, deadline, Clock::now());
      if (!taken || *taken || stopping.load()) break;
      PollSockets(std::min(deadline, Clock::now() + kIoPollInterval));
    }
    reading.unlock();
    mailbox->WakeAll();  // let a waiting thread take over reading
    if (!taken) return std::move(taken).error();
    if (*taken) return std::move(**taken);
    return Error::Closed(RecvWhere(peer));
  }
}

std::vector<int> ZmqTransport::LostRanks() const {
  const Impl& impl = *impl_;
  std::vector<int> lost;
  for (int peer = 0; peer < static_cast<int>(impl.peers.size()); ++peer) {
    const Impl::Peer& state = *impl.peers[peer];
    if (peer == impl.options.rank
            ? impl.self_lost.load()
            : state.unresponsive.load() || (state.lost.load() && !state.departed.load()))
      lost.push_back(peer);
  }
  return lost;
}

void ZmqTransport::Close() {
  std::call_once(impl_->close_once, [this] { impl_->Shutdown(); });
}

void ZmqTransport::Abort(const std::string& reason) {
  if (!impl_->stopping.load()) impl_->SayFarewell(CollectiveOp::kAbort, reason);
  Close();
}

Status ZmqTransport::CheckAbortNotices() {
  Impl& impl = *impl_;
  if (impl.connected.load() && !impl.stopping.load()) {
    std::unique_lock<std::mutex> reading(impl.router_mutex, std::try_to_lock);
    if (reading.owns_lock()) {
      try {
        impl.DrainRouter(Clock::now() + kDrainSlice);
      } catch (const zmq::error_t& error) {
        LOG(WARNING) << "rank " << impl.options.rank << ": receiving failed: " << error.what();
      }
    }
  }
  return impl.mailbox->JobAborted();
}

void ZmqTransport::Impl::Shutdown() {
  stopping.store(true);
  {
    std::lock_guard<std::mutex> lock(beat_mutex);
    beat_stop = true;
  }
  beat_wake.notify_all();
  if (beat_thread.joinable()) beat_thread.join();
  mailbox->Close();
  std::lock_guard<std::mutex> reading(router_mutex);
  try {
    // Read the goodbyes of the peers that closed first: a peer already gone
    // cannot take this rank's goodbye (ZMQ_IMMEDIATE refuses the send), and
    // SayFarewell would wait kFarewellWait for it. So a world whose ranks
    // close one after another took 0.5 s per rank to end.
    DrainRouter();
    SayFarewell(CollectiveOp::kGoodbye, {});
    // Stop the connection monitors before closing the sockets that read
    // them: ZeroMQ's I/O thread sends each event (a peer disconnecting, as
    // every peer does at the end of a job) with a blocking send while holding
    // the DEALER's monitor lock, so an event for a closed reader blocks that
    // thread, and then zmq_socket_monitor and Close, forever.
    for (auto& peer : peers) {
      std::lock_guard<std::mutex> lock(peer->mutex);
      if (peer->dealer) zmq_socket_monitor(peer->dealer.handle(), nullptr, 0);
    }
    for (auto& monitor : monitors) monitor.close();
    for (auto& peer : peers) {
      std::lock_guard<std::mutex> lock(peer->mutex);
      if (peer->dealer) peer->dealer.close();
    }
    router.close();
    zap_handler.reset();
    context.shutdown();
  } catch (const zmq::error_t& error) {
    LOG(WARNING) << "rank " << options.rank << ": error while closing: " << error.what();
  }
}

// Queues a kGoodbye or kAbort frame, with `reason` as its payload, to every
// connected peer that is still there; LINGER lets it drain while the sockets
// close. A peer's full queue (with a high-water mark of a few messages,
// heartbeats can fill it) or a connection being made again is waited for,
// kFarewellWait for all peers together: an abort notice dropped there left
// a peer sending on to a third rank as if the job went on (transport_test's
// SenderBlockedOnAFullQueueEndsOnAnAbortNoticeFromAnotherRank hung 1 run in
// 40 under load). A peer still unreachable then misses it and sees this
// rank as lost.
void ZmqTransport::Impl::SayFarewell(CollectiveOp op, std::string_view reason) {
  if (!connected.load()) return;
  const Deadline give_up = Clock::now() + kFarewellWait;
  for (auto& peer : peers) {
    std::lock_guard<std::mutex> lock(peer->mutex);
    while (!SendControlFrame(*peer, op, reason.substr(0, kMaxAbortReasonBytes))) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
      if (left.count() <= 0) break;
      zmq::pollitem_t item{peer->dealer.handle(), 0, ZMQ_POLLOUT, 0};
      try {
        zmq::poll(&item, 1, std::min(left, kIoPollInterval));
      } catch (const zmq::error_t&) {
        break;  // the context is ending: nothing more can be sent
      }
    }
  }
}

// Queues a one-frame message of `op` with `payload` (< kMaxChunkBytes) to a
// peer that is still there, without waiting. False when the peer's queue is
// full and the frame was not queued (true when queued, and for a peer with
// no connection or lost, which gets nothing). The caller holds
// peer_state.mutex.
bool ZmqTransport::Impl::SendControlFrame(Peer& peer_state, CollectiveOp op, std::string_view payload) {
  if (!peer_state.dealer || peer_state.lost.load()) return true;
  FrameHeader header = OwnHeader(op, payload.size());
  header.payload_length = static_cast<uint32_t>(payload.size());
  const EncodedFrameHeader encoded = EncodeFrameHeader(header);
  if (!peer_state.dealer.send(zmq::const_buffer(encoded.data(), encoded.size()),
                              zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
    return false;
  }
  peer_state.dealer.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none);
  return true;
}

// Waits in the ROUTER's own blocking receive rather than in zmq_poll over
// the ROUTER and every monitor: one wake-up with fewer system calls per frame
// (measured ~2.5 us less per one-way 4 KiB message). The monitors are looked
// at every kMonitorCheckInterval.
void ZmqTransport::Impl::PollSockets(Deadline until) {
  try {
    const Deadline now = Clock::now();
    if (now >= next_monitor_check) {
      CheckMonitors();
      next_monitor_check = now + kMonitorCheckInterval;
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::min(until, next_monitor_check) - now);
    const int wait_ms = std::max(0, Millis(wait));
    if (wait_ms != router_receive_timeout_ms) {
      router.set(zmq::sockopt::rcvtimeo, wait_ms);
      router_receive_timeout_ms = wait_ms;
    }
    if (ReceiveFrame(zmq::recv_flags::none)) DrainRouter(Clock::now() + kDrainSlice);
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return;
    LOG(ERROR) << "rank " << options.rank << ": receiving failed: " << error.what();
    for (int peer = 0; peer < options.world_size; ++peer) {
      if (peer != options.rank) mailbox->MarkPeerLost(peer);
    }
  }
}

void ZmqTransport::Impl::CheckMonitors() {
  std::vector<zmq::pollitem_t> items;
  for (auto& monitor : monitors) items.push_back({monitor.handle(), 0, ZMQ_POLLIN, 0});
  zmq::poll(items.data(), items.size(), std::chrono::milliseconds(0));
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].revents & ZMQ_POLLIN) {
      // Queue what arrived before the disconnect first.
      DrainRouter();
      HandleMonitorEvent(static_cast<int>(i));
    }
  }
}

// Reads one message from the ROUTER (waiting per `flags` and ZMQ_RCVTIMEO)
// and handles it; false if none was there.
bool ZmqTransport::Impl::ReceiveFrame(zmq::recv_flags flags) {
  std::vector<zmq::message_t> parts;
  zmq::message_t part;
  if (!router.recv(part, flags)) return false;
  parts.push_back(std::move(part));
  while (parts.back().more()) {
    zmq::message_t next;
    if (!router.recv(next, zmq::recv_flags::none)) break;
    parts.push_back(std::move(next));
  }
  if (parts.size() != 3) {
    drops.Dropped(SourceOf(parts[0]), "a message of " + std::to_string(parts.size()) +
                                          " parts (expected routing id, header, payload)");
    return true;
  }
  HandleFrame(parts[0], parts[1], std::move(parts[2]));
  return true;
}

void ZmqTransport::Impl::DrainRouter(Deadline stop_by) {
  while (ReceiveFrame(zmq::recv_flags::dontwait) && Clock::now() < stop_by) {
  }
}

void ZmqTransport::Impl::HandleFrame(const zmq::message_t& routing_id, const zmq::message_t& header_bytes,
                                     zmq::message_t payload) {
  Result<FrameHeader> decoded = DecodeFrameHeader(
      std::span<const std::byte>(static_cast<const std::byte*>(header_bytes.data()), header_bytes.size()),
      job_id, options.world_size);
  if (!decoded) {
    drops.Dropped(SourceOf(routing_id),
                  "a frame from connection '" + Printable(routing_id) + "': " + decoded.error().message);
    return;
  }
  const FrameHeader& header = *decoded;
  const int source = static_cast<int>(header.source_rank);
  if (routing_id.to_string_view() != RoutingId(source)) {
    drops.Dropped(SourceOf(routing_id), "a frame claiming rank " + std::to_string(source) +
                                            " from connection '" + Printable(routing_id) + "'");
    return;
  }
  if (payload.size() != header.payload_length) {
    drops.Dropped(SourceOf(routing_id), "a frame from rank " + std::to_string(source) + ": header says " +
                                            std::to_string(header.payload_length) + " payload bytes, got " +
                                            std::to_string(payload.size()));
    return;
  }
  if (header.op == CollectiveOp::kHeartbeat) {
    RecordHeard(source, &payload);
    return;
  }
  RecordHeard(source, nullptr);
  if (header.op == CollectiveOp::kGoodbye || header.op == CollectiveOp::kAbort) {
    peers[source]->departed.store(true);
    peers[source]->lost.store(true);
    mailbox->MarkPeerDeparted(source);
    if (header.op == CollectiveOp::kAbort) {
      mailbox->MarkJobAborted(source, Printable(payload));
    }
    return;
  }
  if (header.op == CollectiveOp::kPing) {
    // Answer unless a sender holds the DEALER (possibly waiting on a full
    // queue): this thread must not block. The prober then reports no answer.
    Peer& peer_state = *peers[source];
    std::unique_lock<std::mutex> lock(peer_state.mutex, std::try_to_lock);
    if (lock.owns_lock()) SendControlFrame(peer_state, CollectiveOp::kPong, {});
    return;
  }
  if (header.op == CollectiveOp::kPong) {
    peers[source]->pongs.fetch_add(1);
    return;
  }
  const FrameKey key{header.tag, header.op, header.sequence, header.element_count};
  if (header.message_length == header.payload_length) {
    auto owner = std::make_shared<zmq::message_t>(std::move(payload));
    std::span<const std::byte> bytes(static_cast<const std::byte*>(owner->data()), owner->size());
    mailbox->Deliver(source, Message{key, Payload(std::move(owner), bytes)});
    return;
  }
  PartialMessage& partial = partial_messages[source];
  if (header.chunk_offset == 0) {
    if (partial.bytes) {
      drops.Dropped(SourceOf(routing_id), "an unfinished message from rank " + std::to_string(source) + " (" +
                                              std::to_string(partial.received) + " of " +
                                              std::to_string(partial.first.message_length) + " bytes)");
    }
    partial.first = header;
    partial.bytes = std::make_unique_for_overwrite<std::byte[]>(header.message_length);
    partial.received = 0;
  } else if (!partial.bytes || header.chunk_offset != partial.received ||
             header.message_length != partial.first.message_length || header.tag != partial.first.tag) {
    drops.Dropped(SourceOf(routing_id), "an out-of-order chunk from rank " + std::to_string(source) +
                                            " at offset " + std::to_string(header.chunk_offset));
    return;
  }
  std::memcpy(partial.bytes.get() + header.chunk_offset, payload.data(), payload.size());
  partial.received += payload.size();
  if (partial.received == header.message_length) {
    const std::span<const std::byte> bytes(partial.bytes.get(), header.message_length);
    mailbox->Deliver(source, Message{key, Payload(std::move(partial.bytes), bytes)});
    partial = PartialMessage{};
  }
}

void ZmqTransport::Impl::HandleMonitorEvent(int monitor_index) {
  zmq::message_t event;
  if (!monitors[monitor_index].recv(event, zmq::recv_flags::dontwait)) return;
  zmq::message_t address;
  if (event.more()) (void)monitors[monitor_index].recv(address, zmq::recv_flags::none);
  if (event.size() < sizeof(uint16_t)) return;
  uint16_t id;
  std::memcpy(&id, event.data(), sizeof(id));
  if (id != ZMQ_EVENT_DISCONNECTED) return;
  const int peer = monitor_index < options.rank ? monitor_index : monitor_index + 1;
  // A peer closing in order says goodbye first: look for it before
  // reporting a loss.
  const Deadline goodbye_by = Clock::now() + kGoodbyeWait;
  while (!peers[peer]->departed.load() && Clock::now() < goodbye_by) {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::duration_cast<std::chrono::milliseconds>(goodbye_by - Clock::now()));
    if (item.revents & ZMQ_POLLIN) DrainRouter();
  }
  if (peers[peer]->departed.load()) return;
  LOG(WARNING) << "rank " << options.rank << " lost its connection to rank " << peer;
  peers[peer]->lost.store(true);
  mailbox->MarkPeerLost(peer);
}

// Every beat_interval: tells every peer how long this process has been
// stalled, reads what arrived (unless another thread does), and judges the
// peers. Never blocks on a peer: a DEALER or the ROUTER held by another
// thread is skipped for this beat.
void ZmqTransport::Impl::Beat() {
  StallClock stall;
  std::unique_lock<std::mutex> lock(beat_mutex);
  Deadline last_beat = Clock::now();
  while (!beat_stop) {
    const Deadline now = Clock::now();
    const std::chrono::milliseconds stalled_for = stall.Sample(now);
    const auto frozen_for = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_beat);
    last_beat = now;
    // What the peers see of this process: no beat for silent_limit, or a
    // stall of stall_limit, makes it lost to them, so to itself too.
    if ((frozen_for >= options.silent_limit || stalled_for >= options.stall_limit) &&
        !self_lost.exchange(true)) {
      LOG(WARNING) << "rank " << options.rank << ": this rank was "
                   << (frozen_for >= options.silent_limit ? "frozen" : "stalled in a step") << " for "
                   << std::max(frozen_for, stalled_for).count() << " ms: its peers judge it lost";
    }
    std::array<std::byte, sizeof(int64_t)> stalled;
    StoreLittleEndian<int64_t>(stalled, stalled_for.count());
    const std::string_view payload(reinterpret_cast<const char*>(stalled.data()), stalled.size());
    for (int peer = 0; peer < options.world_size; ++peer) {
      if (peer == options.rank) continue;
      std::unique_lock<std::mutex> sending(peers[peer]->mutex, std::try_to_lock);
      if (sending.owns_lock()) SendControlFrame(*peers[peer], CollectiveOp::kHeartbeat, payload);
    }
    if (std::unique_lock<std::mutex> reading(router_mutex, std::try_to_lock); reading.owns_lock()) {
      PollSockets(now);
    }
    for (int peer = 0; peer < options.world_size; ++peer) JudgePeer(peer, Clock::now());
    beat_wake.wait_until(lock, now + options.beat_interval, [this] { return beat_stop; });
  }
}

// Records that a frame of `source` arrived: its heartbeat (with the stall it
// reports, judged at once) or any other frame, which shows it alive as
// well. The caller reads the ROUTER.
void ZmqTransport::Impl::RecordHeard(int source, const zmq::message_t* heartbeat) {
  Peer& peer_state = *peers[source];
  if (heartbeat != nullptr) {
    if (heartbeat->size() != sizeof(int64_t)) {
      drops.Dropped("rank " + std::to_string(source),
                    "a heartbeat of " + std::to_string(heartbeat->size()) + " bytes (expected 8)");
      return;
    }
    peer_state.stalled_ms.store(LoadLittleEndian<int64_t>(
        std::span<const std::byte>(static_cast<const std::byte*>(heartbeat->data()), heartbeat->size())));
  } else if (peer_state.last_heard.load() == 0) {
    return;  // watched from its first heartbeat on
  }
  const Deadline now = Clock::now();
  peer_state.last_heard.store(now.time_since_epoch().count());
  if (heartbeat != nullptr) JudgePeer(source, now);
}

// Ends every wait of this rank, naming `peer`, once it is watched and has
// been silent for silent_limit or reports a stall of stall_limit. Called by
// the beat thread and the ROUTER reader; reports a peer once.
void ZmqTransport::Impl::JudgePeer(int peer, Deadline now) {
  Peer& peer_state = *peers[peer];
  const int64_t heard = peer_state.last_heard.load();
  if (peer == options.rank || heard == 0 || peer_state.lost.load()) return;
  const auto silent =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - Deadline(Clock::duration(heard)));
  const std::chrono::milliseconds stalled(peer_state.stalled_ms.load());
  // Under a flood of dropped input our reader lags: silence is not evidence
  // until the longer limit.
  const bool flooded = now - drops.LastDropped() < options.silent_limit;
  const std::chrono::milliseconds silent_limit =
      flooded ? options.flooded_silent_limit : options.silent_limit;
  std::string why;
  if (silent >= silent_limit) {
    why = "nothing arrived from it for " + std::to_string(silent.count()) +
          " ms, not even a heartbeat (stopped, frozen or unreachable)";
  } else if (stalled >= options.stall_limit) {
    why = "hung: it made no progress for " + std::to_string(stalled.count()) +
          " ms in the middle of a step, outside any wait on a peer";
  } else {
    return;
  }
  if (peer_state.unresponsive.exchange(true)) return;
  LOG(WARNING) << "rank " << options.rank << ": rank " << peer << " is unresponsive: " << why;
  mailbox->MarkPeerUnresponsive(peer, why);
}

}  // namespace inferno
