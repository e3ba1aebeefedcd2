#include "bench/bench_protocol.h"

#include <gtest/gtest.h>

#include <vector>

namespace inferno {
namespace {

TEST(BusBandwidthFactor, FollowsNcclTestsConventions) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(BenchOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(BenchOp::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(BenchOp::kAllGather, 4), 3.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(BenchOp::kBroadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(BenchOp::kPingPong, 2), 1.0);
}

TEST(FormatBenchLine, UsesMedianAndDecimalGigabytes) {
  // Median of {4, 1, 2, 100} is 3 us; 3000 bytes / 3 us = 1 GB/s; busbw ×1.5.
  EXPECT_EQ(FormatBenchLine(BenchOp::kAllReduce, 3000, 4, {4, 1, 2, 100}),
            "all_reduce 3000 4 3.00 1.0000 1.5000");
  EXPECT_EQ(FormatBenchLine(BenchOp::kAllGather, 4000, 3, {2}), "all_gather 4000 3 2.00 2.0000 4.0000");
}

TEST(DefaultBenchSizes, Sweeps4BytesTo64MiB) {
  const std::vector<size_t> sizes = DefaultBenchSizes();
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.front(), 4u);
  EXPECT_EQ(sizes.back(), size_t{64} << 20);
}

TEST(ParseBenchSizes, AcceptsSuffixes) {
  auto sizes = ParseBenchSizes("4,4K,1M,16M");
  ASSERT_TRUE(sizes.ok()) << sizes.error().message;
  EXPECT_EQ(*sizes, (std::vector<size_t>{4, 4096, 1 << 20, 16 << 20}));
}

TEST(ParseBenchSizes, RejectsNonMultipleOfFour) {
  auto sizes = ParseBenchSizes("4,5");
  ASSERT_FALSE(sizes.ok());
  EXPECT_EQ(sizes.error().message, "--sizes: '5' is not a positive multiple of 4 bytes");
  EXPECT_FALSE(ParseBenchSizes("0").ok());
  EXPECT_FALSE(ParseBenchSizes("-4").ok());
  EXPECT_FALSE(ParseBenchSizes("4X").ok());
  EXPECT_FALSE(ParseBenchSizes("").ok());
}

TEST(IterationsFor, BoundsTimedIterations) {
  EXPECT_EQ(IterationsFor(4, 0).timed, 200);
  EXPECT_EQ(IterationsFor(size_t{64} << 20, 0).timed, 5);
  EXPECT_EQ(IterationsFor(4, 7).timed, 7);
  EXPECT_GE(IterationsFor(4, 7).warmup, 2);
}

// Simulates each collective over `world` ranks from FillInput's inputs.
std::vector<float> Simulate(BenchOp op, int world, size_t n) {
  std::vector<float> input(n);
  std::vector<float> result;
  if (op == BenchOp::kAllGather) {
    for (int r = 0; r < world; ++r) {
      FillInput(op, r, input);
      result.insert(result.end(), input.begin(), input.end());
    }
    return result;
  }
  if (op == BenchOp::kAllReduce) {
    result.assign(n, 0.0f);
    for (int r = 0; r < world; ++r) {
      FillInput(op, r, input);
      for (size_t i = 0; i < n; ++i) result[i] += input[i];
    }
    return result;
  }
  FillInput(op, /*rank=*/0, input);  // what the root or ping-pong sender sends
  return input;
}

TEST(CheckResult, AcceptsCorrectResultsOfEveryOp) {
  for (const BenchOp op : kAllBenchOps) {
    for (const int world : {1, 2, 3, 8}) {
      const std::vector<float> result = Simulate(op, world, 37);
      EXPECT_TRUE(CheckResult(op, /*rank=*/1, world, result).ok()) << BenchOpName(op) << " " << world;
    }
  }
}

TEST(CheckResult, NamesFirstWrongElement) {
  std::vector<float> result = Simulate(BenchOp::kAllReduce, 3, 10);
  result[7] += 1;
  auto checked = CheckResult(BenchOp::kAllReduce, 2, 3, result);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().message,
            "all_reduce of 40 bytes on 3 ranks: rank 2 element 7 is 13, expected 12");
}

TEST(CheckResult, DetectsAllGatherBlocksInWrongOrder) {
  std::vector<float> result = Simulate(BenchOp::kAllGather, 2, 4);
  std::swap_ranges(result.begin(), result.begin() + 4, result.begin() + 4);
  EXPECT_FALSE(CheckResult(BenchOp::kAllGather, 0, 2, result).ok());
}

TEST(CheckResult, DetectsBroadcastThatNeverArrived) {
  std::vector<float> untouched(16);
  FillInput(BenchOp::kBroadcast, /*rank=*/1, untouched);
  EXPECT_FALSE(CheckResult(BenchOp::kBroadcast, 1, 2, untouched).ok());
}

}  // namespace
}  // namespace inferno
