// ThreadAllReduce: an in-process fake of engine/all_reduce.h for unit tests
// that run a tensor-parallel stage's ranks as threads of one process (the
// real one, runtime/tensor_parallel_group.h, goes through a ProcessGroup and
// is tested there and by the multi-rank tests). Every rank's Sum adds the
// ranks' vectors in rank order, so every rank gets the same bits.
//
// Thread-safety: each rank's AllReduce (rank(i)) is driven by one thread; the
// ranks' threads meet inside Sum. A rank that waits longer than `timeout` for
// the others gets a Timeout error instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/all_reduce.h"

namespace inferno {

class ThreadAllReduce {
 public:
  ThreadAllReduce(int world_size, std::chrono::milliseconds timeout);

  // Rank `rank`'s end (0 <= rank < world_size), owned by this object.
  AllReduce& rank(int rank) { return *ranks_[static_cast<size_t>(rank)]; }

 private:
  class Rank : public AllReduce {
   public:
    Rank(ThreadAllReduce& world, int rank) : world_(world), rank_(rank) {}
    int rank() const override { return rank_; }
    Status Sum(std::span<float> data) override { return world_.Sum(rank_, data); }

   private:
    ThreadAllReduce& world_;
    const int rank_;
  };

  // Publishes `data` as `rank`'s part of the current round and waits until
  // every rank has; then sums every part into `data` and waits until every
  // rank has summed, so that no part is overwritten by the next round early.
  Status Sum(int rank, std::span<float> data);
  // Waits until `arrived_` reaches the world size, then starts a new phase.
  Status Meet(std::unique_lock<std::mutex>& lock, int rank);

  const int world_size_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::span<float>> parts_;  // (world_size) each rank's data in this round
  int arrived_ = 0;
  int64_t phase_ = 0;
};

}  // namespace inferno
