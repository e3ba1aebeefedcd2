#include "distributed/tcp/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include <glog/logging.h>

#include "base/byte_codec.h"
#include "base/progress.h"
#include "distributed/mailbox.h"

namespace inferno {
namespace {

// The largest sealed frame on the wire: length field, header, one chunk, tag.
constexpr size_t kMaxWireFrame = kSealedLengthBytes + kFrameHeaderBytes + kMaxChunkBytes + kSealTagBytes;
// The hello: the claimed rank, then a sealed header-only kHello frame.
constexpr size_t kHelloBytes = 4 + kSealedLengthBytes + kFrameHeaderBytes + kSealTagBytes;
// Connections accepted in Connect that have not yet proved a rank; beyond
// this the oldest is dropped, so a stranger's many silent connections cannot
// keep a peer's out.
constexpr size_t kMaxPendingConnections = 64;
// How long a Recv caller that is not reading its peer's socket waits on the
// mailbox before trying to become the reader.
constexpr std::chrono::milliseconds kMailboxSlice{10};
// How long Close and Abort wait to write their last frame to each peer.
constexpr std::chrono::milliseconds kLinger{1000};
// How long a sender blocked on a full socket sleeps before reading its peers
// (so that two ranks sending each other large messages both progress).
constexpr int kSendPollMs = 1;

std::string RankText(int rank) { return "rank " + std::to_string(rank); }

int PollMs(Deadline until, std::chrono::milliseconds slice) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, slice.count()));
}

void ConfigureSocket(int fd, int buffer_bytes) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
}

std::string PeerName(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "an unknown address";
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

Result<sockaddr_in> ParseAddress(const std::string& where, const std::string& address, int port) {
  sockaddr_in parsed{};
  parsed.sin_family = AF_INET;
  parsed.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 || inet_pton(AF_INET, address.c_str(), &parsed.sin_addr) != 1) {
    return Error::InvalidArgument(where + ": '" + address + ":" + std::to_string(port) +
                                  "' is not a numeric IPv4 address and port");
  }
  return parsed;
}

}  // namespace

struct TcpTransport::Impl {
  struct Peer {
    bool reachable = false;  // set by Connect, then fixed
    // The pair's one connection, both directions (set by Connect): writes
    // under send_mutex, reads under recv_mutex.
    int fd = -1;
    std::mutex send_mutex;
    std::optional<FrameSealer> sealer;
    std::unique_ptr<std::byte[]> send_buffer;  // kMaxWireFrame bytes
    bool send_closed = false;                  // after the last frame (send_mutex)

    std::mutex recv_mutex;  // guards everything below but the atomics
    std::optional<FrameOpener> opener;
    std::unique_ptr<std::byte[]> in_buffer;  // 2 * kMaxWireFrame bytes
    size_t in_begin = 0;
    size_t in_end = 0;
    // A message of several chunks being put together.
    std::optional<FrameHeader> partial_header;
    std::vector<std::byte> partial;
    bool ended = false;  // the connection closed, broke or said goodbye
    std::atomic<int> mailbox_waiters{0};
  };

  Impl(const TcpTransportOptions& options, int listen_fd, int port)
      : options(options),
        listen_fd(listen_fd),
        port(port),
        key(DataKey::Random()),
        mailbox(options.world_size, options.lost_grace) {
    for (int rank = 0; rank < options.world_size; ++rank) peers.push_back(std::make_unique<Peer>());
  }

  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    for (const std::unique_ptr<Peer>& peer : peers) {
      if (peer->fd >= 0) close(peer->fd);
    }
  }

  // This rank's abort notices (from any transport of the job), then the
  // control plane's.
  Status Checks() {
    if (Status aborted = mailbox.JobAborted(); !aborted) return aborted;
    return options.also_check ? options.also_check() : Status();
  }

  // `error` (a lost peer), or, when the job ended because a rank gave up or
  // was found unresponsive, that (which names the fault).
  Error WhyLost(Error error) {
    if (error.kind != ErrorKind::kPeerLost) return error;
    if (Status ended = Checks(); !ended) return ended.error();
    return error;
  }

  // Ends `peer`'s stream (the caller holds its recv_mutex) because of `why`.
  Error Broken(Peer& source, int peer, const std::string& why) {
    LOG(WARNING) << RankText(options.rank) << ": data path from " << RankText(peer) << " broken: " << why;
    source.ended = true;
    mailbox.MarkPeerLost(peer);
    return Error::Transport("data path from " + RankText(peer) + ": " + why);
  }

  // Adds one opened frame of `peer` to its message; the whole message once
  // its last chunk is in. The caller holds the peer's recv_mutex.
  Result<std::optional<Message>> Assemble(Peer& source, int peer, const FrameHeader& header,
                                          std::span<const std::byte> chunk) {
    const FrameKey key{header.tag, header.op, header.sequence, header.element_count};
    if (!source.partial_header && header.chunk_offset == 0 && chunk.size() == header.message_length) {
      return std::optional<Message>(
          Message{key, Payload(std::vector<std::byte>(chunk.begin(), chunk.end()))});
    }
    if (!source.partial_header && header.chunk_offset == 0) {
      source.partial_header = header;
      source.partial.clear();
      source.partial.reserve(header.message_length);
    } else if (!source.partial_header || source.partial_header->tag != header.tag ||
               source.partial_header->op != header.op || source.partial_header->sequence != header.sequence ||
               source.partial_header->message_length != header.message_length ||
               header.chunk_offset != source.partial.size()) {
      return Broken(source, peer,
                    "chunk at offset " + std::to_string(header.chunk_offset) +
                        " does not continue the message being received");
    }
    source.partial.insert(source.partial.end(), chunk.begin(), chunk.end());
    if (source.partial.size() < header.message_length) return std::optional<Message>();
    source.partial_header.reset();
    return std::optional<Message>(Message{key, Payload(std::move(source.partial))});
  }

  // Opens the complete frames in `peer`'s buffer: returns the first message
  // with tag `want` (others go to the mailbox; goodbyes and abort notices
  // are recorded) or nullopt once no complete frame is left. The caller holds
  // the peer's recv_mutex. Errors: Transport (the stream is broken).
  Result<std::optional<Message>> OpenBuffered(Peer& source, int peer, std::optional<uint32_t> want) {
    while (!source.ended && source.in_end - source.in_begin >= kSealedLengthBytes) {
      std::byte* at = source.in_buffer.get() + source.in_begin;
      const uint32_t sealed = LoadLittleEndian<uint32_t>(std::span<const std::byte>(at, kSealedLengthBytes));
      if (sealed < kFrameHeaderBytes + kSealTagBytes || sealed > kMaxWireFrame - kSealedLengthBytes) {
        return Broken(source, peer, "a frame length of " + std::to_string(sealed) + " bytes");
      }
      if (source.in_end - source.in_begin < kSealedLengthBytes + sealed) break;
      source.in_begin += kSealedLengthBytes + sealed;
      Result<std::span<std::byte>> plain = source.opener->Open(std::span(at, kSealedLengthBytes + sealed));
      if (!plain) return Broken(source, peer, plain.error().message);
      Result<FrameHeader> header =
          DecodeFrameHeader(plain->first(kFrameHeaderBytes), job_id, options.world_size);
      if (!header) return Broken(source, peer, header.error().message);
      const std::span<const std::byte> chunk = plain->subspan(kFrameHeaderBytes);
      if (header->source_rank != static_cast<uint32_t>(peer) || header->payload_length != chunk.size()) {
        return Broken(source, peer,
                      "a frame claiming rank " + std::to_string(header->source_rank) + " and " +
                          std::to_string(header->payload_length) + " payload bytes");
      }
      if (header->op == CollectiveOp::kGoodbye) {
        source.ended = true;
        mailbox.MarkPeerDeparted(peer);
        break;
      }
      Result<std::optional<Message>> message = Assemble(source, peer, *header, chunk);
      if (!message) return std::move(message).error();
      if (!*message) continue;
      if (header->op == CollectiveOp::kAbort) {
        const std::span<const std::byte> reason = (*message)->payload.bytes();
        mailbox.MarkJobAborted(peer,
                               std::string(reinterpret_cast<const char*>(reason.data()), reason.size()));
        continue;
      }
      if (want && header->tag == *want) return message;
      mailbox.Deliver(peer, std::move(**message));
    }
    if (source.in_begin == source.in_end) source.in_begin = source.in_end = 0;
    return std::optional<Message>();
  }

  // Reads what `peer` has sent without waiting and opens it (as
  // OpenBuffered). The caller holds the peer's recv_mutex.
  Result<std::optional<Message>> ReadAvailable(Peer& source, int peer, std::optional<uint32_t> want) {
    for (;;) {
      Result<std::optional<Message>> opened = OpenBuffered(source, peer, want);
      if (!opened || *opened || source.ended) return opened;
      if (source.in_begin > 0 && source.in_end + kMaxWireFrame > 2 * kMaxWireFrame) {
        std::memmove(source.in_buffer.get(), source.in_buffer.get() + source.in_begin,
                     source.in_end - source.in_begin);
        source.in_end -= source.in_begin;
        source.in_begin = 0;
      }
      const ssize_t got = recv(source.fd, source.in_buffer.get() + source.in_end,
                               2 * kMaxWireFrame - source.in_end, MSG_DONTWAIT);
      if (got > 0) {
        source.in_end += got;
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return opened;
      source.ended = true;  // closed or reset without a goodbye
      mailbox.MarkPeerLost(peer);
      return opened;
    }
  }

  // Reads every peer's socket that no other thread reads into the mailbox
  // (but `skip`'s, whose recv_mutex the caller holds), so abort notices
  // and messages a blocked sender's peers wait for keep arriving.
  void ReadPeersIntoMailbox(int skip) {
    for (int peer = 0; peer < options.world_size; ++peer) {
      Peer& source = *peers[peer];
      if (!source.reachable || peer == skip) continue;
      std::unique_lock<std::mutex> reading(source.recv_mutex, std::try_to_lock);
      if (!reading.owns_lock() || source.fd < 0 || source.ended) continue;
      // A broken stream is recorded in the mailbox, where its reader finds it.
      (void)ReadAvailable(source, peer, std::nullopt);
      reading.unlock();
      if (source.mailbox_waiters.load() > 0) mailbox.WakeAll();
    }
  }

  // Waits on the mailbox alone for a message of a peer whose stream ended.
  Result<Message> TakeAfterEnd(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    for (;;) {
      Result<std::optional<Message>> queued =
          mailbox.TakeUntil(peer, tag, started, deadline, Clock::now() + options.check_interval);
      if (!queued) return WhyLost(std::move(queued).error());
      if (*queued) return std::move(**queued);
      if (Status checked = Checks(); !checked) return checked.error();
    }
  }

  // Reads `peer`'s socket until a message with `tag` arrives, queuing others.
  // The caller holds the peer's recv_mutex.
  Result<Message> ReadFor(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    Peer& source = *peers[peer];
    const Deadline spin_until = Clock::now() + options.busy_poll;
    Deadline next_check = Clock::now() + options.check_interval;
    for (;;) {
      if (closed.load()) return Error::Closed("recv");
      Result<std::optional<Message>> got = ReadAvailable(source, peer, tag);
      if (!got) return std::move(got).error();
      if (*got) return std::move(**got);
      if (source.ended) return TakeAfterEnd(peer, tag, started, deadline);
      const Deadline now = Clock::now();
      if (now >= deadline) {
        return Error::Timeout("recv", peer,
                              std::chrono::duration_cast<std::chrono::milliseconds>(now - started));
      }
      if (now < spin_until) continue;
      if (now >= next_check) {
        ReadPeersIntoMailbox(peer);
        if (Status checked = Checks(); !checked) return checked.error();
        next_check = now + options.check_interval;
      }
      pollfd wait{source.fd, POLLIN, 0};
      poll(&wait, 1, std::max(1, PollMs(std::min(deadline, next_check), options.check_interval)));
    }
  }

  Result<Message> RecvUntil(int peer, uint32_t tag, Deadline started, Deadline deadline) {
    Peer& source = *peers[peer];
    for (;;) {
      Result<std::optional<Message>> queued =
          mailbox.TakeUntil(peer, tag, started, deadline, Deadline::min());
      if (!queued) return WhyLost(std::move(queued).error());
      if (*queued) return std::move(**queued);
      // Counted as a waiter before trying the lock, so that a reader that
      // releases it after this try sees the count and wakes this caller.
      ++source.mailbox_waiters;
      std::unique_lock<std::mutex> reading(source.recv_mutex, std::try_to_lock);
      if (reading.owns_lock()) {
        --source.mailbox_waiters;
        // Deliveries happen under this lock: one made before it is queued.
        queued = mailbox.TakeUntil(peer, tag, started, deadline, Deadline::min());
        Result<Message> message = !queued   ? Result<Message>(WhyLost(std::move(queued).error()))
                                  : *queued ? Result<Message>(std::move(**queued))
                                            : ReadFor(peer, tag, started, deadline);
        reading.unlock();
        if (source.mailbox_waiters.load() > 0) mailbox.WakeAll();
        return message;
      }
      queued = mailbox.TakeUntil(peer, tag, started, deadline, Clock::now() + kMailboxSlice);
      --source.mailbox_waiters;
      if (!queued) return WhyLost(std::move(queued).error());
      if (*queued) return std::move(**queued);
      if (Status checked = Checks(); !checked) return checked.error();
    }
  }

  // Writes `bytes` to `peer` by `deadline`; while the socket is full, reads
  // the peers' sockets. `last`: the closing frame, written after `closed`
  // is set. The caller holds the peer's send_mutex.
  Status WriteAll(int peer, std::span<const std::byte> bytes, Deadline deadline, bool last) {
    Peer& target = *peers[peer];
    const Deadline started = Clock::now();
    Deadline next_check = started + options.check_interval;
    while (!bytes.empty()) {
      const ssize_t sent = send(target.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) {
        bytes = bytes.subspan(sent);
        continue;
      }
      if (sent < 0 && errno == EINTR) continue;
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!last && closed.load()) return Error::Closed("send");
        const Deadline now = Clock::now();
        if (now >= deadline) {
          return Error{ErrorKind::kTimeout,
                       "send: " + RankText(peer) + " took no data for " +
                           std::to_string(
                               std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count()) +
                           " ms"};
        }
        if (!last) {
          ReadPeersIntoMailbox(/*skip=*/-1);
          if (now >= next_check) {
            if (Status checked = Checks(); !checked) return checked.error();
            next_check = now + options.check_interval;
          }
        }
        pollfd wait{target.fd, POLLOUT, 0};
        poll(&wait, 1, kSendPollMs);
        continue;
      }
      return WhyLost(Error::PeerLost("send", peer));
    }
    return {};
  }

  // Seals and writes one message to `peer`, in chunks. The caller holds the
  // peer's send_mutex.
  Status SendLocked(int peer, const FrameKey& key, std::span<const std::byte> head,
                    std::span<const std::byte> tail, Deadline deadline, bool last) {
    Peer& target = *peers[peer];
    const uint64_t total = head.size() + tail.size();
    uint64_t offset = 0;
    do {
      const uint32_t chunk = static_cast<uint32_t>(std::min<uint64_t>(kMaxChunkBytes, total - offset));
      FrameHeader header;
      header.op = key.op;
      header.job_id = job_id;
      header.source_rank = options.rank;
      header.tag = key.tag;
      header.sequence = key.sequence;
      header.element_count = key.element_count;
      header.message_length = total;
      header.chunk_offset = offset;
      header.payload_length = chunk;
      std::byte* frame = target.send_buffer.get();
      const EncodedFrameHeader encoded = EncodeFrameHeader(header);
      std::memcpy(frame + kSealedLengthBytes, encoded.data(), encoded.size());
      std::byte* out = frame + kSealedLengthBytes + kFrameHeaderBytes;
      for (uint64_t at = offset; at < offset + chunk;) {
        const bool in_head = at < head.size();
        const std::span<const std::byte> part = in_head ? head.subspan(at) : tail.subspan(at - head.size());
        const size_t take = std::min<uint64_t>(part.size(), offset + chunk - at);
        std::memcpy(out, part.data(), take);
        out += take;
        at += take;
      }
      const size_t frame_bytes = kSealedLengthBytes + kFrameHeaderBytes + chunk + kSealTagBytes;
      target.sealer->Seal(std::span(frame, frame_bytes));
      if (Status written = WriteAll(peer, std::span(frame, frame_bytes), deadline, last); !written)
        return written;
      offset += chunk;
    } while (offset < total);
    return {};
  }

  // Connects to `peer` at `address` and sends the hello.
  Status ConnectTo(int peer, const TcpPeerAddress& address, Deadline deadline);

  // A connection accepted in Connect, until its hello proves a rank.
  struct Pending {
    int fd = -1;
    std::string from;
    std::array<std::byte, kHelloBytes> hello{};
    size_t have = 0;
  };

  // Reads more of `pending`'s hello. Returns the rank it proved once whole,
  // -1 while incomplete; an error says why the connection is refused.
  Result<int> ReadHello(Pending& pending);

  // Accepts a connection from every reachable peer by `deadline`, refusing
  // any other.
  Status AcceptPeers(Deadline deadline);

  // Closes once: writes `last` (a goodbye, or an abort notice) to every
  // peer, then shuts the connections down.
  void Stop(CollectiveOp last, const std::string& reason) {
    if (closed.exchange(true)) return;
    const auto bytes = std::as_bytes(std::span(reason));
    for (int peer = 0; peer < options.world_size; ++peer) {
      Peer& target = *peers[peer];
      if (!target.reachable) continue;
      std::lock_guard<std::mutex> sending(target.send_mutex);
      if (target.fd >= 0 && target.sealer && !target.send_closed) {
        FrameKey key;
        key.op = last;
        // Best effort: a peer that is gone or takes nothing for kLinger
        // learns of the end from the closed connection instead.
        (void)SendLocked(peer, key, bytes, {}, Clock::now() + kLinger, /*last=*/true);
        shutdown(target.fd, SHUT_WR);
      }
      target.send_closed = true;
    }
    for (const std::unique_ptr<Peer>& peer : peers) {
      if (peer->fd >= 0) shutdown(peer->fd, SHUT_RD);  // wakes a reader in poll()
    }
    mailbox.Close();
  }

  const TcpTransportOptions options;
  int listen_fd;
  const int port;
  const DataKey key;
  uint64_t job_id = 0;
  Mailbox mailbox;
  std::vector<std::unique_ptr<Peer>> peers;
  std::atomic<bool> connected{false};
  std::atomic<bool> closed{false};
};

Status TcpTransport::Impl::ConnectTo(int peer, const TcpPeerAddress& address, Deadline deadline) {
  const std::string where = "data path: " + RankText(options.rank) + " to " + RankText(peer) + " at " +
                            address.address + ":" + std::to_string(address.port);
  Result<sockaddr_in> target = ParseAddress(where, address.address, address.port);
  if (!target) return target.error();
  Peer& to = *peers[peer];
  to.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (to.fd < 0) return Error::Transport(where + ": socket: " + std::strerror(errno));
  ConfigureSocket(to.fd, options.socket_buffer_bytes);
  if (connect(to.fd, reinterpret_cast<const sockaddr*>(&*target), sizeof(*target)) != 0 &&
      errno != EINPROGRESS) {
    return Error::Transport(where + ": connect: " + std::strerror(errno));
  }
  pollfd wait{to.fd, POLLOUT, 0};
  while (poll(&wait, 1, PollMs(deadline, options.check_interval)) == 0) {
    if (Clock::now() >= deadline) return Error{ErrorKind::kTimeout, where + ": connect timed out"};
  }
  int failure = 0;
  socklen_t length = sizeof(failure);
  getsockopt(to.fd, SOL_SOCKET, SO_ERROR, &failure, &length);
  if (failure != 0) return Error::Transport(where + ": connect: " + std::strerror(failure));
  std::byte* hello = to.send_buffer.get();
  StoreLittleEndian(std::span(hello, 4), static_cast<uint32_t>(options.rank));
  FrameHeader header;
  header.op = CollectiveOp::kHello;
  header.job_id = job_id;
  header.source_rank = options.rank;
  const EncodedFrameHeader encoded = EncodeFrameHeader(header);
  std::memcpy(hello + 4 + kSealedLengthBytes, encoded.data(), encoded.size());
  to.sealer->Seal(std::span(hello + 4, kHelloBytes - 4));
  return WriteAll(peer, std::span(hello, kHelloBytes), deadline, /*last=*/false);
}

Result<int> TcpTransport::Impl::ReadHello(Pending& pending) {
  const ssize_t got = recv(pending.fd, pending.hello.data() + pending.have, kHelloBytes - pending.have, 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return -1;
  if (got <= 0) return Error::Transport("closed before its hello was complete");
  pending.have += got;
  if (pending.have >= 4 + kSealedLengthBytes) {
    const uint32_t claimed = LoadLittleEndian<uint32_t>(std::span<const std::byte>(pending.hello).first(4));
    const uint32_t sealed =
        LoadLittleEndian<uint32_t>(std::span<const std::byte>(pending.hello).subspan(4, 4));
    // Lower ranks connect to higher ones.
    if (claimed >= static_cast<uint32_t>(options.rank) || !peers[claimed]->reachable ||
        peers[claimed]->fd >= 0) {
      return Error::Transport("claims to be rank " + std::to_string(claimed) + ", which is not expected");
    }
    if (sealed != kHelloBytes - 4 - kSealedLengthBytes) {
      return Error::Transport("a hello of " + std::to_string(sealed) + " bytes");
    }
  }
  if (pending.have < kHelloBytes) return -1;
  const int claimed = static_cast<int>(LoadLittleEndian<uint32_t>(std::span<const std::byte>(pending.hello)));
  Result<std::span<std::byte>> plain = peers[claimed]->opener->Open(std::span(pending.hello).subspan(4));
  if (!plain) return std::move(plain).error();
  Result<FrameHeader> header = DecodeFrameHeader(*plain, job_id, options.world_size);
  if (!header) return std::move(header).error();
  if (header->op != CollectiveOp::kHello || header->source_rank != static_cast<uint32_t>(claimed)) {
    return Error::Transport("its first frame is no hello of rank " + std::to_string(claimed));
  }
  return claimed;
}

Status TcpTransport::Impl::AcceptPeers(Deadline deadline) {
  size_t missing = 0;
  for (int peer = 0; peer < options.rank; ++peer) missing += peers[peer]->reachable;
  std::vector<Pending> pending;
  const auto refuse = [this](Pending& connection, const std::string& why) {
    LOG(WARNING) << RankText(options.rank) << ": data path: refused a connection from " << connection.from
                 << ": " << why;
    close(connection.fd);
  };
  while (missing > 0) {
    if (Clock::now() >= deadline) {
      std::string ranks;
      for (int peer = 0; peer < options.rank; ++peer) {
        if (peers[peer]->reachable && peers[peer]->fd < 0)
          ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
      }
      for (Pending& connection : pending) close(connection.fd);
      return Error{ErrorKind::kTimeout,
                   "data path: " + RankText(options.rank) + ": no connection arrived from rank(s) " + ranks};
    }
    std::vector<pollfd> waits{{listen_fd, POLLIN, 0}};
    for (const Pending& connection : pending) waits.push_back({connection.fd, POLLIN, 0});
    poll(waits.data(), waits.size(), PollMs(deadline, options.check_interval));
    for (size_t i = pending.size(); i-- > 0;) {
      if (waits[i + 1].revents == 0) continue;
      Result<int> proved = ReadHello(pending[i]);
      if (proved && *proved < 0) continue;
      if (!proved) {
        refuse(pending[i], proved.error().message);
      } else {
        Peer& from = *peers[*proved];
        from.fd = pending[i].fd;
        ConfigureSocket(from.fd, options.socket_buffer_bytes);
        --missing;
      }
      pending.erase(pending.begin() + i);
    }
    if (waits[0].revents != 0) {
      for (int fd; (fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        pending.push_back({fd, PeerName(fd)});
        if (pending.size() > kMaxPendingConnections) {
          refuse(pending.front(), "too many connections without a hello");
          pending.erase(pending.begin());
        }
      }
    }
  }
  for (Pending& connection : pending) refuse(connection, "every rank is connected");
  return {};
}

Result<std::shared_ptr<TcpTransport>> TcpTransport::Listen(const TcpTransportOptions& options) {
  if (options.rank < 0 || options.rank >= options.world_size) {
    return Error::UnknownRank("TcpTransport", options.rank, options.world_size);
  }
  const std::string where =
      "data path: rank " + std::to_string(options.rank) + ": listen on " + options.bind_address;
  Result<sockaddr_in> address = ParseAddress(where, options.bind_address, 0);
  if (!address) return std::move(address).error();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::Transport(where + ": socket: " + std::strerror(errno));
  socklen_t length = sizeof(*address);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&*address), &length) != 0) {
    const int failure = errno;
    close(fd);
    return Error::Transport(where + ": " + std::strerror(failure));
  }
  return std::shared_ptr<TcpTransport>(
      new TcpTransport(std::make_unique<Impl>(options, fd, ntohs(address->sin_port))));
}

TcpTransport::TcpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TcpTransport::~TcpTransport() { Close(); }

int TcpTransport::port() const { return impl_->port; }
const DataKey& TcpTransport::key() const { return impl_->key; }
int TcpTransport::rank() const { return impl_->options.rank; }
int TcpTransport::world_size() const { return impl_->options.world_size; }
std::chrono::milliseconds TcpTransport::timeout() const { return impl_->options.timeout; }

Status TcpTransport::Connect(const std::vector<std::optional<TcpPeerAddress>>& peers, uint64_t job_id,
                             Deadline deadline) {
  Impl& impl = *impl_;
  if (static_cast<int>(peers.size()) != impl.options.world_size) {
    return Error::LengthMismatch("TcpTransport::Connect peers", impl.options.world_size,
                                 static_cast<int64_t>(peers.size()));
  }
  if (impl.connected.exchange(true)) return Error::InvalidArgument("TcpTransport::Connect called twice");
  impl.job_id = job_id;
  for (int peer = 0; peer < impl.options.world_size; ++peer) {
    if (peer == impl.options.rank || !peers[peer]) continue;
    Impl::Peer& entry = *impl.peers[peer];
    entry.reachable = true;
    entry.send_buffer.reset(new std::byte[kMaxWireFrame]);
    entry.in_buffer.reset(new std::byte[2 * kMaxWireFrame]);
    entry.opener.emplace(impl.key, peer);
    entry.sealer.emplace(peers[peer]->key, impl.options.rank);
  }
  for (int peer = impl.options.rank + 1; peer < impl.options.world_size; ++peer) {
    if (!impl.peers[peer]->reachable) continue;
    if (Status connected = impl.ConnectTo(peer, *peers[peer], deadline); !connected) return connected;
  }
  Status accepted = impl.AcceptPeers(deadline);
  close(impl.listen_fd);
  impl.listen_fd = -1;
  return accepted;
}

Status TcpTransport::Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                          std::span<const std::byte> tail, Deadline deadline) {
  Impl& impl = *impl_;
  if (peer < 0 || peer >= impl.options.world_size)
    return Error::UnknownRank("send", peer, impl.options.world_size);
  if (impl.closed.load()) return Error::Closed("send");
  if (peer == impl.options.rank) {
    impl.mailbox.Deliver(peer, Message{key, ConcatenatedPayload(head, tail)});
    return {};
  }
  Impl::Peer& target = *impl.peers[peer];
  if (!target.reachable)
    return Error::InvalidArgument("send: " + RankText(peer) + " is not connected over TCP");
  const WaitingOutside waiting;  // for the send lock, or room in the socket
  std::lock_guard<std::mutex> sending(target.send_mutex);
  if (target.send_closed) return Error::Closed("send");
  return impl.SendLocked(peer, key, head, tail, deadline, /*last=*/false);
}

Result<Message> TcpTransport::Recv(int peer, uint32_t tag, Deadline deadline) {
  Impl& impl = *impl_;
  if (peer < 0 || peer >= impl.options.world_size)
    return Error::UnknownRank("recv", peer, impl.options.world_size);
  if (impl.closed.load()) return Error::Closed("recv");
  const WaitingOutside waiting;
  const Deadline started = Clock::now();
  if (peer == impl.options.rank) return impl.mailbox.Take(peer, tag, deadline);
  if (!impl.peers[peer]->reachable) {
    return Error::InvalidArgument("recv: " + RankText(peer) + " is not connected over TCP");
  }
  return impl.RecvUntil(peer, tag, started, deadline);
}

Status TcpTransport::CheckAbortNotices() { return impl_->Checks(); }

void TcpTransport::Close() { impl_->Stop(CollectiveOp::kGoodbye, ""); }

void TcpTransport::Abort(const std::string& reason) { impl_->Stop(CollectiveOp::kAbort, reason); }

}  // namespace inferno
