#include "distributed/host_all_reduce.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"
#include "distributed/run_ranks.h"

namespace inferno {
namespace {

// Each rank's sum of {rank, 1, 0.1 * rank} over 4 in-process ranks whose
// host keys are `keys`, and whether it ran in two levels.
std::vector<std::pair<std::vector<float>, bool>> SumWithKeys(const std::vector<std::string>& keys) {
  auto world = std::make_shared<InProcessWorld>(4, std::chrono::seconds(30));
  std::vector<std::shared_ptr<Transport>> transports;
  for (int rank = 0; rank < 4; ++rank) transports.push_back(world->transport(rank));
  return RunRanks(transports, [&](ProcessGroup& group) {
    Result<HostAllReduce> reducer = HostAllReduce::Make(group, keys[static_cast<size_t>(group.rank())]);
    EXPECT_TRUE(reducer.ok()) << reducer.error().ToString();
    std::vector<float> data = {static_cast<float>(group.rank()), 1.0f,
                               0.1f * static_cast<float>(group.rank())};
    for (int round = 0; round < 3; ++round) {  // the groups are reused
      std::vector<float> copy = data;
      EXPECT_TRUE(reducer->Sum(copy).ok());
      if (round == 2) data = copy;
    }
    return std::pair<std::vector<float>, bool>(data, reducer->two_levels());
  });
}

TEST(HostAllReduce, TwoHostsOfTwoRanksSumInTwoLevelsToTheSameBitsEverywhere) {
  // Hosts interleaved: ranks 0 and 2 on one, 1 and 3 on the other.
  const auto results = SumWithKeys({"a", "b", "a", "b"});
  for (const auto& [sum, two_levels] : results) {
    EXPECT_TRUE(two_levels);
    EXPECT_EQ(sum, results[0].first);
  }
  EXPECT_FLOAT_EQ(results[0].first[0], 6.0f);
  EXPECT_FLOAT_EQ(results[0].first[1], 4.0f);
  EXPECT_NEAR(results[0].first[2], 0.6f, 1e-6f);
}

TEST(HostAllReduce, OneHostOrOneRankPerHostIsThePlainAllReduce) {
  for (const std::vector<std::string>& keys :
       {std::vector<std::string>{"a", "a", "a", "a"}, std::vector<std::string>{"a", "b", "c", "d"}}) {
    const auto results = SumWithKeys(keys);
    for (const auto& [sum, two_levels] : results) {
      EXPECT_FALSE(two_levels);
      EXPECT_FLOAT_EQ(sum[1], 4.0f);
    }
  }
}

TEST(HostAllReduce, HostKeyIsStableAndNamesTheNetworkNamespace) {
  EXPECT_EQ(HostKey(), HostKey());
  EXPECT_NE(HostKey().find("net:["), std::string::npos) << HostKey();
}

}  // namespace
}  // namespace inferno
