#include "base/timeline.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "base/byte_codec.h"

namespace inferno {

const char* SpanKindName(SpanKind kind) {
  switch (kind) {
    case SpanKind::kCompute:
      return "compute";
    case SpanKind::kSend:
      return "send";
    case SpanKind::kRecv:
      return "recv";
    case SpanKind::kWait:
      return "wait";
  }
  return "?";
}

void Timeline::Add(SpanKind kind, Clock::time_point begin, Clock::time_point end, const char* label,
                   int sequence) {
  seconds_[static_cast<int>(kind)] += std::chrono::duration<double>(end - begin).count();
  if (!keep_spans_) return;
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  spans_.push_back({kind, sequence, duration_cast<microseconds>(begin.time_since_epoch()).count(),
                    duration_cast<microseconds>(end - begin).count(), label});
}

// The gather format, little-endian: f64 seconds[kSpanKinds], u64 span count,
// then per span i32 kind, i32 sequence, i64 begin_us, i64 duration_us,
// u32 label length, the label's bytes.
std::vector<std::byte> Timeline::Serialize() const {
  constexpr size_t kSpanFixedBytes = sizeof(int32_t) * 2 + sizeof(int64_t) * 2 + sizeof(uint32_t);
  size_t size = sizeof(seconds_) + sizeof(uint64_t);
  for (const Span& span : spans_) size += kSpanFixedBytes + span.label.size();
  std::vector<std::byte> bytes(size);
  ByteWriter writer(bytes);
  for (double s : seconds_) writer.Put(s);
  writer.Put<uint64_t>(spans_.size());
  for (const Span& span : spans_) {
    writer.Put<int32_t>(static_cast<int32_t>(span.kind));
    writer.Put(span.sequence);
    writer.Put(span.begin_us);
    writer.Put(span.duration_us);
    writer.Put<uint32_t>(static_cast<uint32_t>(span.label.size()));
    writer.PutString(span.label);
  }
  return bytes;
}

Result<Timeline> Timeline::Deserialize(std::span<const std::byte> bytes) {
  Timeline timeline(true);
  const Error malformed =
      Error::Corruption("timeline: malformed message of " + std::to_string(bytes.size()) + " bytes");
  ByteReader reader(bytes);
  for (double& s : timeline.seconds_) {
    if (!reader.Get(s)) return malformed;
  }
  uint64_t count = 0;
  if (!reader.Get(count)) return malformed;
  for (uint64_t i = 0; i < count; ++i) {
    Span span;
    int32_t kind = 0;
    uint32_t length = 0;
    std::span<const std::byte> label;
    if (!reader.Get(kind) || !reader.Get(span.sequence) || !reader.Get(span.begin_us) ||
        !reader.Get(span.duration_us) || !reader.Get(length) || !reader.GetBytes(length, label) || kind < 0 ||
        kind >= kSpanKinds) {
      return malformed;
    }
    span.kind = static_cast<SpanKind>(kind);
    span.label.assign(reinterpret_cast<const char*>(label.data()), label.size());
    timeline.spans_.push_back(std::move(span));
  }
  return timeline;
}

void Timeline::ForEachSpan(const std::function<void(const SpanView&)>& visit) const {
  for (const Span& span : spans_)
    visit({span.kind, span.sequence, span.begin_us, span.duration_us, span.label});
}

std::string ChromeTraceJson(const std::vector<Timeline>& ranks) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    ranks[rank].ForEachSpan([&](const Timeline::SpanView& span) {
      events.push_back({{"name", span.label},
                        {"cat", SpanKindName(span.kind)},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", rank},
                        {"ts", span.begin_us},
                        {"dur", span.duration_us},
                        {"args", {{"sequence", span.sequence}}}});
    });
  }
  const nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  // Labels are the program's own strings; replace anything that is not
  // UTF-8 rather than fail the dump.
  return trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace inferno
