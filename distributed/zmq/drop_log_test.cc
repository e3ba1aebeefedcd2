#include "distributed/zmq/drop_log.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using std::chrono::milliseconds;

// A DropLog over a clock the test moves and a list of written lines.
struct LogUnderTest {
  DropLog::Clock::time_point now{};
  std::vector<std::string> lines;
  DropLog log{"rank 0", "dropped", "frames", [this](const std::string& line) { lines.push_back(line); },
              [this] { return now; }};
};

TEST(DropLog, AFloodFromOneSourceWritesAFewLinesASecondThenASummary) {
  LogUnderTest t;
  for (int i = 0; i < 100000; ++i) {
    t.log.Dropped("127.0.0.1:5000", "a malformed frame");
    t.now += std::chrono::microseconds(50);  // 100,000 drops in 5 s
  }
  EXPECT_EQ(t.lines.size(), 5u * DropLog::kLinesPerSecond);
  EXPECT_EQ(t.lines.front(), "rank 0 dropped a malformed frame");
  t.now += std::chrono::seconds(6);  // past the 10 s period
  t.log.Dropped("127.0.0.1:5000", "one more");
  ASSERT_GE(t.lines.size(), 5u * DropLog::kLinesPerSecond + 1);
  EXPECT_EQ(t.lines[5 * DropLog::kLinesPerSecond],
            "rank 0 dropped 100000 frames from 127.0.0.1:5000 in the last 11 s (99975 not shown)");
  EXPECT_EQ(t.lines.back(), "rank 0 dropped one more");
}

TEST(DropLog, LastDroppedIsTheTimeOfTheLatestEventWrittenOrNot) {
  LogUnderTest t;
  EXPECT_EQ(t.log.LastDropped(), DropLog::Clock::time_point{});
  for (int i = 0; i < 100; ++i) {  // past the line budget: counted, not written
    t.now += milliseconds(3);
    t.log.Dropped("127.0.0.1:5000", "a malformed frame");
  }
  EXPECT_EQ(t.log.LastDropped(), t.now);
  EXPECT_EQ(t.lines.size(), static_cast<size_t>(DropLog::kLinesPerSecond));
}

TEST(DropLog, EachSourceHasItsOwnBudget) {
  LogUnderTest t;
  for (int i = 0; i < 50; ++i) {
    t.log.Dropped("a", "x");
    t.log.Dropped("b", "y");
  }
  EXPECT_EQ(t.lines.size(), 2u * DropLog::kLinesPerSecond);
}

TEST(DropLog, ManySourcesShareTheTotalBudget) {
  LogUnderTest t;
  for (int second = 0; second < 3; ++second) {
    for (size_t i = 0; i < DropLog::kMaxSources + 1000; ++i) t.log.Dropped("port " + std::to_string(i), "x");
    t.now += std::chrono::seconds(1);
  }
  EXPECT_EQ(t.lines.size(), 3u * DropLog::kTotalLinesPerSecond);
  t.now += std::chrono::seconds(10);
  t.log.Dropped("port 0", "x");
  // A summary per tracked source that had lines suppressed (all but the
  // first kTotalLinesPerSecond, which were shown every second), one for the
  // sources past the limit, then the new line.
  EXPECT_EQ(t.lines.size(), 3u * DropLog::kTotalLinesPerSecond +
                                (DropLog::kMaxSources - DropLog::kTotalLinesPerSecond) + 1 + 1);
  EXPECT_EQ(std::count_if(t.lines.begin(), t.lines.end(),
                          [](const std::string& line) {
                            return line.find("dropped 3000 frames from other sources") != std::string::npos;
                          }),
            1);
}

TEST(DropLog, SummariesStillDueAreWrittenAtTheEnd) {
  std::vector<std::string> lines;
  {
    DropLog log("rank 2", "refused", "connections", [&](const std::string& line) { lines.push_back(line); });
    for (int i = 0; i < 20; ++i) log.Dropped("c", "z");
  }
  ASSERT_EQ(lines.size(), DropLog::kLinesPerSecond + 1u);
  EXPECT_NE(lines.back().find("rank 2 refused 20 connections from c in the last"), std::string::npos)
      << lines.back();
  EXPECT_NE(lines.back().find("(15 not shown)"), std::string::npos) << lines.back();
}

}  // namespace
}  // namespace inferno
