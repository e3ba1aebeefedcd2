#include "bench/bench_runner.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>

namespace inferno {
namespace {

Result<BenchOp> ParseBenchOp(const std::string& name) {
  for (const BenchOp op : kAllBenchOps) {
    if (name == BenchOpName(op)) return op;
  }
  return Error::InvalidArgument("--ops: unknown op '" + name +
                                "' (known: all_reduce, all_gather, broadcast, ping_pong)");
}

// Runs `op` once on this rank. `result` is set to the buffer to check, or left
// empty when this rank takes no part (ping-pong beyond rank 1); sizes are at
// least 4 bytes, so a participating rank's result is never empty. Returns the
// time to report for the iteration in `elapsed_us`.
Status RunOnce(CollectiveBenchBackend& backend, BenchOp op, std::vector<float>& data,
               std::vector<float>& output, std::span<const float>& result, double& elapsed_us) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Status status;
  result = {};
  switch (op) {
    case BenchOp::kAllReduce:
      status = backend.AllReduceSum(data);
      result = data;
      break;
    case BenchOp::kAllGather:
      status = backend.AllGather(data, output);
      result = output;
      break;
    case BenchOp::kBroadcast:
      status = backend.BroadcastFromRank0(data);
      result = data;
      break;
    case BenchOp::kPingPong:
      // Rank 0 sends and waits for the echo; rank 1 echoes what it got.
      output.resize(data.size());
      if (backend.rank() == 0) {
        status = backend.Send(1, data);
        if (status) status = backend.Recv(1, output);
        result = output;
      } else if (backend.rank() == 1) {
        status = backend.Recv(0, output);
        if (status) status = backend.Send(0, output);
        result = output;
      }
      break;
  }
  const std::chrono::duration<double, std::micro> elapsed = Clock::now() - start;
  elapsed_us = elapsed.count();
  if (op == BenchOp::kPingPong) elapsed_us = backend.rank() == 0 ? elapsed_us / 2 : 0.0;
  return status;
}

Status BenchOne(CollectiveBenchBackend& backend, BenchOp op, size_t bytes, int timed_override,
                std::FILE* out) {
  const std::string what = std::string(BenchOpName(op)) + " of " + std::to_string(bytes) + " bytes";
  const BenchIterations iterations = IterationsFor(bytes, timed_override);
  std::vector<float> data(bytes / sizeof(float));  // (bytes / 4)
  std::vector<float> output;  // all_gather: (world_size × bytes / 4); ping-pong: (bytes / 4)
  if (op == BenchOp::kAllGather) output.resize(data.size() * backend.world_size());
  std::vector<double> iteration_us(iterations.timed);
  for (int i = 0; i < iterations.warmup + iterations.timed; ++i) {
    FillInput(op, backend.rank(), data);
    if (auto barrier = backend.Barrier(); !barrier) {
      return barrier.error().Prefixed("barrier before " + what + ": ");
    }
    std::span<const float> result;
    double elapsed_us = 0;
    if (auto ran = RunOnce(backend, op, data, output, result, elapsed_us); !ran) {
      return ran.error().Prefixed(what + ": ");
    }
    if (!result.empty()) {
      if (auto checked = CheckResult(op, backend.rank(), backend.world_size(), result); !checked) {
        return checked.error();
      }
    }
    if (i >= iterations.warmup) iteration_us[i - iterations.warmup] = elapsed_us;
  }
  if (auto max = backend.MaxAcrossRanks(iteration_us); !max) {
    return max.error().Prefixed("collecting the times of " + what + ": ");
  }
  if (backend.rank() == 0) {
    std::fprintf(out, "%s\n", FormatBenchLine(op, bytes, backend.world_size(), iteration_us).c_str());
    std::fflush(out);
  }
  return {};
}

}  // namespace

std::vector<FlagSpec> BenchFlagSpecs() {
  return {{"ops", "LIST", "comma list of all_reduce,all_gather,broadcast,ping_pong (default: all)"},
          {"sizes", "LIST", "comma list of byte counts, K/M suffixes allowed (default: 4 B .. 64 MiB)"},
          {"iters", "N", "timed iterations per size (default: by size, 5 .. 200)"}};
}

Result<BenchConfig> ReadBenchConfig(const CommandLine& flags) {
  BenchConfig config;
  if (const std::optional<std::string> sizes_text = flags.Last("sizes")) {
    auto sizes = ParseBenchSizes(*sizes_text);
    if (!sizes) return sizes.error();
    config.sizes = *std::move(sizes);
  }
  if (const std::optional<std::string> ops_text = flags.Last("ops")) {
    config.ops.clear();
    std::stringstream stream(*ops_text);
    for (std::string name; std::getline(stream, name, ',');) {
      auto op = ParseBenchOp(name);
      if (!op) return op.error();
      config.ops.push_back(*op);
    }
    if (config.ops.empty()) return Error::InvalidArgument("--ops: empty list");
  }
  Result<int64_t> iters = flags.Int("iters", 0, 1, 1000000);
  if (!iters) return iters.error();
  config.timed_iterations = static_cast<int>(*iters);
  return config;
}

Status RunCollectiveBench(CollectiveBenchBackend& backend, const BenchConfig& config, std::FILE* out) {
  for (const BenchOp op : config.ops) {
    if (op == BenchOp::kPingPong && backend.world_size() < 2) continue;
    for (const size_t bytes : config.sizes) {
      if (auto done = BenchOne(backend, op, bytes, config.timed_iterations, out); !done) {
        return done;
      }
    }
  }
  return {};
}

int RunCollectiveBenchMain(const char* program, CollectiveBenchBackend& backend, const BenchConfig& config) {
  if (auto done = RunCollectiveBench(backend, config, stdout); !done) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program, backend.rank(), done.error().ToString().c_str());
    return 1;
  }
  return 0;
}

Result<int> LaunchEnvironmentInt(const char* name) {
  const char* value = std::getenv(name);
  char* end = nullptr;
  const long parsed = value == nullptr ? -1 : std::strtol(value, &end, 10);
  if (value == nullptr || *value == '\0' || *end != '\0' || parsed < 0 || parsed > 1 << 20) {
    return Error::InvalidArgument(std::string(name) + ": expected a non-negative integer, got '" +
                                  (value == nullptr ? "<unset>" : value) + "' (run under launch)");
  }
  return static_cast<int>(parsed);
}

std::optional<int> ParseStoreDriverArgs(const char* program, int argc, const char* const* argv,
                                        StoreDriverArgs& args) {
  CommandSpec spec{program, "--store DIR [flags]  (run as launch -n N -- " + std::string(program) + " ...)",
                   "Runs the collective benchmark protocol; prints one line per op and size on rank 0.",
                   BenchFlagSpecs()};
  spec.flags.push_back({"store", "DIR", "an empty directory all ranks share, where they meet (required)"});
  Result<CommandLine> flags = CommandLine::Parse(argc, argv, spec);
  if (flags && flags->help_requested()) {
    std::fputs(Usage(spec).c_str(), stdout);
    return 0;
  }
  Result<BenchConfig> config = flags ? ReadBenchConfig(*flags) : Result<BenchConfig>(flags.error());
  if (!config) {
    std::fprintf(stderr, "%s: %s\n", program, config.error().message.c_str());
    return 2;
  }
  args.store_dir = flags->Last("store").value_or("");
  if (args.store_dir.empty()) {
    std::fprintf(stderr, "%s: --store: missing; give an empty directory all ranks share\n", program);
    return 2;
  }
  auto rank = LaunchEnvironmentInt("RANK");
  auto world_size = LaunchEnvironmentInt("WORLD_SIZE");
  if (!rank || !world_size) {
    std::fprintf(stderr, "%s: %s\n", program, (!rank ? rank : world_size).error().message.c_str());
    return 2;
  }
  args.config = std::move(*config);
  args.rank = *rank;
  args.world_size = *world_size;
  return std::nullopt;
}

}  // namespace inferno
