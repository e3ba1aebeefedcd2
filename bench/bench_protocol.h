// The collective benchmark protocol shared by //tools:collective_bench and the
// Open MPI and Gloo yardstick drivers in tools/yardsticks/, so that all three
// measure, check and report the same way (nccl-tests conventions).
//
// Every driver prints, on rank 0, one line per op and size:
//   <op> <bytes> <world> <median_us> <algbw_GBps> <busbw_GBps>
// - op: all_reduce | all_gather | broadcast | ping_pong.
// - bytes: the per-rank buffer in bytes (float32 elements × 4): the buffer
//   reduced in place, each rank's all_gather input, the broadcast buffer, the
//   ping-pong message.
// - median_us: median over timed iterations of the iteration time, which is the
//   slowest rank's time from the barrier that opens the iteration to the end of
//   the op on that rank; for ping_pong, half of rank 0's round trip to rank 1.
// - algbw = bytes / median time, in GB/s (1 GB = 1e9 bytes).
// - busbw = algbw × 2(n−1)/n for all_reduce, × (n−1) for all_gather, × 1 for
//   broadcast and ping_pong.
// Each driver runs warm-up iterations, opens every iteration with a barrier,
// fills inputs with FillInput before each iteration and checks each result
// with CheckResult, exiting non-zero on the first wrong element.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace inferno {

enum class BenchOp { kAllReduce, kAllGather, kBroadcast, kPingPong };

inline constexpr BenchOp kAllBenchOps[] = {BenchOp::kAllReduce, BenchOp::kAllGather, BenchOp::kBroadcast,
                                           BenchOp::kPingPong};

// "all_reduce", "all_gather", "broadcast", "ping_pong".
const char* BenchOpName(BenchOp op);

// busbw / algbw for `op` on `world_size` ranks.
double BusBandwidthFactor(BenchOp op, int world_size);

// 4 B, 16 B, ..., 64 MiB (powers of 4).
std::vector<size_t> DefaultBenchSizes();

// Parses a comma list of byte counts, each a positive multiple of 4 with an
// optional K or M suffix (KiB, MiB), e.g. "4,4K,1M,16M". Errors name the flag
// value, e.g. "--sizes: '5' is not a positive multiple of 4 bytes".
Result<std::vector<size_t>> ParseBenchSizes(const std::string& list);

struct BenchIterations {
  int warmup = 0;
  int timed = 0;
};

// Fewer iterations for larger buffers: about 256 MiB of traffic per size,
// at least 5 and at most 200 timed iterations; `timed_override` > 0 fixes the
// timed count.
BenchIterations IterationsFor(size_t bytes, int timed_override);

// The input rank `rank` contributes to `op`: small integer-valued floats, so
// every ReduceKind::kSum result is exact. For broadcast, only the root's input
// matters; others are filled with a value the root never sends.
void FillInput(BenchOp op, int rank, std::span<float> data);

// Checks `result` (rank `rank`'s output of `op` over `world_size` ranks whose
// inputs came from FillInput; all_gather output is world_size × n, broadcast
// root and ping-pong peer are rank 0). Returns a one-line error naming the op,
// size, rank, first wrong index, and the expected and found values.
Status CheckResult(BenchOp op, int rank, int world_size, std::span<const float> result);

// The report line (no newline) for `iteration_us`, the per-iteration times
// (slowest rank, in microseconds) of the timed iterations. Precondition:
// iteration_us is not empty.
std::string FormatBenchLine(BenchOp op, size_t bytes, int world_size, std::vector<double> iteration_us);

}  // namespace inferno
