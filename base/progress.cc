#include "base/progress.h"

#include <atomic>

namespace inferno {
namespace {

std::atomic<uint64_t> advanced{0};
std::atomic<int64_t> expecting{0};  // live ProgressExpected scopes
std::atomic<int64_t> waiting{0};    // live WaitingOutside scopes

}  // namespace

void ProgressAdvanced() { advanced.fetch_add(1, std::memory_order_relaxed); }

ProgressExpected::ProgressExpected() {
  expecting.fetch_add(1, std::memory_order_relaxed);
  ProgressAdvanced();
}

ProgressExpected::~ProgressExpected() {
  ProgressAdvanced();
  expecting.fetch_sub(1, std::memory_order_relaxed);
}

WaitingOutside::WaitingOutside() {
  waiting.fetch_add(1, std::memory_order_relaxed);
  ProgressAdvanced();
}

WaitingOutside::~WaitingOutside() {
  ProgressAdvanced();
  waiting.fetch_sub(1, std::memory_order_relaxed);
}

std::chrono::milliseconds StallClock::Sample(Clock::time_point now) {
  const uint64_t seen = advanced.load(std::memory_order_relaxed);
  if (seen != last_advanced_ || !sampled_) {
    // Every scope change advances the counter too, so while it stays the
    // same, the scopes stay as they are now.
    last_advanced_ = seen;
    unchanged_since_ = now;
    sampled_ = true;
  }
  const bool stalled =
      expecting.load(std::memory_order_relaxed) > 0 && waiting.load(std::memory_order_relaxed) == 0;
  if (!stalled) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - unchanged_since_);
}

}  // namespace inferno
