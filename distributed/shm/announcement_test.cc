#include "distributed/shm/announcement.h"

#include <atomic>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

namespace inferno {
namespace {

// The op a member runs as its collective `sequence` in these tests: an
// all_gather, then a scatter, and so on (the generator's greedy steps under
// tensor parallelism alternate like that).
CollectiveOp OpOf(uint64_t sequence) {
  return sequence % 2 == 0 ? CollectiveOp::kAllGather : CollectiveOp::kScatter;
}

TEST(Announcement, NothingBeforeTheFirstStoreThenTheLastStored) {
  Announcement announcement{};
  EXPECT_EQ(announcement.Load(), std::nullopt);
  announcement.Store(CollectiveOp::kAllReduce, 0);
  EXPECT_EQ(announcement.Load(), (AnnouncedCollective{CollectiveOp::kAllReduce, 0}));
  announcement.Store(CollectiveOp::kAbort, Announcement::kMaxAnnouncedSequence);
  EXPECT_EQ(announcement.Load(),
            (AnnouncedCollective{CollectiveOp::kAbort, Announcement::kMaxAnnouncedSequence}));
}

// A peer reading while the member announces collective after collective
// sees each op with its own sequence number, never one announcement's
// sequence with the next one's op (which made a peer still in all_gather #n
// report a false "the peer sent scatter #n"). Two words for op and sequence
// fail this within a few thousand announcements on 2 busy cores.
TEST(Announcement, APeerReadingMeanwhileNeverPairsOneSequenceWithAnothersOp) {
  constexpr uint64_t kAnnouncements = 2'000'000;
  Announcement announcement{};
  std::atomic<bool> done{false};
  int64_t torn = 0;
  int64_t reads = 0;
  std::thread peer([&] {
    uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      const std::optional<AnnouncedCollective> seen = announcement.Load();
      ++reads;
      if (!seen) continue;
      if (seen->op != OpOf(seen->sequence) || seen->sequence < last) ++torn;
      last = seen->sequence;
    }
  });
  for (uint64_t sequence = 0; sequence < kAnnouncements; ++sequence) {
    announcement.Store(OpOf(sequence), sequence);
  }
  done.store(true, std::memory_order_release);
  peer.join();
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
  EXPECT_GT(reads, 0);
}

}  // namespace
}  // namespace inferno
