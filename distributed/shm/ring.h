// ShmRing: a lock-free single-producer/single-consumer byte ring in memory
// that two processes (or threads) map, carrying framed messages from one
// RingWriter to one RingReader.
//
// Layout of the ring's memory (RingBytes(capacity) bytes, 64-byte aligned;
// both sides run the same build on the same host, so integers are native):
//   [0, 64)    RingLayout: magic, capacity (written once by FormatRing)
//   [64, 128)  the producer's line: head (bytes written, ever), the data
//              doorbell, the producer's state
//   [128, 192) the consumer's line: tail (bytes read, ever), the space
//              doorbell, the consumer's state
//   [192, 192 + capacity)  the bytes, a power of two
// Head and tail only grow; head - tail bytes are readable, capacity - (head -
// tail) writable. The producer publishes bytes with a release store of head
// and rings the data doorbell; the consumer frees them with a release store
// of tail and rings the space doorbell.
//
// The byte stream is a sequence of records: a RecordHeader (the FrameKey
// fields and the payload length) followed by the payload. A message larger
// than the free space streams through in pieces as the reader frees room, so
// a transfer of any size pipelines through a ring of any capacity; the writer
// publishes at most a quarter of the capacity at a time so the reader starts
// copying early.
//
// Failure semantics: a Write that passes its deadline before writing a byte
// leaves the ring as it was. One that passes it mid-message abandons the
// ring: the reader, after the complete messages before it, fails with
// PeerLost saying so, and later writes fail with Closed. A Read that passes
// its deadline mid-message keeps what it has and resumes on the next Read.
//
// Thread-safety: one thread at a time may Write on a RingWriter and one at a
// time Read on a RingReader; Close may be called from any thread at any time,
// also while the other side's process runs. Each side belongs to one process.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/error.h"
#include "distributed/shm/doorbell.h"
#include "distributed/shm/wait_history.h"
#include "distributed/transport.h"

namespace inferno {

inline constexpr uint64_t kRingMagic = 0x31474E49524D4853ull;  // bytes "SHMRING1"
inline constexpr size_t kRingLayoutBytes = 192;
inline constexpr uint32_t kRecordMarker = 0x4D524853u;  // bytes "SHRM"

// One record's header in the byte stream.
struct RecordHeader {
  uint32_t marker = kRecordMarker;
  uint32_t tag = 0;
  uint64_t sequence = 0;
  uint64_t element_count = 0;
  uint64_t length = 0;  // payload bytes that follow
  uint8_t op = 0;       // CollectiveOp
  uint8_t reserved[7] = {};
};
static_assert(sizeof(RecordHeader) == 40);

// What a side of the ring says about itself (values of the state words).
enum class RingSideState : uint32_t {
  kOpen = 0,
  kClosed = 1,     // closed in order, between messages
  kAbandoned = 2,  // the writer gave up in the middle of a message
};

// The ring's shared control block; the bytes follow it.
struct RingLayout {
  alignas(64) uint64_t magic;
  uint64_t capacity;
  alignas(64) std::atomic<uint64_t> head;
  Doorbell data_bell;
  std::atomic<uint32_t> writer_state;
  alignas(64) std::atomic<uint64_t> tail;
  Doorbell space_bell;
  std::atomic<uint32_t> reader_state;
};
static_assert(sizeof(RingLayout) == kRingLayoutBytes);

// Bytes of memory a ring of `capacity` data bytes needs.
constexpr size_t RingBytes(size_t capacity) { return kRingLayoutBytes + capacity; }

// Makes `memory` (64-byte aligned, zero-filled as a new shared mapping is,
// RingBytes(capacity) long) an empty open ring. Call once, before either side
// attaches. `capacity` must be a power of two >= 64 (CHECKed).
void FormatRing(std::span<std::byte> memory, size_t capacity);

// What both sides of a ring need besides its memory.
struct RingOptions {
  // The rank at the other end, for error messages.
  int peer_rank = 0;
  // How waits spin, sleep and check the peer's liveness.
  WaitPolicy wait;
};

class RingWriter {
 public:
  // Attaches to a formatted ring in `memory`, which must outlive the writer.
  // Errors: Corruption (not a formatted ring, or sizes disagree).
  static Result<RingWriter> Attach(std::span<std::byte> memory, RingOptions options);

  // Appends one message: `key`, then the bytes of `head` followed by those of
  // `tail` as one payload. Returns once every byte is in the ring (the caller
  // may reuse both spans). Errors: Timeout (no room by `deadline`; the ring is
  // abandoned if part of the message was written), PeerLost (the reader closed
  // or `options.wait.check` failed), Closed (this writer was closed or
  // abandoned the ring).
  Status Write(const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
               Deadline deadline);

  // Whether a message of `payload_bytes` fits in the free room now, so that
  // Write would not wait. The room only grows until the next Write.
  bool Fits(size_t payload_bytes);

  // Marks the writer closed: the reader gets the messages already written,
  // then PeerLost. Wakes both sides' waiters. Idempotent.
  void Close();

 private:
  RingWriter(RingLayout* layout, std::byte* bytes, RingOptions options);
  // Copies `source` into the ring, waiting for room; `started` says whether
  // bytes of this message were already written (for the failure semantics).
  Status Put(std::span<const std::byte> source, bool& started, Deadline deadline, Clock::time_point begun);
  Status Fail(Error error, bool started);

  RingLayout* layout_;
  std::byte* bytes_;
  uint64_t mask_;
  uint64_t head_;         // == layout_->head; only this writer moves it
  uint64_t tail_cached_;  // a value layout_->tail had
  RingOptions options_;
  WaitHistory history_;  // of this end's waits
};

class RingReader {
 public:
  // Attaches to a formatted ring in `memory`, which must outlive the reader.
  // Errors: Corruption (not a formatted ring, or sizes disagree).
  static Result<RingReader> Attach(std::span<std::byte> memory, RingOptions options);

  // Returns the next message, its payload copied out of the ring.
  // Errors: Timeout (the message did not arrive, or not all of it, by
  // `deadline`; the next Read resumes it), PeerLost (the writer closed or
  // abandoned the ring and every complete message was read, or
  // `options.wait.check` failed), Corruption (a record without its marker),
  // Closed (this reader was closed).
  Result<Message> Read(Deadline deadline);

  // Marks the reader closed: the writer's pending and later writes fail with
  // PeerLost. Wakes both sides' waiters. Idempotent.
  void Close();

 private:
  RingReader(RingLayout* layout, std::byte* bytes, RingOptions options);
  // Copies up to `target.size()` readable bytes into `target`; returns how
  // many. Frees the room they took.
  size_t Take(std::span<std::byte> target);
  // Waits until bytes are readable. `begun`: when this Read started.
  Status AwaitBytes(Deadline deadline, Clock::time_point begun);

  RingLayout* layout_;
  std::byte* bytes_;
  uint64_t mask_;
  uint64_t tail_;         // == layout_->tail; only this reader moves it
  uint64_t head_cached_;  // a value layout_->head had
  RingOptions options_;
  WaitHistory history_;  // of this end's waits
  // The message being read, kept across Reads that time out.
  RecordHeader header_;
  size_t header_filled_ = 0;
  std::shared_ptr<std::byte[]> payload_;  // header_.length bytes once the header is in
  size_t payload_filled_ = 0;
};

}  // namespace inferno
