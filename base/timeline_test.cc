#include "base/timeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace inferno {
namespace {

TEST(Timeline, TotalsAndSpansSurviveSerialization) {
  Timeline timeline(true);
  const Timeline::Clock::time_point t0 = Timeline::Clock::now();
  timeline.Add(SpanKind::kCompute, t0, t0 + std::chrono::milliseconds(3), "forward", 2);
  timeline.Add(SpanKind::kWait, t0, t0 + std::chrono::milliseconds(1), "wait", -1);
  auto copy = Timeline::Deserialize(timeline.Serialize());
  ASSERT_TRUE(copy.ok()) << copy.error().message;
  EXPECT_DOUBLE_EQ(copy->seconds(SpanKind::kCompute), 0.003);
  EXPECT_DOUBLE_EQ(copy->seconds(SpanKind::kWait), 0.001);
  EXPECT_EQ(copy->seconds(SpanKind::kSend), 0.0);
  EXPECT_EQ(ChromeTraceJson({*copy}), ChromeTraceJson({timeline}));
}

TEST(Timeline, TruncatedBytesFailToDeserialize) {
  Timeline timeline(true);
  timeline.Add(SpanKind::kSend, Timeline::Clock::now(), Timeline::Clock::now(), "send", 0);
  std::vector<std::byte> bytes = timeline.Serialize();
  bytes.pop_back();
  EXPECT_FALSE(Timeline::Deserialize(bytes).ok());
}

TEST(ChromeTraceJson, IsValidJsonWithOneTrackPerRank) {
  Timeline rank0(true), rank1(true);
  const Timeline::Clock::time_point t0 = Timeline::Clock::now();
  rank0.Add(SpanKind::kCompute, t0, t0 + std::chrono::microseconds(40), "forward", 0);
  rank1.Add(SpanKind::kRecv, t0, t0 + std::chrono::microseconds(10), "recv hidden", 0);
  rank1.Add(SpanKind::kSend, t0, t0 + std::chrono::microseconds(5), "send hidden", 0);
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson({rank0, rank1}));
  int spans = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X") {
      ++spans;
      EXPECT_TRUE(event["tid"] == 0 || event["tid"] == 1);
    }
  }
  EXPECT_EQ(spans, 3);
}

TEST(ChromeTraceJson, LabelsWithQuotesAndControlCharactersAreEscaped) {
  Timeline timeline(true);
  const Timeline::Clock::time_point t0 = Timeline::Clock::now();
  timeline.Add(SpanKind::kCompute, t0, t0, "say \"hi\"\n\\", 0);
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson({timeline}));
  EXPECT_EQ(trace["traceEvents"][1]["name"], "say \"hi\"\n\\");
}

TEST(Timeline, WithoutSpansKeepsOnlyTotals) {
  Timeline timeline(false);
  const Timeline::Clock::time_point t0 = Timeline::Clock::now();
  timeline.Add(SpanKind::kCompute, t0, t0 + std::chrono::milliseconds(2), "forward", 0);
  EXPECT_DOUBLE_EQ(timeline.seconds(SpanKind::kCompute), 0.002);
  int spans = 0;
  timeline.ForEachSpan([&](const Timeline::SpanView&) { ++spans; });
  EXPECT_EQ(spans, 0);
}

}  // namespace
}  // namespace inferno
