// DropLog: the warnings a rank writes about input it drops or refuses (a
// stranger's bytes, a malformed or misrouted frame, a connection without the
// job's key), rate-limited per source so that a flood cannot flood the log:
// at most kLinesPerSecond lines per source and kTotalLinesPerSecond in all
// each second; past that, events
// are only counted, and once per kSummaryPeriod a source that had lines
// suppressed gets one summary line, e.g.
//   rank 0 dropped 12345 frames from 127.0.0.1:53412 in the last 10 s (12340 not shown)
// At most kMaxSources sources are tracked per period; others share one entry.
//
// Thread-safety: all methods may be called from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace inferno {

class DropLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kLinesPerSecond = 5;
  static constexpr int kTotalLinesPerSecond = 20;
  static constexpr std::chrono::seconds kSummaryPeriod{10};
  static constexpr size_t kMaxSources = 256;

  // Lines read "<owner> <verb> <what>" and, in summaries, "<owner> <verb>
  // <count> <noun> from <source> ..." (e.g. "rank 0", "dropped", "frames");
  // `write` receives each line (the transport passes glog's WARNING); `now`
  // is the clock (tests pass a fake one).
  DropLog(std::string owner, std::string verb, std::string noun,
          std::function<void(const std::string& line)> write,
          std::function<Clock::time_point()> now = Clock::now);
  // Writes the summaries still due.
  ~DropLog();

  // Counts an event from `source` (a peer address or connection name) and
  // writes "<owner> <verb> <what>" unless `source` has used up its lines
  // this second.
  void Dropped(const std::string& source, const std::string& what);

  // When the last event was counted (the epoch before any).
  Clock::time_point LastDropped();

 private:
  struct SourceCounts {
    int64_t dropped = 0;     // this period
    int64_t suppressed = 0;  // this period, not written
    int lines_this_second = 0;
    Clock::time_point second_start;
  };

  // Writes a summary for every source with suppressed drops and starts a new
  // period. Caller holds mutex_.
  void EndPeriod();

  const std::string owner_;
  const std::string verb_;
  const std::string noun_;
  const std::function<void(const std::string&)> write_;
  const std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  Clock::time_point period_start_;
  Clock::time_point second_start_;  // of the total budget
  int lines_this_second_ = 0;       // in all
  std::map<std::string, SourceCounts> sources_;
  Clock::time_point last_dropped_{};
};

}  // namespace inferno
