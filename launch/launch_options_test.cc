#include "launch/launch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace inferno {
namespace {

// The command line's syntax, then its values, as launch's main() checks them.
Result<LaunchOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "launch");
  Result<CommandLine> flags =
      CommandLine::Parse(static_cast<int>(args.size()), args.data(), LaunchCommandSpec());
  if (!flags) return flags.error();
  return ParseLaunchOptions(*flags);
}

TEST(ParseLaunchOptions, ReadsEveryFlagAndTheCommand) {
  auto options = Parse({"-n",
                        "3",
                        "--tag-output",
                        "--insecure",
                        "--timeout",
                        "2.5",
                        "--grace=0.25",
                        "--failover",
                        "--standby",
                        "2",
                        "--nnodes",
                        "2",
                        "--node-rank=1",
                        "--master-addr",
                        "10.0.0.7",
                        "--master-port",
                        "29500",
                        "--transport",
                        "shm",
                        "--",
                        "prog",
                        "-n",
                        "9"});
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_EQ(options->ranks_per_node, 3);
  EXPECT_TRUE(options->tag_output);
  EXPECT_TRUE(options->insecure);
  EXPECT_EQ(options->timeout.count(), 2500);
  EXPECT_EQ(options->grace.count(), 250);
  EXPECT_TRUE(options->failover);
  EXPECT_EQ(options->standby, 2);
  EXPECT_EQ(options->nnodes, 2);
  EXPECT_EQ(options->node_rank, 1);
  EXPECT_EQ(options->master_addr, "10.0.0.7");
  EXPECT_EQ(options->master_port, 29500);
  EXPECT_EQ(options->world_size(), 6);
  EXPECT_EQ(options->transport, TransportChoice::kShm);
  EXPECT_EQ(options->command, (std::vector<std::string>{"prog", "-n", "9"}));
}

TEST(ParseLaunchOptions, CommandStartsAtFirstNonFlagWithoutDoubleDash) {
  auto options = Parse({"-n", "2", "echo", "--tag-output"});
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_FALSE(options->tag_output);
  EXPECT_FALSE(options->insecure);
  EXPECT_FALSE(options->transport.has_value());
  EXPECT_EQ(options->command, (std::vector<std::string>{"echo", "--tag-output"}));
  EXPECT_EQ(options->master_port, 0);
  EXPECT_EQ(options->timeout.count(), 0);
}

TEST(ParseLaunchOptions, RanksAreBoundToCoresUnlessTheTransportIsZmqOrBindSaysNone) {
  EXPECT_EQ(Parse({"-n", "2", "prog"})->binding, CpuBinding::kCore);
  EXPECT_EQ(Parse({"-n", "2", "--transport", "shm", "prog"})->binding, CpuBinding::kCore);
  EXPECT_EQ(Parse({"-n", "2", "--transport", "zmq", "prog"})->binding, CpuBinding::kNone);
  EXPECT_EQ(Parse({"-n", "2", "--transport", "zmq", "--bind", "core", "prog"})->binding, CpuBinding::kCore);
  EXPECT_EQ(Parse({"-n", "2", "--bind", "none", "prog"})->binding, CpuBinding::kNone);
}

TEST(ParseLaunchOptions, StandbyRanksNeedFailover) {
  auto options = Parse({"-n", "2", "--standby", "1", "prog"});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().message,
            "--standby: standby ranks take a lost rank's place only under --failover");
  auto negative = Parse({"-n", "2", "--failover", "--standby", "-1", "prog"});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "--standby: expected an integer in [0, 4096], got '-1'");
}

TEST(ParseLaunchOptions, JoinStartsOneStandbyRankOfTheJobAtTheAddressAndNoRanks) {
  auto options = Parse({"--join", "10.0.0.7:29500", "--standby-index", "4", "serve", "--failover"});
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_TRUE(options->join);
  EXPECT_TRUE(options->failover);
  EXPECT_EQ(options->ranks_per_node, 0);
  EXPECT_EQ(options->standby, 1);
  EXPECT_EQ(options->first_standby_index, 4);
  EXPECT_EQ(options->master_addr, "10.0.0.7");
  EXPECT_EQ(options->master_port, 29500);
  auto with_ranks = Parse({"--join", "10.0.0.7:29500", "-n", "2", "prog"});
  ASSERT_FALSE(with_ranks.ok());
  EXPECT_NE(with_ranks.error().message.find("-n"), std::string::npos) << with_ranks.error().message;
  auto no_port = Parse({"--join", "10.0.0.7", "prog"});
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.error().message.find("--join"), std::string::npos) << no_port.error().message;
  EXPECT_FALSE(Parse({"-n", "2", "--standby-index", "3", "prog"}).ok());
}

TEST(ParseLaunchOptions, HelpSkipsValidation) {
  const char* argv[] = {"launch", "--help"};
  auto flags = CommandLine::Parse(2, argv, LaunchCommandSpec());
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_TRUE(flags->help_requested());
  EXPECT_NE(Usage(LaunchCommandSpec()).find("-n, --nproc-per-node RANKS"), std::string::npos);
}

struct BadCase {
  std::vector<const char*> args;
  std::string error;
};

class ParseLaunchOptionsRejects : public testing::TestWithParam<BadCase> {};

TEST_P(ParseLaunchOptionsRejects, WithOneLineNamingFlagAndValue) {
  auto options = Parse(GetParam().args);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(options.error().message, GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    BadFlags, ParseLaunchOptionsRejects,
    testing::Values(BadCase{{"-n", "0", "prog"}, "-n: expected an integer in [1, 4096], got '0'"},
                    BadCase{{"-n", "4x", "prog"}, "-n: expected an integer in [1, 4096], got '4x'"},
                    BadCase{{"-n"}, "flag -n needs a value (RANKS)"},
                    BadCase{{"prog"}, "-n: missing; say how many ranks to start"},
                    BadCase{{"-n", "2"}, "no program given after the flags"},
                    BadCase{{"-n", "2", "--tag", "prog"}, "unknown flag --tag"},
                    BadCase{{"-n", "2", "--tag-output=1", "prog"}, "--tag-output takes no value"},
                    BadCase{{"-n", "2", "--insecure=yes", "prog"}, "--insecure takes no value"},
                    BadCase{{"-n", "2", "--timeout", "0", "prog"},
                            "--timeout: expected a positive number of seconds, got '0'"},
                    BadCase{{"-n", "2", "--grace", "-1", "prog"},
                            "--grace: expected a non-negative number of seconds, got '-1'"},
                    BadCase{{"-n", "2", "--master-port", "70000", "prog"},
                            "--master-port: expected an integer in [1, 65535], got '70000'"},
                    BadCase{{"-n", "2", "--nnodes", "2", "--node-rank", "2", "--master-port", "5", "prog"},
                            "--node-rank: 2 is not below --nnodes 2"},
                    BadCase{{"-n", "2", "--nnodes", "2", "prog"},
                            "--master-port: required when --nnodes is 2 (every node must agree on it)"},
                    BadCase{{"-n", "2", "--master-addr=", "prog"}, "--master-addr: empty address"},
                    BadCase{{"-n", "2", "--transport", "rdma", "prog"},
                            "--transport: expected auto, zmq, shm or tcp, got 'rdma'"},
                    BadCase{{"-n", "2", "--bind", "socket", "prog"},
                            "--bind: expected core or none, got 'socket'"}));

}  // namespace
}  // namespace inferno
