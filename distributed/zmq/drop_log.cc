#include "distributed/zmq/drop_log.h"

#include <utility>

namespace inferno {
namespace {

constexpr char kOtherSources[] = "other sources";

}  // namespace

DropLog::DropLog(std::string owner, std::string verb, std::string noun,
                 std::function<void(const std::string& line)> write, std::function<Clock::time_point()> now)
    : owner_(std::move(owner)),
      verb_(std::move(verb)),
      noun_(std::move(noun)),
      write_(std::move(write)),
      now_(std::move(now)),
      period_start_(now_()),
      second_start_(period_start_) {}

DropLog::~DropLog() {
  std::lock_guard<std::mutex> lock(mutex_);
  EndPeriod();
}

DropLog::Clock::time_point DropLog::LastDropped() {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_dropped_;
}

void DropLog::Dropped(const std::string& source, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = now_();
  last_dropped_ = now;
  if (now - period_start_ >= kSummaryPeriod) {
    EndPeriod();
    period_start_ = now;
  }
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    const std::string& key = sources_.size() < kMaxSources ? source : kOtherSources;
    it = sources_.try_emplace(key, SourceCounts{0, 0, 0, now}).first;
  }
  SourceCounts& counts = it->second;
  ++counts.dropped;
  if (now - counts.second_start >= std::chrono::seconds(1)) {
    counts.second_start = now;
    counts.lines_this_second = 0;
  }
  if (now - second_start_ >= std::chrono::seconds(1)) {
    second_start_ = now;
    lines_this_second_ = 0;
  }
  if (counts.lines_this_second >= kLinesPerSecond || lines_this_second_ >= kTotalLinesPerSecond) {
    ++counts.suppressed;
    return;
  }
  ++counts.lines_this_second;
  ++lines_this_second_;
  write_(owner_ + " " + verb_ + " " + what);
}

void DropLog::EndPeriod() {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now_() - period_start_).count();
  for (const auto& [source, counts] : sources_) {
    if (counts.suppressed == 0) continue;
    write_(owner_ + " " + verb_ + " " + std::to_string(counts.dropped) + " " + noun_ + " from " + source +
           " in the last " + std::to_string(seconds) + " s (" + std::to_string(counts.suppressed) +
           " not shown)");
  }
  sources_.clear();
}

}  // namespace inferno
