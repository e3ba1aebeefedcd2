#include "distributed/shm/collective_area.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <utility>

namespace inferno {

struct CollectiveArea::MemberLine {
  alignas(64) std::atomic<int32_t> pid;
  Announcement announced;
  std::atomic<uint64_t> posted;
  std::atomic<uint64_t> reduced;
  std::atomic<uint64_t> done;
};

struct CollectiveArea::SlotHeader {
  alignas(64) uint64_t sequence;
  uint64_t element_count;
  uint64_t chunk;
  uint32_t op;
  int32_t root;
};

namespace {

constexpr size_t kLine = 64;

size_t AreaBytes(int size) {
  const size_t members = static_cast<size_t>(size);
  return kLine + members * kLine + members * 2 * kLine + members * 2 * kAreaSlotBytes;
}

std::string OpText(CollectiveOp op, uint64_t sequence) {
  return CollectiveOpName(op) + " #" + std::to_string(sequence);
}

}  // namespace

CollectiveArea::CollectiveArea(SharedSegment segment, int rank, int size)
    : segment_(std::move(segment)), rank_(rank), size_(size) {
  static_assert(sizeof(MemberLine) == kLine && sizeof(SlotHeader) == kLine);
  Member(rank_).pid.store(static_cast<int32_t>(getpid()), std::memory_order_release);
}

Result<std::unique_ptr<CollectiveArea>> CollectiveArea::Create(int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) return Error::UnknownRank("collective area", rank, size);
  Result<SharedSegment> segment = SharedSegment::Create(AreaBytes(size));
  if (!segment) return std::move(segment).error();
  return std::unique_ptr<CollectiveArea>(new CollectiveArea(std::move(*segment), rank, size));
}

Result<std::unique_ptr<CollectiveArea>> CollectiveArea::Open(const SegmentAddress& address, int rank,
                                                             int size) {
  if (size < 1 || rank < 0 || rank >= size) return Error::UnknownRank("collective area", rank, size);
  if (address.bytes != AreaBytes(size)) {
    return Error::InvalidArgument("collective area at " + address.ToString() + " has " +
                                  std::to_string(address.bytes) + " bytes, not the " +
                                  std::to_string(AreaBytes(size)) + " of a group of " + std::to_string(size));
  }
  Result<SharedSegment> segment = SharedSegment::Open(address);
  if (!segment) return std::move(segment).error();
  return std::unique_ptr<CollectiveArea>(new CollectiveArea(std::move(*segment), rank, size));
}

Doorbell& CollectiveArea::Bell() const { return *reinterpret_cast<Doorbell*>(segment_.bytes().data()); }

CollectiveArea::MemberLine& CollectiveArea::Member(int member) const {
  return reinterpret_cast<MemberLine*>(segment_.bytes().data() + kLine)[member];
}

CollectiveArea::SlotHeader& CollectiveArea::Header(int member, int buffer) const {
  auto* headers = reinterpret_cast<SlotHeader*>(segment_.bytes().data() + kLine + size_ * kLine);
  return headers[2 * member + buffer];
}

std::span<std::byte> CollectiveArea::Slot(int member, int buffer) const {
  const size_t offset =
      kLine + 3 * size_ * kLine + (2 * static_cast<size_t>(member) + buffer) * kAreaSlotBytes;
  return segment_.bytes().subspan(offset, kAreaSlotBytes);
}

Status CollectiveArea::WatchMembers(std::vector<int> job_ranks, std::function<Status()> also_check) {
  if (static_cast<int>(job_ranks.size()) != size_) {
    return Error::InvalidArgument("collective area: " + std::to_string(job_ranks.size()) + " job ranks for " +
                                  std::to_string(size_) + " members");
  }
  job_ranks_ = std::move(job_ranks);
  also_check_ = std::move(also_check);
  watches_.clear();
  for (int member = 0; member < size_; ++member) {
    if (member == rank_) continue;
    const int32_t pid = Member(member).pid.load(std::memory_order_acquire);
    if (pid == 0) {
      return Error::InvalidArgument("collective area: member " + std::to_string(member) + " (rank " +
                                    std::to_string(job_ranks_[member]) + ") has not opened it");
    }
    Result<PeerWatch> watch = PeerWatch::Open(job_ranks_[member], pid);
    if (!watch) return std::move(watch).error();
    watches_.push_back(std::move(*watch));
  }
  return {};
}

void CollectiveArea::Announce(CollectiveOp op, uint64_t sequence) {
  Member(rank_).announced.Store(op, sequence);
}

Status CollectiveArea::CheckMembers(const AreaStamp& stamp,
                                    const std::function<std::string()>& describe) const {
  if (also_check_) {
    if (Status fine = also_check_(); !fine) return fine;
  }
  for (const PeerWatch& watch : watches_) {
    if (Status alive = watch.Check(); !alive) return alive;
  }
  for (int member = 0; member < size_; ++member) {
    const std::optional<AnnouncedCollective> announced = Member(member).announced.Load();
    if (!announced || announced->sequence != stamp.sequence) continue;
    if (announced->op == CollectiveOp::kAbort) {
      return Error{ErrorKind::kCollectiveMismatch,
                   describe() + ": rank " + std::to_string(job_ranks_.empty() ? member : job_ranks_[member]) +
                       " failed it before entering the collective area"};
    }
    if (announced->op != stamp.op) {
      return Error::CollectiveMismatch(
          describe(), OpText(announced->op, announced->sequence) + " (rank " + std::to_string(member) + ")");
    }
  }
  return {};
}

Status CollectiveArea::AwaitAll(const std::function<bool(int)>& arrived, const AreaStamp& stamp,
                                Deadline deadline, const std::function<std::string()>& describe,
                                const char* what) {
  auto all_arrived = [&] {
    for (int member = 0; member < size_; ++member) {
      if (!arrived(member)) return false;
    }
    return true;
  };
  WaitPolicy wait = wait_;
  wait.check = [&]() { return CheckMembers(stamp, describe); };
  const Deadline started = Clock::now();
  Result<bool> ready = Bell().WaitUntil(all_arrived, deadline, wait, &history_);
  if (!ready) return std::move(ready).error();
  if (*ready) return {};
  int late = 0;
  while (late < size_ && arrived(late)) ++late;
  const int late_rank = job_ranks_[late];
  const auto timeout = [&](const std::string& detail) {
    return Error::Timeout(describe() + ": waiting for " + what + " of member " + std::to_string(late) +
                              " (rank " + std::to_string(late_rank) + ")" + detail,
                          late_rank,
                          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started));
  };
  const PeerWatch* watch = nullptr;
  for (const PeerWatch& each : watches_) {
    if (each.rank() == late_rank) watch = &each;
  }
  if (watch == nullptr) return timeout("");
  const std::string who = "rank " + std::to_string(late_rank) + " (pid " + std::to_string(watch->pid()) + ")";
  if (watch->Stopped()) return timeout("; " + who + " is stopped");
  // It runs, and may be waiting on the fault itself: the abort notice of the
  // rank that saw the fault first names it better than this rank can.
  ready = Bell().WaitUntil(all_arrived, Clock::now() + kPeerAliveGrace, wait, &history_);
  if (!ready) return std::move(ready).error();
  if (*ready) return {};
  return timeout("; " + who + " runs but did not arrive");
}

Status CollectiveArea::RunChunks(size_t chunks, const AreaStamp& stamp, Deadline deadline,
                                 const std::function<std::string()>& describe,
                                 const std::function<void(size_t, std::span<std::byte>)>& write,
                                 const std::function<bool(size_t, int)>& reduce_slice,
                                 const std::function<void(size_t, int)>& read) {
  for (size_t index = 0; index < chunks; ++index) {
    const uint64_t k = next_chunk_++;
    const int buffer = static_cast<int>(k % 2);

    // Chunk k - 2 used this buffer: every member must be done reading it.
    if (k >= 2) {
      Status free =
          AwaitAll([&](int member) { return Member(member).done.load(std::memory_order_acquire) + 1 >= k; },
                   stamp, deadline, describe, "the release of a slot");
      if (!free) return free;
    }
    SlotHeader& header = Header(rank_, buffer);
    header.sequence = stamp.sequence;
    header.element_count = stamp.element_count;
    header.chunk = k;
    header.op = static_cast<uint32_t>(stamp.op);
    header.root = stamp.root;
    write(index, Slot(rank_, buffer));
    Member(rank_).posted.store(k + 1, std::memory_order_release);
    Bell().Ring();

    Status posted =
        AwaitAll([&](int member) { return Member(member).posted.load(std::memory_order_acquire) >= k + 1; },
                 stamp, deadline, describe, "the input");
    if (!posted) return posted;
    for (int member = 0; member < size_; ++member) {
      const SlotHeader& theirs = Header(member, buffer);
      if (theirs.sequence != stamp.sequence || theirs.op != static_cast<uint32_t>(stamp.op) ||
          theirs.chunk != k) {
        return Error::CollectiveMismatch(
            describe(), OpText(static_cast<CollectiveOp>(theirs.op), theirs.sequence) + " (rank " +
                            std::to_string(member) + ")");
      }
      if (theirs.element_count != stamp.element_count) {
        return Error::LengthMismatch(describe() + " from rank " + std::to_string(member),
                                     static_cast<int64_t>(stamp.element_count),
                                     static_cast<int64_t>(theirs.element_count));
      }
      if (theirs.root != stamp.root) {
        return Error::CollectiveMismatch(describe() + " from root " + std::to_string(stamp.root),
                                         OpText(stamp.op, stamp.sequence) + " from root " +
                                             std::to_string(theirs.root) + " (rank " +
                                             std::to_string(member) + ")");
      }
    }
    if (reduce_slice && reduce_slice(index, buffer)) {
      Member(rank_).reduced.store(k + 1, std::memory_order_release);
      Bell().Ring();
      Status reduced = AwaitAll(
          [&](int member) { return Member(member).reduced.load(std::memory_order_acquire) >= k + 1; }, stamp,
          deadline, describe, "the reduced slice");
      if (!reduced) return reduced;
    }
    read(index, buffer);
    Member(rank_).done.store(k + 1, std::memory_order_release);
    Bell().Ring();
  }
  return {};
}

std::function<void(size_t, std::span<std::byte>)> CollectiveArea::WriteChunksOf(
    std::span<const std::byte> data) {
  return [data](size_t index, std::span<std::byte> slot) {
    const std::span<const std::byte> chunk = AreaChunkOf(data, index, kAreaSlotBytes);
    CopyBytes(slot.data(), chunk.data(), chunk.size());
  };
}

}  // namespace inferno
