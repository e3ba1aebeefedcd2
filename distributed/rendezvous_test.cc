#include "distributed/rendezvous.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/routed/transport.h"
#include "distributed/testing/secret_filled_with.h"
#include "distributed/zmq/rendezvous_channel.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

// A getenv over a fixed map.
std::function<const char*(const char*)> FakeEnvironment(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

// Asks for a job without a secret, as tests that start ranks by hand may.
const std::pair<const std::string, std::string> kInsecure{"INFERNO_INSECURE", "1"};

TEST(ReadRendezvousConfig, NoVariablesMeansOneRank) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->rank, 0);
  EXPECT_EQ(config->world_size, 1);
  EXPECT_EQ(config->op_timeout, RendezvousOptions().op_timeout);
}

TEST(ReadRendezvousConfig, ReadsTorchrunNames) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"RANK", "2"},
                                                                          {"WORLD_SIZE", "4"},
                                                                          {"MASTER_ADDR", "10.0.0.1"},
                                                                          {"MASTER_PORT", "29500"},
                                                                          kInsecure}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->rank, 2);
  EXPECT_EQ(config->world_size, 4);
  EXPECT_EQ(config->master_addr, "10.0.0.1");
  EXPECT_EQ(config->master_port, 29500);
}

TEST(ReadRendezvousConfig, AStandbyRankHasNoRankAndCannotJoin) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_STANDBY", "1"},
                                                                          {"INFERNO_STANDBY_RANKS", "2"},
                                                                          {"WORLD_SIZE", "3"},
                                                                          {"MASTER_ADDR", "10.0.0.1"},
                                                                          {"MASTER_PORT", "29500"},
                                                                          kInsecure}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->standby, 1);
  EXPECT_EQ(config->standby_ranks, 2);
  EXPECT_EQ(config->rank, -1);
  EXPECT_EQ(config->world_size, 3);
  Result<ProcessGroup> joined = Join(*config);
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(joined.error().message.find("standby rank 1"), std::string::npos) << joined.error().message;
  Result<RendezvousConfig> both = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_STANDBY", "0"},
                                                                        {"RANK", "1"},
                                                                        {"WORLD_SIZE", "3"},
                                                                        {"MASTER_ADDR", "h"},
                                                                        {"MASTER_PORT", "1"}}));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("both RANK and INFERNO_STANDBY are set"), std::string::npos);
}

TEST(ReadRendezvousConfig, AReplacementStartedLaterNeedsNoWorldSizeButTheSecret) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment(
      {{"INFERNO_STANDBY", "7"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, kInsecure}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->standby, 7);
  EXPECT_EQ(config->rank, -1);
  EXPECT_EQ(config->master_port, 29500);
  Result<RendezvousConfig> unsecured = ReadRendezvousConfig(
      FakeEnvironment({{"INFERNO_STANDBY", "7"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}));
  ASSERT_FALSE(unsecured.ok());
  EXPECT_NE(unsecured.error().message.find("INFERNO_JOB_SECRET"), std::string::npos)
      << unsecured.error().message;
}

TEST(ReadRendezvousConfig, ReadsOpenMpiAndSlurmNames) {
  Result<RendezvousConfig> ompi = ReadRendezvousConfig(FakeEnvironment({{"OMPI_COMM_WORLD_RANK", "1"},
                                                                        {"OMPI_COMM_WORLD_SIZE", "3"},
                                                                        {"MASTER_ADDR", "h"},
                                                                        {"MASTER_PORT", "1"},
                                                                        kInsecure}));
  ASSERT_TRUE(ompi.ok()) << ompi.error().ToString();
  EXPECT_EQ(ompi->rank, 1);
  EXPECT_EQ(ompi->world_size, 3);
  Result<RendezvousConfig> slurm = ReadRendezvousConfig(FakeEnvironment({{"SLURM_PROCID", "4"},
                                                                         {"SLURM_NTASKS", "5"},
                                                                         {"SLURM_STEP_ID", "0"},
                                                                         {"MASTER_ADDR", "h"},
                                                                         {"MASTER_PORT", "1"},
                                                                         kInsecure}));
  ASSERT_TRUE(slurm.ok()) << slurm.error().ToString();
  EXPECT_EQ(slurm->rank, 4);
  EXPECT_EQ(slurm->world_size, 5);
}

TEST(ReadRendezvousConfig, SlurmBatchScriptsOwnShellIsOneRank) {
  // As sbatch -n 2 sets them for the script itself: no SLURM_STEP_ID.
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n1"}}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->rank, 0);
  EXPECT_EQ(config->world_size, 1);
}

TEST(ReadRendezvousConfig, OpenMpiAndSlurmFindRankZeroWithoutMasterVariables) {
  Result<RendezvousConfig> ompi =
      ReadRendezvousConfig(FakeEnvironment({{"OMPI_COMM_WORLD_RANK", "1"},
                                            {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"OMPI_MCA_orte_hnp_uri", "1734148096.0;tcp://192.0.2.2:36717"},
                                            {"OMPI_MCA_ess_base_jobid", "1734148097"},
                                            kInsecure}));
  ASSERT_TRUE(ompi.ok()) << ompi.error().ToString();
  EXPECT_EQ(ompi->master_addr, "192.0.2.2");
  EXPECT_EQ(ompi->master_port, 28097);
  EXPECT_FALSE(ompi->master_source.empty());
  std::map<std::string, std::string> slurm = {
      {"SLURM_PROCID", "0"},  {"SLURM_NTASKS", "2"},  {"SLURM_JOB_NODELIST", "n[7-8]"},
      {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "0"}, kInsecure};
  Result<RendezvousConfig> from_slurm = ReadRendezvousConfig(FakeEnvironment(slurm));
  ASSERT_TRUE(from_slurm.ok()) << from_slurm.error().ToString();
  EXPECT_EQ(from_slurm->master_addr, "n7");
  EXPECT_EQ(from_slurm->master_port, 20042);
  // Each of MASTER_ADDR and MASTER_PORT the user sets wins.
  slurm["MASTER_PORT"] = "29500";
  from_slurm = ReadRendezvousConfig(FakeEnvironment(slurm));
  ASSERT_TRUE(from_slurm.ok()) << from_slurm.error().ToString();
  EXPECT_EQ(from_slurm->master_addr, "n7");
  EXPECT_EQ(from_slurm->master_port, 29500);
  slurm["MASTER_ADDR"] = "head";
  from_slurm = ReadRendezvousConfig(FakeEnvironment(slurm));
  ASSERT_TRUE(from_slurm.ok()) << from_slurm.error().ToString();
  EXPECT_EQ(from_slurm->master_addr, "head");
  EXPECT_TRUE(from_slurm->master_source.empty());
  // Torchrun's names carry no launcher to ask.
  Result<RendezvousConfig> torchrun = ReadRendezvousConfig(FakeEnvironment(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_JOB_ID", "1"}, kInsecure}));
  ASSERT_FALSE(torchrun.ok());
  EXPECT_NE(torchrun.error().message.find("needs MASTER_ADDR and MASTER_PORT"), std::string::npos);
}

TEST(ReadRendezvousConfig, SlurmWithoutItsNodeListNamesIt) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"SLURM_PROCID", "1"},
                                                                          {"SLURM_NTASKS", "2"},
                                                                          {"SLURM_STEP_ID", "0"},
                                                                          {"SLURM_JOB_ID", "42"},
                                                                          kInsecure}));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("SLURM_JOB_NODELIST"), std::string::npos) << config.error().message;
}

TEST(Join, RankZeroAwayFromTheLaunchersHostSaysWhereTheAddressCameFrom) {
  RendezvousConfig config;
  config.rank = 0;
  config.world_size = 2;
  config.master_addr = "192.0.2.254";  // TEST-NET-1: not an address of this host
  config.master_port = 0;
  config.master_source = "mpirun's host (OMPI_MCA_orte_hnp_uri)";
  RendezvousOptions options;
  options.timeout = milliseconds(2000);
  Result<ProcessGroup> group = Join(config, options);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().message.find("cannot listen on 192.0.2.254"), std::string::npos)
      << group.error().message;
  EXPECT_NE(group.error().message.find(
                "is mpirun's host (OMPI_MCA_orte_hnp_uri); export MASTER_ADDR and MASTER_PORT"),
            std::string::npos)
      << group.error().message;
}

TEST(ReadRendezvousConfig, TimeoutVariablesOverrideOptions) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_TIMEOUT_MS", "250"}}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->op_timeout, milliseconds(250));
  EXPECT_FALSE(config->rendezvous_timeout.has_value());
  config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_RENDEZVOUS_TIMEOUT_MS", "1500"}}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->rendezvous_timeout, milliseconds(1500));
  config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_RENDEZVOUS_TIMEOUT_MS", "0"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "INFERNO_RENDEZVOUS_TIMEOUT_MS='0' is not an integer in [1, 1073741824]");
}

TEST(ReadRendezvousConfig, ReadsTheTransport) {
  for (TransportChoice choice : {TransportChoice::kAuto, TransportChoice::kZmq, TransportChoice::kShm}) {
    Result<RendezvousConfig> config =
        ReadRendezvousConfig(FakeEnvironment({{"INFERNO_TRANSPORT", TransportChoiceName(choice)}}));
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    EXPECT_EQ(config->transport, choice) << TransportChoiceName(choice);
  }
  Result<RendezvousConfig> unset = ReadRendezvousConfig(FakeEnvironment({}));
  ASSERT_TRUE(unset.ok()) << unset.error().ToString();
  EXPECT_FALSE(unset->transport.has_value());
  Result<RendezvousConfig> other = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_TRANSPORT", "rdma"}}));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message, "INFERNO_TRANSPORT: expected auto, zmq, shm or tcp, got 'rdma'");
}

TEST(ReadRendezvousConfig, RankOutsideWorldNamesVariableAndValue) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(
      FakeEnvironment({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(config.error().message, "RANK='4' is not an integer in [0, 3]");
}

TEST(ReadRendezvousConfig, NonNumericPortIsInvalid) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(
      FakeEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "http"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "MASTER_PORT='http' is not an integer in [0, 65535]");
}

TEST(ReadRendezvousConfig, SeveralRanksNeedAMaster) {
  Result<RendezvousConfig> config =
      ReadRendezvousConfig(FakeEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "a world of 2 ranks needs MASTER_ADDR and MASTER_PORT");
}

TEST(ReadRendezvousConfig, RankWithoutWorldSizeIsInvalid) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"RANK", "0"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "RANK is set but WORLD_SIZE is not");
}

TEST(JoinFromEnvironment, WithNoVariablesGivesOneRankGroup) {
  for (const char* name : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "SLURM_PROCID", "SLURM_NTASKS"}) {
    unsetenv(name);
  }
  Result<ProcessGroup> group = JoinFromEnvironment();
  ASSERT_TRUE(group.ok()) << group.error().ToString();
  EXPECT_EQ(group->world_size(), 1);
  EXPECT_TRUE(group->is_leader());
  std::vector<float> data = {3.0f};
  ASSERT_TRUE(group->all_reduce(data, ReduceKind::kSum).ok());
  EXPECT_EQ(data[0], 3.0f);
}

// Runs `world` ranks as threads through Join; rank 0 picks the port. Ranks in
// `absent` never join. Returns each joining rank's result of `body`, or its
// join error.
template <typename Body>
std::vector<std::string> JoinAsThreads(
    int world, RendezvousOptions options, Body body, std::vector<int> absent = {},
    std::function<void(int rank, RendezvousConfig& config)> configure = nullptr) {
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::vector<std::string> results(world, "absent");
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    if (std::find(absent.begin(), absent.end(), rank) != absent.end()) continue;
    threads.emplace_back([&, rank] {
      RendezvousOptions mine = options;
      RendezvousConfig config;
      config.rank = rank;
      config.world_size = world;
      config.op_timeout = milliseconds(10000);
      if (configure) configure(rank, config);
      if (rank == 0) {
        mine.on_master_listening = [&](int bound) { port_promise.set_value(bound); };
      } else {
        if (port.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
          results[rank] = "rank 0 never listened";
          return;
        }
        config.master_port = port.get();
      }
      Result<ProcessGroup> group = Join(config, mine);
      results[rank] = group ? body(*group) : group.error().ToString();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

std::string SumOfRanks(ProcessGroup& group) {
  std::vector<float> data(3, static_cast<float>(group.rank()));
  Status status = group.all_reduce(data, ReduceKind::kSum);
  if (!status) return status.error().ToString();
  const float expected = static_cast<float>(group.world_size() * (group.world_size() - 1) / 2);
  return data == std::vector<float>(3, expected) ? "ok" : "wrong sum";
}

// The group's transport: "zmq" alone, or "routed" and which peers it reaches
// over shared memory.
std::string Routes(ProcessGroup& group) {
  if (dynamic_cast<ZmqTransport*>(group.transport().get()) != nullptr) return "zmq";
  auto* routed = dynamic_cast<RoutedTransport*>(group.transport().get());
  if (routed == nullptr) return "other";
  std::string routes = "routed, local:";
  for (int peer = 0; peer < group.world_size(); ++peer) {
    if (routed->IsLocal(peer)) routes += " " + std::to_string(peer);
  }
  return routes;
}

TEST(Join, RanksAsThreadsFormAGroupOverIpc) {
  RendezvousOptions options;
  options.transport = TransportChoice::kZmq;
  const auto results = JoinAsThreads(4, options, [](ProcessGroup& group) {
    return Routes(group) == "zmq" ? SumOfRanks(group) : Routes(group);
  });
  EXPECT_EQ(results, std::vector<std::string>(4, "ok"));
}

TEST(Join, RanksAsThreadsFormAGroupOverTcp) {
  RendezvousOptions options;
  options.transport = TransportChoice::kZmq;
  options.prefer_ipc_on_same_host = false;
  const auto results = JoinAsThreads(3, options, SumOfRanks);
  EXPECT_EQ(results, std::vector<std::string>(3, "ok"));
}

TEST(Join, RanksAsThreadsFormAGroupOverSharedMemory) {
  RendezvousOptions options;
  options.transport = TransportChoice::kShm;
  const auto results = JoinAsThreads(3, options, [](ProcessGroup& group) {
    const std::string want = group.rank() == 0   ? "routed, local: 1 2"
                             : group.rank() == 1 ? "routed, local: 0 2"
                                                 : "routed, local: 0 1";
    return Routes(group) == want ? SumOfRanks(group) : Routes(group);
  });
  EXPECT_EQ(results, std::vector<std::string>(3, "ok"));
}

// By default, ranks on one host (here: threads of one process) use shared
// memory between each other.
TEST(Join, AutoUsesSharedMemoryBetweenRanksOnThisHost) {
  const auto results = JoinAsThreads(2, RendezvousOptions{}, [](ProcessGroup& group) {
    const std::string want = "routed, local: " + std::to_string(1 - group.rank());
    return Routes(group) == want ? SumOfRanks(group) : Routes(group);
  });
  EXPECT_EQ(results, std::vector<std::string>(2, "ok"));
}

// A rank that uses ZeroMQ only offers no inbox: its peers reach it over
// ZeroMQ and each other over shared memory.
TEST(Join, RankWithoutSharedMemoryIsReachedOverZeroMq) {
  const auto results = JoinAsThreads(
      3, RendezvousOptions{},
      [](ProcessGroup& group) {
        const std::string want = group.rank() == 0   ? "routed, local: 1"
                                 : group.rank() == 1 ? "routed, local: 0"
                                                     : "zmq";
        return Routes(group) == want ? SumOfRanks(group) : Routes(group);
      },
      {},
      [](int rank, RendezvousConfig& config) {
        if (rank == 2) config.transport = TransportChoice::kZmq;
      });
  EXPECT_EQ(results, std::vector<std::string>(3, "ok"));
}

TEST(Join, MissingRankIsTimeoutListingIt) {
  RendezvousOptions options;
  options.timeout = milliseconds(500);
  const auto results =
      JoinAsThreads(4, options, [](ProcessGroup&) { return std::string("joined"); }, /*absent=*/{2, 3});
  EXPECT_EQ(results[0].rfind("Timeout: rendezvous at 127.0.0.1:", 0), 0u) << results[0];
  EXPECT_NE(results[0].find("ranks 2, 3 of 4 did not arrive within 500 ms"), std::string::npos) << results[0];
  // Rank 1 arrived; rank 0 tells it why the job failed.
  EXPECT_NE(results[1].find("did not arrive"), std::string::npos) << results[1];
}

TEST(Join, RanksHoldingOneSecretFormAGroupOverIpcAndTcp) {
  for (const bool ipc : {true, false}) {
    RendezvousOptions options;
    options.prefer_ipc_on_same_host = ipc;
    const auto results = JoinAsThreads(3, options, SumOfRanks, {}, [](int, RendezvousConfig& config) {
      config.job_secret = SecretFilledWith(9);
    });
    EXPECT_EQ(results, std::vector<std::string>(3, "ok")) << (ipc ? "ipc" : "tcp");
  }
}

// Rank 2 holds another secret, or none, in a job secured by the others'.
class JoinWithAStranger : public testing::TestWithParam<std::optional<JobSecret>> {};

TEST_P(JoinWithAStranger, IsRefusedAtOnceAndListedAsMissing) {
  RendezvousOptions options;
  options.timeout = milliseconds(3000);
  const Clock::time_point started = Clock::now();
  const auto results = JoinAsThreads(
      3, options, [](ProcessGroup&) { return std::string("joined"); }, {},
      [](int rank, RendezvousConfig& config) {
        config.job_secret = rank == 2 ? GetParam() : SecretFilledWith(9);
      });
  EXPECT_NE(results[0].find("ranks 2 of 3 did not arrive"), std::string::npos) << results[0];
  EXPECT_NE(results[1].find("did not arrive"), std::string::npos) << results[1];
  EXPECT_EQ(results[2].rfind("Transport: rendezvous: rank 0 at 127.0.0.1:", 0), 0u) << results[2];
  EXPECT_NE(results[2].find("refused this rank"), std::string::npos) << results[2];
  EXPECT_NE(results[2].find("INFERNO_JOB_SECRET"), std::string::npos) << results[2];
  EXPECT_LT(Clock::now() - started, milliseconds(3000) + milliseconds(4000));
}

INSTANTIATE_TEST_SUITE_P(Secrets, JoinWithAStranger, testing::Values(SecretFilledWith(8), std::nullopt),
                         [](const testing::TestParamInfo<std::optional<JobSecret>>& info) {
                           return info.param ? "AnotherSecret" : "NoSecret";
                         });

// Rank 0 of a 2-rank job holding secret 9, joining on its own thread from
// construction; Finish() joins it and says how its Join ended.
class SecuredRankZero {
 public:
  explicit SecuredRankZero(const RendezvousOptions& options)
      : thread_([this, options] {
          RendezvousOptions mine = options;
          mine.on_master_listening = [this](int port) { port_promise_.set_value(port); };
          RendezvousConfig config;
          config.world_size = 2;
          config.op_timeout = milliseconds(10000);
          config.job_secret = SecretFilledWith(9);
          Result<ProcessGroup> group = Join(config, mine);
          result_ = group ? "joined" : group.error().ToString();
        }) {}

  // The config of its rank 1 (no secret yet), once it listens.
  RendezvousConfig RankOneConfig() {
    RendezvousConfig config;
    config.rank = 1;
    config.world_size = 2;
    config.master_port = port_promise_.get_future().get();
    config.op_timeout = milliseconds(10000);
    return config;
  }

  // "joined", or rank 0's error.
  std::string Finish() {
    thread_.join();
    return result_;
  }

 private:
  std::promise<int> port_promise_;
  std::string result_;
  std::thread thread_;  // last: it uses the members above
};

TEST(Join, StrangerRefusedBeforeTheTableArrives) {
  // Rank 2 with another secret must fail before rank 0's verdict (which comes
  // only after rank 0's timeout): the refusal is reported at once.
  RendezvousOptions options;
  options.timeout = milliseconds(20000);
  SecuredRankZero master(options);
  RendezvousConfig config = master.RankOneConfig();
  config.job_secret = SecretFilledWith(8);
  const Clock::time_point started = Clock::now();
  Result<ProcessGroup> group = Join(config, options);
  const auto took = Clock::now() - started;
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().message.find("refused this rank"), std::string::npos) << group.error().message;
  EXPECT_LT(took, milliseconds(5000));
  // Now the real rank 1 arrives and the job proceeds.
  config.job_secret = SecretFilledWith(9);
  Result<ProcessGroup> real = Join(config, options);
  const std::string master_result = master.Finish();
  ASSERT_TRUE(real.ok()) << real.error().ToString();
  EXPECT_EQ(master_result, "joined");
}

TEST(Join, SecuredRendezvousNeverReadsTheLineOfAStrangerWithoutTheSecret) {
  // The line that ended an unsecured rendezvous in 1 s (issue 16): a rank 1
  // of a world of 5, sent before the real rank 1 arrives.
  const std::string line =
      R"({"rank":1,"world_size":5,"host":"h","tcp":"tcp://127.0.0.1:1","ipc":"","fingerprint":{}})";
  RendezvousOptions options;
  options.timeout = milliseconds(20000);
  SecuredRankZero master(options);
  RendezvousConfig config = master.RankOneConfig();
  Result<std::unique_ptr<RendezvousClient>> stranger =
      RendezvousClient::Connect("127.0.0.1", config.master_port, std::nullopt);
  EXPECT_TRUE(stranger.ok()) << stranger.error().ToString();
  if (stranger.ok()) {
    EXPECT_TRUE((*stranger)->Send(line).ok());
    Result<std::string> reply = (*stranger)->Receive(Clock::now() + milliseconds(2000));
    EXPECT_FALSE(reply.ok()) << "rank 0 answered a stranger with: " << *reply;
  }
  config.job_secret = SecretFilledWith(9);
  Result<ProcessGroup> real = Join(config, options);
  const std::string master_result = master.Finish();
  ASSERT_TRUE(real.ok()) << real.error().ToString();
  EXPECT_EQ(master_result, "joined");
}

TEST(ReadRendezvousConfig, ReadsTheJobSecret) {
  Result<RendezvousConfig> config =
      ReadRendezvousConfig(FakeEnvironment({{"INFERNO_JOB_SECRET", std::string(64, 'A')}}));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  ASSERT_TRUE(config->job_secret);
  EXPECT_EQ(config->job_secret->bytes, SecretFilledWith(0xAA).bytes);
  EXPECT_FALSE(ReadRendezvousConfig(FakeEnvironment({}))->job_secret);
}

TEST(ReadRendezvousConfig, SeveralRanksWithoutSecretRefuseNamingBothWaysOut) {
  const std::map<std::string, std::string> rank1 = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment(rank1));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(
      config.error().message,
      "a job of 2 ranks needs a secret: export INFERNO_JOB_SECRET=$(job_key) on every rank (launch does "
      "it for you) or a file only you can read that holds it in INFERNO_JOB_SECRET_FILE, or set "
      "INFERNO_INSECURE=1 to let anyone who reaches a rank join");
  std::map<std::string, std::string> insecure = rank1;
  insecure.insert(kInsecure);
  config = ReadRendezvousConfig(FakeEnvironment(insecure));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_FALSE(config->job_secret);
  std::map<std::string, std::string> secured = rank1;
  secured["INFERNO_JOB_SECRET"] = std::string(64, 'A');
  config = ReadRendezvousConfig(FakeEnvironment(secured));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_TRUE(config->job_secret);
}

TEST(ReadRendezvousConfig, ReadsTheJobSecretFromAFileButNotBesideTheVariable) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                           "/rendezvous_test_secret_" + std::to_string(getpid());
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fprintf(file, "%s\n", std::string(64, 'b').c_str());
  std::fclose(file);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  std::map<std::string, std::string> rank1 = {{"RANK", "1"},
                                              {"WORLD_SIZE", "2"},
                                              {"MASTER_ADDR", "h"},
                                              {"MASTER_PORT", "1"},
                                              {"INFERNO_JOB_SECRET_FILE", path}};
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment(rank1));
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  ASSERT_TRUE(config->job_secret);
  EXPECT_EQ(config->job_secret->bytes[0], 0xbb);
  rank1["INFERNO_JOB_SECRET"] = std::string(64, 'b');
  config = ReadRendezvousConfig(FakeEnvironment(rank1));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("both INFERNO_JOB_SECRET and INFERNO_JOB_SECRET_FILE"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(ReadRendezvousConfig, InsecureIsOnlyOneAndNeverBesideASecret) {
  Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_INSECURE", "yes"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "INFERNO_INSECURE='yes': set it to 1 to run a job without a secret, or unset it");
  config = ReadRendezvousConfig(FakeEnvironment({kInsecure, {"INFERNO_JOB_SECRET", std::string(64, 'A')}}));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "both INFERNO_JOB_SECRET and INFERNO_INSECURE=1 are set: unset one");
}

TEST(ReadRendezvousConfig, MalformedJobSecretNamesTheVariableNotTheValue) {
  for (const std::string& bad : {std::string(""), std::string("s3cret"), std::string(64, 'z')}) {
    Result<RendezvousConfig> config = ReadRendezvousConfig(FakeEnvironment({{"INFERNO_JOB_SECRET", bad}}));
    ASSERT_FALSE(config.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(config.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_EQ(config.error().message.rfind("INFERNO_JOB_SECRET: ", 0), 0u) << config.error().message;
    if (!bad.empty()) {
      EXPECT_EQ(config.error().message.find(bad), std::string::npos);
    }
  }
}

TEST(Join, PortInUseNamesAddressAndPort) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);

  RendezvousConfig config;
  config.rank = 0;
  config.world_size = 2;
  config.master_port = port;
  Result<ProcessGroup> group = Join(config);
  close(fd);
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().kind, ErrorKind::kTransport);
  EXPECT_NE(group.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << group.error().message;
}

TEST(Join, RankOfAnotherWorldSizeIsRefused) {
  std::promise<int> port_promise;
  std::string results[2];
  std::thread master([&] {
    RendezvousOptions options;
    options.timeout = milliseconds(5000);
    options.on_master_listening = [&](int port) { port_promise.set_value(port); };
    RendezvousConfig config;
    config.world_size = 2;
    Result<ProcessGroup> group = Join(config, options);
    results[0] = group ? "joined" : group.error().ToString();
  });
  const int port = port_promise.get_future().get();
  RendezvousConfig config;
  config.rank = 1;
  config.world_size = 3;
  config.master_port = port;
  Result<ProcessGroup> group = Join(config);
  results[1] = group ? "joined" : group.error().ToString();
  master.join();
  EXPECT_NE(results[0].find("rank 1 has WORLD_SIZE 3, rank 0 has 2"), std::string::npos) << results[0];
  EXPECT_NE(results[1].find("refused rank 1"), std::string::npos) << results[1];
}

TEST(Join, RanksWithDifferentFingerprintsAllFailNamingBothRanksAndTheEntry) {
  constexpr int kWorld = 3;
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::string results[kWorld];
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      RendezvousOptions options;
      options.timeout = milliseconds(10000);
      options.fingerprint = {{"model", rank == 2 ? "b" : "a"}, {"sampling", "greedy"}};
      RendezvousConfig config;
      config.rank = rank;
      config.world_size = kWorld;
      if (rank == 0) {
        options.on_master_listening = [&](int bound) { port_promise.set_value(bound); };
      } else {
        config.master_port = port.get();
      }
      Result<ProcessGroup> group = Join(config, options);
      results[rank] = group ? "joined" : group.error().ToString();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_NE(results[rank].find("InvalidArgument: "), std::string::npos) << results[rank];
    EXPECT_NE(
        results[rank].find("rank 2 and rank 0 run different things: model is 'b' on rank 2, 'a' on rank 0"),
        std::string::npos)
        << "rank " << rank << ": " << results[rank];
  }
}

}  // namespace
}  // namespace inferno
