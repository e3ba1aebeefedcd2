// Announcement: which collective a member of a CollectiveArea is in — its op
// and sequence number — in one 64-bit atomic word of shared memory, written
// by that member only and read by its peers' mismatch checks.
//
// One word, because a peer must never pair one announcement's sequence
// number with another's op. With the two in separate words a peer still
// waiting in all_gather #n could read the member's sequence n (the
// all_gather it had just left), then the op of its next announcement
// (scatter #n+1, written first), and fail with a false CollectiveMismatch
// ("the peer sent scatter #n"); under load, when a rank is descheduled
// between the two, `serve --tp 2` failed that way.
//
// Word: (sequence + 1) << 8 | op; all-zero bytes mean nothing announced yet,
// so a fresh segment needs no formatting. Sequence numbers stay below
// kMaxAnnouncedSequence.
//
// Thread-safety: Store from the owning member's one thread at a time; Load
// from any thread or process sharing the memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "distributed/frame_header.h"

namespace inferno {

struct AnnouncedCollective {
  CollectiveOp op;
  uint64_t sequence;

  bool operator==(const AnnouncedCollective&) const = default;
};

class Announcement {
 public:
  static constexpr uint64_t kMaxAnnouncedSequence = (uint64_t{1} << 56) - 2;

  // Announces collective `sequence` (at most kMaxAnnouncedSequence) of `op`.
  void Store(CollectiveOp op, uint64_t sequence);
  // The last Store's op and sequence, together; none before the first.
  std::optional<AnnouncedCollective> Load() const;

 private:
  std::atomic<uint64_t> word_;
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared between processes");
};

}  // namespace inferno
