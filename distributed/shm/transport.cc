#include "distributed/shm/transport.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <glog/logging.h>

#include "base/progress.h"
#include "distributed/mailbox.h"
#include "distributed/shm/peer_watch.h"
#include "distributed/shm/ring.h"

namespace inferno {
namespace {

// The slot of an inbox where rank `source` leaves its abort reason.
struct AbortNotice {
  std::atomic<uint32_t> posted;  // 1 once `reason` is written
  uint32_t length;
  char reason[248];
};
static_assert(sizeof(AbortNotice) == 256);

// How long a Recv caller that is not reading its peer's ring waits on the
// mailbox before trying to become the reader.
constexpr std::chrono::milliseconds kMailboxSlice{10};

// How long Close lets queued messages drain into the peers' rings.
constexpr std::chrono::milliseconds kLinger{2000};

// A message that did not fit in its peer's ring when sent, copied.
struct QueuedMessage {
  FrameKey key;
  Payload bytes;
};

// Inbox layout: world_size notices, then world_size rings (this rank's own
// notice and ring unused).
size_t InboxBytes(int world_size, size_t capacity) {
  return world_size * (sizeof(AbortNotice) + RingBytes(capacity));
}

AbortNotice& NoticeIn(std::span<std::byte> inbox, int source) {
  return reinterpret_cast<AbortNotice*>(inbox.data())[source];
}

std::span<std::byte> RingIn(std::span<std::byte> inbox, int world_size, size_t capacity, int source) {
  return inbox.subspan(world_size * sizeof(AbortNotice) + source * RingBytes(capacity), RingBytes(capacity));
}

std::string RankText(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

struct ShmTransport::Impl {
  struct Peer {
    std::optional<SharedSegment> inbox;  // the peer's inbox, mapped here
    std::optional<PeerWatch> watch;
    std::optional<RingWriter> writer;  // in the peer's inbox
    // Messages waiting for room in the writer's ring, oldest first; while
    // any waits, only `drainer` writes to the ring (it pops a message once
    // written), so order is kept.
    std::mutex out_mutex;
    std::condition_variable out_changed;
    std::deque<QueuedMessage> outbox;
    std::optional<Error> drain_error;  // why the drainer gave up
    bool stopping = false;
    std::thread drainer;
    std::mutex recv_mutex;
    std::optional<RingReader> reader;  // in this rank's inbox
    std::atomic<int> mailbox_waiters{0};
  };

  Impl(const ShmTransportOptions& options, SharedSegment inbox)
      : options(options), inbox(std::move(inbox)), mailbox(options.world_size, std::chrono::milliseconds(0)) {
    for (int rank = 0; rank < options.world_size; ++rank) peers.push_back(std::make_unique<Peer>());
  }

  std::span<std::byte> Ring(std::span<std::byte> memory, int source) const {
    return RingIn(memory, options.world_size, options.ring_capacity, source);
  }

  // Hands every abort notice posted in this rank's inbox to the mailbox;
  // true if there is one.
  bool TakeAbortNotices() {
    bool any = false;
    for (int source = 0; source < options.world_size; ++source) {
      const AbortNotice& notice = NoticeIn(inbox.bytes(), source);
      if (source == options.rank || notice.posted.load(std::memory_order_acquire) == 0) continue;
      if (!aborts_seen[source].exchange(true)) {
        mailbox.MarkJobAborted(
            source, std::string(notice.reason, std::min<size_t>(notice.length, sizeof(notice.reason))));
      }
      any = true;
    }
    return any;
  }

  // A send's `error`, or when the peer was lost because the job ended (a
  // rank that gives up posts its notice before it closes its rings; notices
  // from other hosts and the liveness watch's verdicts come through
  // also_check), `error` followed by what ended it, as a receive reports it.
  Error WhyLost(const Error& error) {
    if (error.kind != ErrorKind::kPeerLost) return error;
    TakeAbortNotices();
    Status ended = mailbox.JobAborted();
    if (ended && options.also_check) ended = options.also_check();
    if (!ended) return ended.error().Prefixed(error.message + "; ");
    return error;
  }

  // What a wait on `peer`'s ring checks between sleeps.
  WaitPolicy WaitOn(int peer) {
    WaitPolicy wait = options.wait;
    wait.check = [this, peer]() -> Status {
      if (TakeAbortNotices()) return Error{ErrorKind::kPeerLost, "an abort notice arrived"};
      if (Status alive = peers[peer]->watch->Check(); !alive) return alive;
      return options.also_check ? options.also_check() : Status();
    };
    return wait;
  }

  // The body of `peer`'s drainer thread: writes queued messages to the ring
  // (waiting for room as long as the transport's timeout) until stopped.
  void Drain(int peer) {
    Peer& target = *peers[peer];
    std::unique_lock<std::mutex> lock(target.out_mutex);
    for (;;) {
      target.out_changed.wait(lock, [&] { return target.stopping || !target.outbox.empty(); });
      if (target.outbox.empty()) return;
      const QueuedMessage& next = target.outbox.front();
      lock.unlock();
      Status written = target.writer->Write(next.key, next.bytes.bytes(), {}, Clock::now() + options.timeout);
      lock.lock();
      if (!written) {
        target.drain_error = written.error();
        target.outbox.clear();
      } else {
        target.outbox.pop_front();
      }
      target.out_changed.notify_all();
    }
  }

  // Send or Recv naming a peer that Connect left out (or before Connect).
  static Error NotConnected(const std::string& where, int peer) {
    return Error::InvalidArgument(where + ": " + RankText(peer) + " is not connected over shared memory");
  }

  Result<std::optional<Message>> Queued(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    return mailbox.TakeUntil(peer, tag, started, deadline, Deadline::min());
  }

  // Reads `peer`'s ring until a message with `tag` arrives, queuing others.
  // The caller holds the peer's recv_mutex.
  Result<Message> ReadFor(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    Peer& source = *peers[peer];
    for (;;) {
      Result<Message> message = source.reader->Read(deadline);
      if (!message) {
        const Error error = message.error();
        const bool aborted = TakeAbortNotices();
        if (error.kind == ErrorKind::kPeerLost && !aborted) mailbox.MarkPeerLost(peer);
        // A message queued before the peer was lost, or the abort notice.
        Result<std::optional<Message>> queued = Queued(peer, tag, started, deadline);
        if (queued && *queued) return std::move(**queued);
        if (aborted && !queued) return queued.error();
        return error;
      }
      if (message->key.op == CollectiveOp::kAbort) {
        const std::span<const std::byte> reason = message->payload.bytes();
        mailbox.MarkJobAborted(peer,
                               std::string(reinterpret_cast<const char*>(reason.data()), reason.size()));
        continue;
      }
      if (message->key.tag == tag) return message;
      mailbox.Deliver(peer, std::move(*message));
    }
  }

  // Recv from a connected peer other than this rank, by `deadline`.
  Result<Message> RecvUntil(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    Peer& source = *peers[peer];
    for (;;) {
      TakeAbortNotices();
      Result<std::optional<Message>> queued = Queued(peer, tag, started, deadline);
      if (!queued) return queued.error();
      if (*queued) return std::move(**queued);
      std::unique_lock<std::mutex> reading(source.recv_mutex, std::try_to_lock);
      if (reading.owns_lock()) {
        // Deliveries happen under this lock: one that came before it is queued.
        queued = Queued(peer, tag, started, deadline);
        Result<Message> message = !queued   ? Result<Message>(queued.error())
                                  : *queued ? Result<Message>(std::move(**queued))
                                            : ReadFor(peer, tag, started, deadline);
        reading.unlock();
        if (source.mailbox_waiters.load() > 0) mailbox.WakeAll();
        return message;
      }
      ++source.mailbox_waiters;
      queued = mailbox.TakeUntil(peer, tag, started, deadline, Clock::now() + kMailboxSlice);
      --source.mailbox_waiters;
      if (!queued) return queued.error();
      if (*queued) return std::move(**queued);
    }
  }

  // After `timeout` of a Recv from `peer`: says whether the peer is stopped,
  // and when it is not (it runs, and may be waiting like this rank), waits
  // kPeerAliveGrace longer, so that the abort notice of the rank that saw the
  // fault first arrives and this rank reports that fault rather than a
  // neighbour.
  Result<Message> ProbeAfterTimeout(int peer, uint32_t tag, Deadline started, Error timeout) {
    const PeerWatch& watch = *peers[peer]->watch;
    const std::string who = RankText(peer) + " (pid " + std::to_string(watch.pid()) + ")";
    if (watch.Stopped()) {
      timeout.message += "; " + who + " is stopped";
      return timeout;
    }
    Result<Message> got = RecvUntil(peer, tag, started, Clock::now() + kPeerAliveGrace);
    if (got || got.error().kind != ErrorKind::kTimeout) return got;
    Error late = std::move(got).error();
    late.message += "; " + who + " runs but sent nothing";
    return late;
  }

  // Closes the transport (once): lets queued messages drain for up to
  // `linger`, then closes every ring and stops the drainers.
  void Stop(std::chrono::milliseconds linger) {
    if (closed.exchange(true)) return;
    const Deadline give_up = Clock::now() + linger;
    for (const std::unique_ptr<Peer>& peer : peers) {
      std::unique_lock<std::mutex> lock(peer->out_mutex);
      peer->out_changed.wait_until(lock, give_up, [&] { return peer->outbox.empty(); });
      peer->stopping = true;
      peer->out_changed.notify_all();
    }
    for (const std::unique_ptr<Peer>& peer : peers) {
      if (peer->writer) peer->writer->Close();  // ends a drainer's wait for room
      if (peer->reader) peer->reader->Close();
      if (peer->drainer.joinable()) peer->drainer.join();
    }
    mailbox.Close();
  }

  const ShmTransportOptions options;
  SharedSegment inbox;
  Mailbox mailbox;
  std::vector<std::unique_ptr<Peer>> peers;
  std::unique_ptr<std::atomic<bool>[]> aborts_seen { new std::atomic<bool>[ options.world_size ]() };
  std::atomic<bool> connected{false};
  std::atomic<bool> closed{false};
};

Result<std::shared_ptr<ShmTransport>> ShmTransport::Create(const ShmTransportOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return Error::UnknownRank("shared-memory transport", options.rank, options.world_size);
  }
  const size_t capacity = options.ring_capacity;
  if (capacity < 64 || (capacity & (capacity - 1)) != 0) {
    return Error::InvalidArgument("shared-memory ring capacity " + std::to_string(capacity) +
                                  " is not a power of two >= 64");
  }
  Result<SharedSegment> inbox = SharedSegment::Create(InboxBytes(options.world_size, capacity));
  if (!inbox) return inbox.error().Prefixed("inbox of " + RankText(options.rank) + ": ");
  auto impl = std::make_unique<Impl>(options, std::move(*inbox));
  for (int source = 0; source < options.world_size; ++source) {
    if (source != options.rank) FormatRing(impl->Ring(impl->inbox.bytes(), source), capacity);
  }
  return std::shared_ptr<ShmTransport>(new ShmTransport(std::move(impl)));
}

ShmTransport::ShmTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ShmTransport::~ShmTransport() { Close(); }

SegmentAddress ShmTransport::inbox() const { return impl_->inbox.address(); }

int ShmTransport::rank() const { return impl_->options.rank; }

int ShmTransport::world_size() const { return impl_->options.world_size; }

std::chrono::milliseconds ShmTransport::timeout() const { return impl_->options.timeout; }

Status ShmTransport::Connect(const std::vector<std::optional<SegmentAddress>>& inboxes, Deadline deadline) {
  Impl& impl = *impl_;
  const int me = impl.options.rank;
  if (static_cast<int>(inboxes.size()) != impl.options.world_size) {
    return Error::InvalidArgument("shared-memory connect: " + std::to_string(inboxes.size()) +
                                  " inboxes for a world of " + std::to_string(impl.options.world_size));
  }
  if (impl.connected.exchange(true)) return Error::InvalidArgument("shared-memory connect called twice");
  const auto connected = [&](int peer) { return peer != me && inboxes[peer].has_value(); };
  for (int peer = 0; peer < impl.options.world_size; ++peer) {
    if (!connected(peer)) continue;
    Impl::Peer& state = *impl.peers[peer];
    const std::string where = "shared-memory connect of " + RankText(me) + " to " + RankText(peer) + ": ";
    Result<PeerWatch> watch = PeerWatch::Open(peer, inboxes[peer]->pid);
    if (!watch) return watch.error().Prefixed(where);
    state.watch.emplace(std::move(*watch));
    Result<SharedSegment> their_inbox = SharedSegment::Open(*inboxes[peer]);
    if (!their_inbox) return their_inbox.error().Prefixed(where);
    state.inbox.emplace(std::move(*their_inbox));
    Result<RingWriter> writer =
        RingWriter::Attach(impl.Ring(state.inbox->bytes(), me), {peer, impl.WaitOn(peer)});
    if (!writer) return writer.error().Prefixed(where);
    state.writer.emplace(std::move(*writer));
    Result<RingReader> reader =
        RingReader::Attach(impl.Ring(impl.inbox.bytes(), peer), {peer, impl.WaitOn(peer)});
    if (!reader) return reader.error().Prefixed(where);
    state.reader.emplace(std::move(*reader));
  }
  const FrameKey hello{0, CollectiveOp::kPing, 0, 0};
  for (int peer = 0; peer < impl.options.world_size; ++peer) {
    if (!connected(peer)) continue;
    Status said = impl.peers[peer]->writer->Write(hello, {}, {}, deadline);
    if (!said) return said.error().Prefixed("shared-memory hello to " + RankText(peer) + ": ");
  }
  for (int peer = 0; peer < impl.options.world_size; ++peer) {
    if (!connected(peer)) continue;
    Result<Message> heard = impl.peers[peer]->reader->Read(deadline);
    if (!heard) return heard.error().Prefixed("shared-memory hello from " + RankText(peer) + ": ");
    if (heard->key.op != CollectiveOp::kPing) {
      return Error::Corruption("shared-memory hello from " + RankText(peer) + ": got a " +
                               CollectiveOpName(heard->key.op) + " record");
    }
  }
  impl.inbox.StopSharing();
  for (int peer = 0; peer < impl.options.world_size; ++peer) {
    if (connected(peer)) impl.peers[peer]->drainer = std::thread([&impl, peer] { impl.Drain(peer); });
  }
  return {};
}

Status ShmTransport::Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                          std::span<const std::byte> tail, Deadline deadline) {
  Impl& impl = *impl_;
  const int me = impl.options.rank;
  if (peer < 0 || peer >= impl.options.world_size) {
    return Error::UnknownRank("send from " + RankText(me), peer, impl.options.world_size);
  }
  if (impl.closed.load()) return Error::Closed("send from " + RankText(me) + " to " + RankText(peer));
  if (peer == me) {
    impl.mailbox.Deliver(me, Message{key, ConcatenatedPayload(head, tail)});
    return {};
  }
  Impl::Peer& target = *impl.peers[peer];
  if (!target.writer) return impl.NotConnected("send from " + RankText(me), peer);
  // A job another rank gave up on ends every send at once, as a receive
  // would: a send that fits the ring never waits, so it would never look.
  impl.TakeAbortNotices();
  if (Status aborted = impl.mailbox.JobAborted(); !aborted) return aborted;
  std::lock_guard<std::mutex> lock(target.out_mutex);
  if (target.drain_error) return impl.WhyLost(*target.drain_error);
  // Write at once when nothing is queued and the message fits (the write
  // cannot wait); else queue a copy for the drainer, so that a send never
  // waits for the peer to read (two ranks sending to each other would
  // otherwise deadlock).
  if (target.outbox.empty() && target.writer->Fits(head.size() + tail.size())) {
    Status written = target.writer->Write(key, head, tail, deadline);
    if (!written) return impl.WhyLost(written.error());
    return written;
  }
  target.outbox.push_back({key, ConcatenatedPayload(head, tail)});
  target.out_changed.notify_all();
  return {};
}

Result<Message> ShmTransport::Recv(int peer, uint32_t tag, Deadline deadline) {
  Impl& impl = *impl_;
  if (peer < 0 || peer >= impl.options.world_size) {
    return Error::UnknownRank("recv on " + RankText(impl.options.rank), peer, impl.options.world_size);
  }
  if (peer == impl.options.rank) return impl.mailbox.Take(peer, tag, deadline);
  if (!impl.peers[peer]->reader) return impl.NotConnected("recv on " + RankText(impl.options.rank), peer);
  const WaitingOutside waiting;
  const Deadline started = Clock::now();
  Result<Message> got = impl.RecvUntil(peer, tag, started, deadline);
  if (got || got.error().kind != ErrorKind::kTimeout) return got;
  return impl.ProbeAfterTimeout(peer, tag, started, std::move(got).error());
}

bool ShmTransport::SharesMemoryWith(int peer) const {
  const Impl& impl = *impl_;
  if (peer < 0 || peer >= impl.options.world_size) return false;
  return peer == impl.options.rank || impl.peers[peer]->reader.has_value();
}

Status ShmTransport::CheckAbortNotices() {
  Impl& impl = *impl_;
  impl.TakeAbortNotices();
  if (Status aborted = impl.mailbox.JobAborted(); !aborted) return aborted;
  return impl.options.also_check ? impl.options.also_check() : Status();
}

void ShmTransport::Close() { impl_->Stop(kLinger); }

void ShmTransport::Abort(const std::string& reason) {
  Impl& impl = *impl_;
  if (!impl.closed.load()) {
    const int me = impl.options.rank;
    for (int peer = 0; peer < impl.options.world_size; ++peer) {
      Impl::Peer& target = *impl.peers[peer];
      if (peer == me || !target.inbox) continue;
      AbortNotice& notice = NoticeIn(target.inbox->bytes(), me);
      notice.length = static_cast<uint32_t>(std::min(reason.size(), sizeof(notice.reason)));
      std::memcpy(notice.reason, reason.data(), notice.length);
      notice.posted.store(1, std::memory_order_release);
      // Wake whichever of the peer's rings it sleeps on.
      for (int source = 0; source < impl.options.world_size; ++source) {
        if (source == peer) continue;
        reinterpret_cast<RingLayout*>(impl.Ring(target.inbox->bytes(), source).data())->data_bell.Ring();
      }
    }
  }
  impl.Stop(std::chrono::milliseconds(0));
}

}  // namespace inferno
