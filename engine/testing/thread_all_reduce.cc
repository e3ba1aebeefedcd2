#include "engine/testing/thread_all_reduce.h"

#include <algorithm>
#include <string>

namespace inferno {

ThreadAllReduce::ThreadAllReduce(int world_size, std::chrono::milliseconds timeout)
    : world_size_(world_size), timeout_(timeout), parts_(static_cast<size_t>(world_size)) {
  for (int rank = 0; rank < world_size; ++rank) ranks_.push_back(std::make_unique<Rank>(*this, rank));
}

Status ThreadAllReduce::Meet(std::unique_lock<std::mutex>& lock, int rank) {
  const int64_t phase = phase_;
  if (++arrived_ == world_size_) {
    arrived_ = 0;
    ++phase_;
    changed_.notify_all();
    return {};
  }
  if (!changed_.wait_for(lock, timeout_, [&] { return phase_ != phase; })) {
    return Error::Timeout("thread all_reduce", rank, timeout_);
  }
  return {};
}

Status ThreadAllReduce::Sum(int rank, std::span<float> data) {
  std::unique_lock<std::mutex> lock(mutex_);
  parts_[static_cast<size_t>(rank)] = data;
  if (Status met = Meet(lock, rank); !met) return met;
  std::vector<float> sum(data.size(), 0.0f);
  for (const std::span<float> part : parts_) {
    if (part.size() != data.size()) {
      return Error::LengthMismatch("thread all_reduce", static_cast<int64_t>(data.size()),
                                   static_cast<int64_t>(part.size()));
    }
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  if (Status met = Meet(lock, rank); !met) return met;
  std::copy(sum.begin(), sum.end(), data.begin());
  return {};
}

}  // namespace inferno
