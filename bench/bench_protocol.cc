#include "bench/bench_protocol.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <glog/logging.h>

namespace inferno {
namespace {

constexpr size_t kTrafficPerSize = size_t{256} << 20;
// Ranks contribute to all_gather blocks as rank + kRankStride × (i % 13), which
// identifies the rank in every element and stays exact in float32.
constexpr int kRankStride = 4096;

float ExpectedValue(BenchOp op, int world_size, size_t index, size_t block_length) {
  switch (op) {
    case BenchOp::kAllReduce:
      // Σ_r (r + 1 + i % 5) over r in [0, world_size).
      return static_cast<float>(world_size * (world_size + 1) / 2 + world_size * static_cast<int>(index % 5));
    case BenchOp::kAllGather: {
      const size_t rank = index / block_length;
      return static_cast<float>(rank + kRankStride * ((index % block_length) % 13));
    }
    case BenchOp::kBroadcast:
    case BenchOp::kPingPong:
      return static_cast<float>(1 + index % 11);
  }
  LOG(FATAL) << "unknown BenchOp " << static_cast<int>(op);
}

}  // namespace

const char* BenchOpName(BenchOp op) {
  switch (op) {
    case BenchOp::kAllReduce:
      return "all_reduce";
    case BenchOp::kAllGather:
      return "all_gather";
    case BenchOp::kBroadcast:
      return "broadcast";
    case BenchOp::kPingPong:
      return "ping_pong";
  }
  LOG(FATAL) << "unknown BenchOp " << static_cast<int>(op);
}

double BusBandwidthFactor(BenchOp op, int world_size) {
  switch (op) {
    case BenchOp::kAllReduce:
      return 2.0 * (world_size - 1) / world_size;
    case BenchOp::kAllGather:
      return world_size - 1;
    case BenchOp::kBroadcast:
    case BenchOp::kPingPong:
      return 1.0;
  }
  LOG(FATAL) << "unknown BenchOp " << static_cast<int>(op);
}

std::vector<size_t> DefaultBenchSizes() {
  std::vector<size_t> sizes;
  for (size_t bytes = 4; bytes <= (size_t{64} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

Result<std::vector<size_t>> ParseBenchSizes(const std::string& list) {
  std::vector<size_t> sizes;
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t multiplier = 1;
    std::string digits = item;
    if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M')) {
      multiplier = digits.back() == 'K' ? 1024 : 1024 * 1024;
      digits.pop_back();
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(digits.c_str(), &end, 10);
    const size_t bytes = static_cast<size_t>(value) * multiplier;
    if (digits.empty() || digits[0] == '-' || *end != '\0' || errno != 0 || bytes == 0 || bytes % 4 != 0 ||
        value > (size_t{1} << 40) / multiplier) {
      return Error::InvalidArgument("--sizes: '" + item + "' is not a positive multiple of 4 bytes");
    }
    sizes.push_back(bytes);
  }
  if (sizes.empty()) return Error::InvalidArgument("--sizes: empty list '" + list + "'");
  return sizes;
}

BenchIterations IterationsFor(size_t bytes, int timed_override) {
  BenchIterations iterations;
  iterations.timed = timed_override > 0
                         ? timed_override
                         : static_cast<int>(std::clamp<size_t>(kTrafficPerSize / bytes, 5, 200));
  iterations.warmup = std::max(2, iterations.timed / 10);
  return iterations;
}

void FillInput(BenchOp op, int rank, std::span<float> data) {
  for (size_t i = 0; i < data.size(); ++i) {
    switch (op) {
      case BenchOp::kAllReduce:
        data[i] = static_cast<float>(rank + 1 + static_cast<int>(i % 5));
        break;
      case BenchOp::kAllGather:
        data[i] = static_cast<float>(rank + kRankStride * static_cast<int>(i % 13));
        break;
      case BenchOp::kBroadcast:
      case BenchOp::kPingPong:
        data[i] = rank == 0 ? static_cast<float>(1 + i % 11) : -1.0f;
        break;
    }
  }
}

Status CheckResult(BenchOp op, int rank, int world_size, std::span<const float> result) {
  const size_t block_length =
      op == BenchOp::kAllGather ? result.size() / static_cast<size_t>(world_size) : result.size();
  for (size_t i = 0; i < result.size(); ++i) {
    const float expected = ExpectedValue(op, world_size, i, block_length);
    if (result[i] != expected) {
      char message[256];
      std::snprintf(message, sizeof(message),
                    "%s of %zu bytes on %d ranks: rank %d element %zu is %g, expected %g", BenchOpName(op),
                    block_length * sizeof(float), world_size, rank, i, static_cast<double>(result[i]),
                    static_cast<double>(expected));
      return Error::Corruption(std::string(message));
    }
  }
  return {};
}

std::string FormatBenchLine(BenchOp op, size_t bytes, int world_size, std::vector<double> iteration_us) {
  CHECK(!iteration_us.empty()) << "FormatBenchLine needs at least one timed iteration";
  std::sort(iteration_us.begin(), iteration_us.end());
  const size_t middle = iteration_us.size() / 2;
  const double median_us = iteration_us.size() % 2 == 1
                               ? iteration_us[middle]
                               : (iteration_us[middle - 1] + iteration_us[middle]) / 2;
  // bytes / (median_us × 1e-6 s) / 1e9 = bytes / median_us / 1e3.
  const double algbw = median_us > 0 ? static_cast<double>(bytes) / median_us / 1e3 : 0.0;
  char line[160];
  std::snprintf(line, sizeof(line), "%s %zu %d %.2f %.4f %.4f", BenchOpName(op), bytes, world_size, median_us,
                algbw, algbw * BusBandwidthFactor(op, world_size));
  return line;
}

}  // namespace inferno
