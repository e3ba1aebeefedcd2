#include "bench/bench_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace inferno {
namespace {

// A world of one rank: every collective is the identity. `corrupt_all_reduce`
// and `fail_barrier` inject the faults the runner must report.
class SingleRankBackend : public CollectiveBenchBackend {
 public:
  bool corrupt_all_reduce = false;
  bool fail_barrier = false;
  int barriers = 0;

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Status Barrier() override {
    ++barriers;
    if (fail_barrier) return Error::PeerLost("barrier", 1);
    return {};
  }
  Status AllReduceSum(std::span<float> data) override {
    if (corrupt_all_reduce) data.back() = -3;
    return {};
  }
  Status AllGather(std::span<const float> input, std::vector<float>& out) override {
    out.assign(input.begin(), input.end());
    return {};
  }
  Status BroadcastFromRank0(std::span<float>) override { return {}; }
  Status Send(int, std::span<const float>) override {
    return Error::InvalidArgument("no peer in a world of one");
  }
  Status Recv(int, std::vector<float>&) override {
    return Error::InvalidArgument("no peer in a world of one");
  }
  Status MaxAcrossRanks(std::span<double>) override { return {}; }
};

struct BenchRun {
  Status status;
  std::string printed;
};

BenchRun RunCapturingOutput(SingleRankBackend& backend, const BenchConfig& config) {
  std::FILE* out = std::tmpfile();
  BenchRun run{RunCollectiveBench(backend, config, out), ""};
  std::rewind(out);
  for (int c; (c = std::fgetc(out)) != EOF;) run.printed += static_cast<char>(c);
  std::fclose(out);
  return run;
}

TEST(RunCollectiveBench, PrintsOneLinePerOpAndSizeSkippingPingPongOnOneRank) {
  SingleRankBackend backend;
  BenchConfig config;
  config.sizes = {4, 64};
  config.timed_iterations = 3;
  const BenchRun run = RunCapturingOutput(backend, config);
  ASSERT_TRUE(run.status.ok()) << run.status.error().message;
  const std::string& text = run.printed;
  for (const char* prefix : {"all_reduce 4 1 ", "all_reduce 64 1 ", "all_gather 4 1 ", "all_gather 64 1 ",
                             "broadcast 4 1 ", "broadcast 64 1 "}) {
    EXPECT_NE(text.find(prefix), std::string::npos) << prefix << " missing from:\n" << text;
  }
  EXPECT_EQ(text.find("ping_pong"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);
  // 3 ops × 2 sizes × (2 warm-up + 3 timed) iterations, each opened by a barrier.
  EXPECT_EQ(backend.barriers, 3 * 2 * 5);
}

TEST(RunCollectiveBench, FailsOnWrongResult) {
  SingleRankBackend backend;
  backend.corrupt_all_reduce = true;
  BenchConfig config;
  config.ops = {BenchOp::kAllReduce};
  config.sizes = {16};
  const BenchRun run = RunCapturingOutput(backend, config);
  ASSERT_FALSE(run.status.ok());
  EXPECT_EQ(run.printed, "");
  EXPECT_EQ(run.status.error().message,
            "all_reduce of 16 bytes on 1 ranks: rank 0 element 3 is -3, expected 4");
}

TEST(RunCollectiveBench, ReportsBackendErrorsWithOpAndSize) {
  SingleRankBackend backend;
  backend.fail_barrier = true;
  BenchConfig config;
  config.ops = {BenchOp::kBroadcast};
  config.sizes = {8};
  const BenchRun run = RunCapturingOutput(backend, config);
  ASSERT_FALSE(run.status.ok());
  EXPECT_EQ(run.printed, "");
  EXPECT_EQ(run.status.error().message,
            "barrier before broadcast of 8 bytes: barrier: lost connection to rank 1");
  EXPECT_EQ(run.status.error().kind, ErrorKind::kPeerLost);
}

Result<BenchConfig> ReadConfig(std::vector<const char*> args) {
  args.insert(args.begin(), "bench");
  CommandSpec spec{"bench", "", "", BenchFlagSpecs()};
  spec.flags.push_back({"store", "DIR", "where ranks meet"});
  Result<CommandLine> flags = CommandLine::Parse(static_cast<int>(args.size()), args.data(), spec);
  if (!flags) return flags.error();
  return ReadBenchConfig(*flags);
}

TEST(ReadBenchConfig, ReadsTheCommonFlags) {
  auto config =
      ReadConfig({"--ops", "ping_pong,all_reduce", "--sizes=8,1K", "--iters", "9", "--store", "/tmp/x"});
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ops, (std::vector<BenchOp>{BenchOp::kPingPong, BenchOp::kAllReduce}));
  EXPECT_EQ(config->sizes, (std::vector<size_t>{8, 1024}));
  EXPECT_EQ(config->timed_iterations, 9);
}

TEST(ReadBenchConfig, RejectsUnknownOpsAndFlags) {
  auto config = ReadConfig({"--ops", "all_to_all"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "--ops: unknown op 'all_to_all' (known: all_reduce, all_gather, broadcast, ping_pong)");
  config = ReadConfig({"--size", "4"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "unknown flag --size");
  EXPECT_FALSE(ReadConfig({"--iters", "0"}).ok());
}

TEST(LaunchEnvironmentInt, ReadsANonNegativeIntegerAndNamesABadOne) {
  ::setenv("BENCH_RUNNER_TEST_RANK", "3", 1);
  auto rank = LaunchEnvironmentInt("BENCH_RUNNER_TEST_RANK");
  ASSERT_TRUE(rank.ok()) << rank.error().message;
  EXPECT_EQ(*rank, 3);
  ::setenv("BENCH_RUNNER_TEST_RANK", "3x", 1);
  auto bad = LaunchEnvironmentInt("BENCH_RUNNER_TEST_RANK");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "BENCH_RUNNER_TEST_RANK: expected a non-negative integer, got '3x' (run under launch)");
  ::unsetenv("BENCH_RUNNER_TEST_RANK");
  auto unset = LaunchEnvironmentInt("BENCH_RUNNER_TEST_RANK");
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.error().message.find("<unset>"), std::string::npos) << unset.error().message;
}

TEST(ParseStoreDriverArgs, ReadsStoreAndRanksOrSaysHowToExit) {
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  const char* with_store[] = {"driver", "--store", "/tmp/s", "--sizes", "4"};
  StoreDriverArgs args;
  EXPECT_EQ(ParseStoreDriverArgs("driver", 5, with_store, args), std::nullopt);
  EXPECT_EQ(args.store_dir, "/tmp/s");
  EXPECT_EQ(args.rank, 1);
  EXPECT_EQ(args.world_size, 2);
  EXPECT_EQ(args.config.sizes, std::vector<size_t>{4});
  const char* without_store[] = {"driver"};
  StoreDriverArgs missing;
  EXPECT_EQ(ParseStoreDriverArgs("driver", 1, without_store, missing), 2);
  const char* help[] = {"driver", "--help"};
  StoreDriverArgs helped;
  EXPECT_EQ(ParseStoreDriverArgs("driver", 2, help, helped), 0);
  ::unsetenv("RANK");
  StoreDriverArgs unranked;
  EXPECT_EQ(ParseStoreDriverArgs("driver", 5, with_store, unranked), 2);
  ::unsetenv("WORLD_SIZE");
}

}  // namespace
}  // namespace inferno
