// Timeline: where one rank's time goes while generating — computing, sending,
// receiving a message's payload, and waiting for a message to arrive — as
// totals, and, when tracing, as spans for a Chrome trace-event file (one
// track per rank, viewable in Perfetto or chrome://tracing).
//
// Waiting is the time blocked for a message header (the upstream stage had
// not sent it yet); receiving is the time taking its payload.
//
// Thread-safety: not thread-safe; one Timeline per rank, used by its owner.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace inferno {

enum class SpanKind { kCompute = 0, kSend = 1, kRecv = 2, kWait = 3 };
inline constexpr int kSpanKinds = 4;

// "compute", "send", "recv", "wait".
const char* SpanKindName(SpanKind kind);

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Spans are kept for a trace only when `keep_spans`.
  explicit Timeline(bool keep_spans) : keep_spans_(keep_spans) {}

  // Adds [begin, end) to the total of `kind`; with spans kept, records it
  // labelled `label` for `sequence` (-1: none).
  void Add(SpanKind kind, Clock::time_point begin, Clock::time_point end, const char* label, int sequence);

  double seconds(SpanKind kind) const { return seconds_[static_cast<int>(kind)]; }

  // The totals and spans as bytes (for gathering on the leader) and back.
  std::vector<std::byte> Serialize() const;
  static Result<Timeline> Deserialize(std::span<const std::byte> bytes);

  // A recorded span, as ForEachSpan shows it (times in microseconds of the
  // monotonic clock).
  struct SpanView {
    SpanKind kind;
    int32_t sequence;
    int64_t begin_us;
    int64_t duration_us;
    const std::string& label;
  };
  // Calls `visit` on every recorded span, in the order recorded.
  void ForEachSpan(const std::function<void(const SpanView&)>& visit) const;

 private:
  struct Span {
    SpanKind kind;
    int32_t sequence;
    int64_t begin_us;
    int64_t duration_us;
    std::string label;
  };

  bool keep_spans_;
  std::array<double, kSpanKinds> seconds_{};
  std::vector<Span> spans_;
};

// Times a scope into a Timeline.
class TimedScope {
 public:
  TimedScope(Timeline& timeline, SpanKind kind, const char* label, int sequence)
      : timeline_(timeline),
        kind_(kind),
        label_(label),
        sequence_(sequence),
        begin_(Timeline::Clock::now()) {}
  ~TimedScope() { timeline_.Add(kind_, begin_, Timeline::Clock::now(), label_, sequence_); }
  TimedScope(const TimedScope&) = delete;
  TimedScope& operator=(const TimedScope&) = delete;

 private:
  Timeline& timeline_;
  SpanKind kind_;
  const char* label_;
  int sequence_;
  Timeline::Clock::time_point begin_;
};

// A complete Chrome trace-event JSON document of every rank's timeline
// (element r is rank r's).
std::string ChromeTraceJson(const std::vector<Timeline>& ranks);

}  // namespace inferno
