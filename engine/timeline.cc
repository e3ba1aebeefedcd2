#include "engine/timeline.h"

#include <cstring>
#include <sstream>
#include <utility>

namespace inferno {
namespace {

// Writes values at increasing offsets of a buffer sized up front.
class ByteWriter {
 public:
  explicit ByteWriter(size_t size) : bytes_(size) {}
  void Put(const void* data, size_t size) {
    std::memcpy(bytes_.data() + offset_, data, size);
    offset_ += size;
  }
  template <typename T>
  void Put(const T& value) {
    Put(&value, sizeof(T));
  }
  std::vector<std::byte> Take() && { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
  size_t offset_ = 0;
};

template <typename T>
bool Take(std::span<const std::byte>& in, T& value) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(&value, in.data(), sizeof(T));
  in = in.subspan(sizeof(T));
  return true;
}

}  // namespace

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

void Timeline::Add(SpanKind kind, Clock::time_point begin, Clock::time_point end, const char* label, int sequence) {
  seconds_[static_cast<int>(kind)] += std::chrono::duration<double>(end - begin).count();
  if (!keep_spans_) return;
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  spans_.push_back({kind, sequence, duration_cast<microseconds>(begin.time_since_epoch()).count(),
                    duration_cast<microseconds>(end - begin).count(), label});
}

std::vector<std::byte> Timeline::Serialize() const {
  constexpr size_t kSpanFixedBytes = sizeof(int32_t) * 2 + sizeof(int64_t) * 2 + sizeof(uint32_t);
  size_t size = sizeof(seconds_) + sizeof(uint64_t);
  for (const Span& span : spans_) size += kSpanFixedBytes + span.label.size();
  ByteWriter writer(size);
  for (double s : seconds_) writer.Put(s);
  writer.Put(static_cast<uint64_t>(spans_.size()));
  for (const Span& span : spans_) {
    writer.Put(static_cast<int32_t>(span.kind));
    writer.Put(span.sequence);
    writer.Put(span.begin_us);
    writer.Put(span.duration_us);
    writer.Put(static_cast<uint32_t>(span.label.size()));
    writer.Put(span.label.data(), span.label.size());
  }
  return std::move(writer).Take();
}

EngineResult<Timeline> Timeline::Deserialize(std::span<const std::byte> bytes) {
  Timeline timeline(true);
  const EngineError malformed{"timeline: malformed message of " + std::to_string(bytes.size()) + " bytes"};
  for (double& s : timeline.seconds_) {
    if (!Take(bytes, s)) return malformed;
  }
  uint64_t count = 0;
  if (!Take(bytes, count)) return malformed;
  for (uint64_t i = 0; i < count; ++i) {
    Span span;
    int32_t kind = 0;
    uint32_t length = 0;
    if (!Take(bytes, kind) || !Take(bytes, span.sequence) || !Take(bytes, span.begin_us) ||
        !Take(bytes, span.duration_us) || !Take(bytes, length) || bytes.size() < length || kind < 0 ||
        kind >= kSpanKinds) {
      return malformed;
    }
    span.kind = static_cast<SpanKind>(kind);
    span.label.assign(reinterpret_cast<const char*>(bytes.data()), length);
    bytes = bytes.subspan(length);
    timeline.spans_.push_back(std::move(span));
  }
  return timeline;
}

std::string Timeline::TraceEventsJson(int rank) const {
  std::ostringstream out;
  out << R"({"name":"thread_name","ph":"M","pid":0,"tid":)" << rank << R"(,"args":{"name":"rank )" << rank
      << R"("}})";
  for (const Span& span : spans_) {
    out << ",\n" << R"({"name":")" << span.label << R"(","cat":")" << SpanKindName(span.kind)
        << R"(","ph":"X","pid":0,"tid":)" << rank << R"(,"ts":)" << span.begin_us << R"(,"dur":)"
        << span.duration_us << R"(,"args":{"sequence":)" << span.sequence << "}}";
  }
  return out.str();
}

std::string ChromeTraceJson(const std::vector<Timeline>& ranks) {
  std::string json = "{\"traceEvents\":[\n";
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    if (rank > 0) json += ",\n";
    json += ranks[rank].TraceEventsJson(static_cast<int>(rank));
  }
  json += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return json;
}

}  // namespace inferno
