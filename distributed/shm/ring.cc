#include "distributed/shm/ring.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include <glog/logging.h>

namespace inferno {
namespace {

bool IsOpen(const std::atomic<uint32_t>& state) {
  return state.load(std::memory_order_acquire) == static_cast<uint32_t>(RingSideState::kOpen);
}

std::chrono::milliseconds Since(Clock::time_point begun) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - begun);
}

// The layout in `memory` after checking that it is a formatted ring that fits.
Result<RingLayout*> CheckedLayout(std::span<std::byte> memory) {
  if (memory.size() < kRingLayoutBytes || reinterpret_cast<uintptr_t>(memory.data()) % 64 != 0) {
    return Error::Corruption("shared-memory ring: " + std::to_string(memory.size()) +
                             " bytes at a misaligned or too small mapping");
  }
  auto* layout = reinterpret_cast<RingLayout*>(memory.data());
  if (layout->magic != kRingMagic) return Error::Corruption("shared-memory ring: bad magic number");
  const uint64_t capacity = layout->capacity;
  if (capacity < 64 || (capacity & (capacity - 1)) != 0 || RingBytes(capacity) > memory.size()) {
    return Error::Corruption("shared-memory ring: capacity " + std::to_string(capacity) +
                             " does not fit a mapping of " + std::to_string(memory.size()) + " bytes");
  }
  return layout;
}

// Closes one side: records `state`, then wakes the waiters of both doorbells
// (the other side's, and any thread of this side blocked in a wait).
void CloseSide(RingLayout& layout, std::atomic<uint32_t>& side, RingSideState state) {
  uint32_t open = static_cast<uint32_t>(RingSideState::kOpen);
  side.compare_exchange_strong(open, static_cast<uint32_t>(state), std::memory_order_acq_rel);
  layout.data_bell.Ring();
  layout.space_bell.Ring();
}

}  // namespace

void FormatRing(std::span<std::byte> memory, size_t capacity) {
  CHECK(capacity >= 64 && (capacity & (capacity - 1)) == 0) << "ring capacity " << capacity;
  CHECK_GE(memory.size(), RingBytes(capacity));
  CHECK_EQ(reinterpret_cast<uintptr_t>(memory.data()) % 64, 0u);
  auto* layout = new (memory.data()) RingLayout{};
  layout->magic = kRingMagic;
  layout->capacity = capacity;
}

RingWriter::RingWriter(RingLayout* layout, std::byte* bytes, RingOptions options)
    : layout_(layout),
      bytes_(bytes),
      mask_(layout->capacity - 1),
      head_(layout->head.load(std::memory_order_relaxed)),
      tail_cached_(layout->tail.load(std::memory_order_acquire)),
      options_(std::move(options)) {}

Result<RingWriter> RingWriter::Attach(std::span<std::byte> memory, RingOptions options) {
  Result<RingLayout*> layout = CheckedLayout(memory);
  if (!layout) return layout.error();
  return RingWriter(*layout, memory.data() + kRingLayoutBytes, std::move(options));
}

Status RingWriter::Write(const FrameKey& key, std::span<const std::byte> head,
                         std::span<const std::byte> tail, Deadline deadline) {
  const Clock::time_point begun = Clock::now();
  RecordHeader header;
  header.tag = key.tag;
  header.sequence = key.sequence;
  header.element_count = key.element_count;
  header.length = head.size() + tail.size();
  header.op = static_cast<uint8_t>(key.op);
  bool started = false;
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span<const RecordHeader, 1>(&header, 1)),
                                              head, tail};
  for (std::span<const std::byte> part : parts) {
    Status put = Put(part, started, deadline, begun);
    if (!put) return put;
  }
  return {};
}

Status RingWriter::Put(std::span<const std::byte> source, bool& started, Deadline deadline,
                       Clock::time_point begun) {
  const uint64_t capacity = mask_ + 1;
  const uint64_t max_piece = std::max<uint64_t>(capacity / 4, sizeof(RecordHeader));
  while (!source.empty()) {
    if (!IsOpen(layout_->writer_state)) {
      return Error::Closed("shared-memory send to rank " + std::to_string(options_.peer_rank));
    }
    if (!IsOpen(layout_->reader_state)) {
      return Fail(Error::PeerLost("shared-memory send to rank " + std::to_string(options_.peer_rank) +
                                      " (it closed its end of the ring)",
                                  options_.peer_rank),
                  started);
    }
    uint64_t free = capacity - (head_ - tail_cached_);
    if (free == 0) {
      tail_cached_ = layout_->tail.load(std::memory_order_acquire);
      free = capacity - (head_ - tail_cached_);
    }
    if (free == 0) {
      auto has_room_or_closed = [this, capacity] {
        return layout_->tail.load(std::memory_order_acquire) + capacity != head_ ||
               !IsOpen(layout_->reader_state) || !IsOpen(layout_->writer_state);
      };
      Result<bool> woken =
          layout_->space_bell.WaitUntil(has_room_or_closed, deadline, options_.wait, &history_);
      if (!woken) return Fail(woken.error(), started);
      if (!*woken) {
        return Fail({ErrorKind::kTimeout, "shared-memory send to rank " + std::to_string(options_.peer_rank) +
                                              ": it made no room in the ring within " +
                                              std::to_string(Since(begun).count()) + " ms"},
                    started);
      }
      continue;
    }
    const uint64_t piece = std::min<uint64_t>({free, source.size(), max_piece});
    const uint64_t offset = head_ & mask_;
    const uint64_t first = std::min(piece, capacity - offset);
    std::memcpy(bytes_ + offset, source.data(), first);
    std::memcpy(bytes_, source.data() + first, piece - first);
    head_ += piece;
    layout_->head.store(head_, std::memory_order_release);
    layout_->data_bell.Ring();
    source = source.subspan(piece);
    started = true;
  }
  return {};
}

bool RingWriter::Fits(size_t payload_bytes) {
  const uint64_t capacity = mask_ + 1;
  const uint64_t needed = sizeof(RecordHeader) + payload_bytes;
  if (capacity - (head_ - tail_cached_) >= needed) return true;
  tail_cached_ = layout_->tail.load(std::memory_order_acquire);
  return capacity - (head_ - tail_cached_) >= needed;
}

Status RingWriter::Fail(Error error, bool started) {
  if (started) CloseSide(*layout_, layout_->writer_state, RingSideState::kAbandoned);
  return error;
}

void RingWriter::Close() { CloseSide(*layout_, layout_->writer_state, RingSideState::kClosed); }

RingReader::RingReader(RingLayout* layout, std::byte* bytes, RingOptions options)
    : layout_(layout),
      bytes_(bytes),
      mask_(layout->capacity - 1),
      tail_(layout->tail.load(std::memory_order_relaxed)),
      head_cached_(layout->head.load(std::memory_order_acquire)),
      options_(std::move(options)) {}

Result<RingReader> RingReader::Attach(std::span<std::byte> memory, RingOptions options) {
  Result<RingLayout*> layout = CheckedLayout(memory);
  if (!layout) return layout.error();
  return RingReader(*layout, memory.data() + kRingLayoutBytes, std::move(options));
}

size_t RingReader::Take(std::span<std::byte> target) {
  if (head_cached_ == tail_) head_cached_ = layout_->head.load(std::memory_order_acquire);
  const uint64_t capacity = mask_ + 1;
  const uint64_t piece = std::min<uint64_t>(head_cached_ - tail_, target.size());
  if (piece == 0) return 0;
  const uint64_t offset = tail_ & mask_;
  const uint64_t first = std::min(piece, capacity - offset);
  std::memcpy(target.data(), bytes_ + offset, first);
  std::memcpy(target.data() + first, bytes_, piece - first);
  tail_ += piece;
  layout_->tail.store(tail_, std::memory_order_release);
  layout_->space_bell.Ring();
  return piece;
}

Status RingReader::AwaitBytes(Deadline deadline, Clock::time_point begun) {
  const std::string where = "shared-memory recv from rank " + std::to_string(options_.peer_rank);
  auto readable_or_closed = [this] {
    return layout_->head.load(std::memory_order_acquire) != tail_ || !IsOpen(layout_->writer_state) ||
           !IsOpen(layout_->reader_state);
  };
  Result<bool> woken = layout_->data_bell.WaitUntil(readable_or_closed, deadline, options_.wait, &history_);
  if (!woken) return woken.error();
  if (!IsOpen(layout_->reader_state)) return Error::Closed(where);
  // The writer's state is stored after its last bytes: look at head again.
  if (layout_->head.load(std::memory_order_acquire) != tail_) return {};
  const uint32_t writer = layout_->writer_state.load(std::memory_order_acquire);
  if (writer == static_cast<uint32_t>(RingSideState::kAbandoned)) {
    return Error::PeerLost(where + " (it gave up sending a message part-way: its send failed)",
                           options_.peer_rank);
  }
  if (writer == static_cast<uint32_t>(RingSideState::kClosed)) {
    return Error::PeerLost(
        where + (header_filled_ + payload_filled_ > 0 ? " (it closed the ring part-way through a message)"
                                                      : " (it closed the ring)"),
        options_.peer_rank);
  }
  if (!*woken) return Error::Timeout("shared-memory recv", options_.peer_rank, Since(begun));
  return {};
}

Result<Message> RingReader::Read(Deadline deadline) {
  const Clock::time_point begun = Clock::now();
  auto header_bytes = std::as_writable_bytes(std::span<RecordHeader, 1>(&header_, 1));
  while (header_filled_ < sizeof(RecordHeader)) {
    if (!IsOpen(layout_->reader_state)) {
      return Error::Closed("shared-memory recv from rank " + std::to_string(options_.peer_rank));
    }
    const size_t taken = Take(header_bytes.subspan(header_filled_));
    header_filled_ += taken;
    if (header_filled_ == sizeof(RecordHeader)) {
      if (header_.marker != kRecordMarker) {
        return Error::Corruption("shared-memory recv from rank " + std::to_string(options_.peer_rank) +
                                 ": record without its marker at ring offset " +
                                 std::to_string(tail_ - sizeof(RecordHeader)));
      }
      payload_ = std::make_shared_for_overwrite<std::byte[]>(header_.length);
      payload_filled_ = 0;
      break;
    }
    if (taken == 0) {
      Status ready = AwaitBytes(deadline, begun);
      if (!ready) return ready.error();
    }
  }
  const std::span<std::byte> payload(payload_.get(), header_.length);
  while (payload_filled_ < payload.size()) {
    if (!IsOpen(layout_->reader_state)) {
      return Error::Closed("shared-memory recv from rank " + std::to_string(options_.peer_rank));
    }
    const size_t taken = Take(payload.subspan(payload_filled_));
    payload_filled_ += taken;
    if (taken == 0) {
      Status ready = AwaitBytes(deadline, begun);
      if (!ready) return ready.error();
    }
  }
  Message message{
      FrameKey{header_.tag, static_cast<CollectiveOp>(header_.op), header_.sequence, header_.element_count},
      Payload(std::move(payload_), payload)};
  header_filled_ = 0;
  payload_filled_ = 0;
  return message;
}

void RingReader::Close() { CloseSide(*layout_, layout_->reader_state, RingSideState::kClosed); }

}  // namespace inferno
