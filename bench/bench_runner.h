// The measurement loop of the collective benchmark protocol (see
// bench_protocol.h), written once over a small backend interface that
// //tools:collective_bench (our ProcessGroup) and the Open MPI and Gloo
// yardstick drivers each implement, so the three differ only in the library
// call being timed.
//
// Thread-safety: RunCollectiveBench drives its backend from the calling thread
// only; a backend need not be thread-safe.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "base/error.h"
#include "bench/bench_protocol.h"

namespace inferno {

// One rank's handle on the library under test. Every method is a collective
// over all ranks (except Send/Recv) and returns an Error on failure (kind
// Transport for a library's own error).
class CollectiveBenchBackend {
 public:
  virtual ~CollectiveBenchBackend() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual Status Barrier() = 0;
  // In place: data becomes the element-wise sum over ranks.
  virtual Status AllReduceSum(std::span<float> data) = 0;
  // out becomes every rank's input in rank order (world_size × input.size()).
  virtual Status AllGather(std::span<const float> input, std::vector<float>& out) = 0;
  // Rank 0's data overwrites the others'.
  virtual Status BroadcastFromRank0(std::span<float> data) = 0;
  virtual Status Send(int peer, std::span<const float> data) = 0;
  // out holds the next message from peer; its size on entry is the expected size.
  virtual Status Recv(int peer, std::vector<float>& out) = 0;
  // In place: values become the element-wise maximum over ranks.
  virtual Status MaxAcrossRanks(std::span<double> values) = 0;
};

struct BenchConfig {
  std::vector<BenchOp> ops{std::begin(kAllBenchOps), std::end(kAllBenchOps)};
  std::vector<size_t> sizes = DefaultBenchSizes();
  int timed_iterations = 0;  // 0: IterationsFor's default per size
};

// The flags every driver accepts, for its CommandSpec: --ops LIST,
// --sizes LIST, --iters N.
std::vector<FlagSpec> BenchFlagSpecs();

// The BenchConfig of `flags` (parsed with a spec holding BenchFlagSpecs()).
// Errors are InvalidArgument, one line naming the flag and value.
Result<BenchConfig> ReadBenchConfig(const CommandLine& flags);

// Runs every op of `config` at every size on `backend`, printing one protocol
// line per op and size on rank 0 to `out`. Ping-pong runs between ranks 0 and 1
// and is skipped on one rank. Returns the first error or wrong result.
Status RunCollectiveBench(CollectiveBenchBackend& backend, const BenchConfig& config, std::FILE* out);

// A driver's RANK or WORLD_SIZE as //tools:launch sets it: a non-negative
// integer. Errors are one line naming the variable and its value.
Result<int> LaunchEnvironmentInt(const char* name);

// The command line of a driver that runs under //tools:launch and meets its
// peers through a directory all ranks share (--store DIR).
struct StoreDriverArgs {
  BenchConfig config;
  std::string store_dir;
  int rank = 0;
  int world_size = 1;
};

// Parses a store driver's flags (the common ones and --store) and RANK /
// WORLD_SIZE into `args`. Returns the exit status when `program` should stop
// now: 0 after printing --help, 2 after printing a one-line error naming the
// flag or variable; nullopt to go on.
std::optional<int> ParseStoreDriverArgs(const char* program, int argc, const char* const* argv,
                                        StoreDriverArgs& args);

// main()'s tail for a driver: runs the bench, prints an error as
// "<program>: rank R: <error>" and returns the process exit status.
int RunCollectiveBenchMain(const char* program, CollectiveBenchBackend& backend, const BenchConfig& config);

}  // namespace inferno
