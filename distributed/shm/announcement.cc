#include "distributed/shm/announcement.h"

#include <glog/logging.h>

namespace inferno {

void Announcement::Store(CollectiveOp op, uint64_t sequence) {
  CHECK_LE(sequence, kMaxAnnouncedSequence);
  word_.store((sequence + 1) << 8 | static_cast<uint8_t>(op), std::memory_order_release);
}

std::optional<AnnouncedCollective> Announcement::Load() const {
  const uint64_t word = word_.load(std::memory_order_acquire);
  if (word == 0) return std::nullopt;
  return AnnouncedCollective{static_cast<CollectiveOp>(word & 0xff), (word >> 8) - 1};
}

}  // namespace inferno
