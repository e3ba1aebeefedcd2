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

struct RankResult {
  std::vector<float> sum;
  bool two_levels = false;
  int hosts = 0;
  // The world sizes of the groups `across` was called on, this rank's calls.
  std::vector<int> across_groups;
};

// Each rank's sum of {rank, 1, 0.1 * rank} over 4 in-process ranks whose
// host keys are `keys`, 3 times, the hosts' sums added by an `across` that
// all_reduces and adds 1000 (so that its use shows in the sum).
std::vector<RankResult> SumWithKeys(const std::vector<std::string>& keys) {
  auto world = std::make_shared<InProcessWorld>(4, std::chrono::seconds(30));
  std::vector<std::shared_ptr<Transport>> transports;
  for (int rank = 0; rank < 4; ++rank) transports.push_back(world->transport(rank));
  return RunRanks(transports, [&](ProcessGroup& group) {
    Result<HostAllReduce> reducer = HostAllReduce::Make(group, keys[static_cast<size_t>(group.rank())]);
    EXPECT_TRUE(reducer.ok()) << reducer.error().ToString();
    RankResult result;
    const CrossHostSum across = [&](ProcessGroup& hosts, std::span<float> data) {
      result.across_groups.push_back(hosts.world_size());
      Status summed = hosts.all_reduce(data, ReduceKind::kSum);
      for (float& value : data) value += 1000.0f;
      return summed;
    };
    std::vector<float> data = {static_cast<float>(group.rank()), 1.0f,
                               0.1f * static_cast<float>(group.rank())};
    for (int round = 0; round < 3; ++round) {  // the groups are reused
      std::vector<float> copy = data;
      EXPECT_TRUE(reducer->Sum(copy).ok());
      if (round == 2) {
        std::vector<float> through_across = data;
        EXPECT_TRUE(reducer->Sum(through_across, across).ok());
        for (size_t i = 0; i < copy.size(); ++i) {
          // Across hosts `across` added 1000 once, on every rank; on one host it is not used.
          EXPECT_NEAR(through_across[i] - copy[i], reducer->hosts() > 1 ? 1000.0f : 0.0f, 1e-3f);
        }
        result.sum = copy;
      }
    }
    result.two_levels = reducer->two_levels();
    result.hosts = reducer->hosts();
    return result;
  });
}

TEST(HostAllReduce, TwoHostsOfTwoRanksSumInTwoLevelsToTheSameBitsEverywhere) {
  // Hosts interleaved: ranks 0 and 2 on one, 1 and 3 on the other.
  const std::vector<RankResult> results = SumWithKeys({"a", "b", "a", "b"});
  for (size_t rank = 0; rank < results.size(); ++rank) {
    EXPECT_TRUE(results[rank].two_levels);
    EXPECT_EQ(results[rank].hosts, 2);
    EXPECT_EQ(results[rank].sum, results[0].sum);
    // Only each host's first rank (0 and 1) crosses, among the two of them.
    EXPECT_EQ(results[rank].across_groups, rank < 2 ? std::vector<int>{2} : std::vector<int>{}) << rank;
  }
  EXPECT_FLOAT_EQ(results[0].sum[0], 6.0f);
  EXPECT_FLOAT_EQ(results[0].sum[1], 4.0f);
  EXPECT_NEAR(results[0].sum[2], 0.6f, 1e-6f);
}

TEST(HostAllReduce, OneHostIsThePlainAllReduceAndNeverCrosses) {
  for (const RankResult& result : SumWithKeys({"a", "a", "a", "a"})) {
    EXPECT_FALSE(result.two_levels);
    EXPECT_EQ(result.hosts, 1);
    EXPECT_FLOAT_EQ(result.sum[1], 4.0f);
    EXPECT_TRUE(result.across_groups.empty());
  }
}

TEST(HostAllReduce, OneRankPerHostCrossesWithTheWholeGroup) {
  for (const RankResult& result : SumWithKeys({"a", "b", "c", "d"})) {
    EXPECT_FALSE(result.two_levels);
    EXPECT_EQ(result.hosts, 4);
    EXPECT_FLOAT_EQ(result.sum[1], 4.0f);
    EXPECT_EQ(result.across_groups, std::vector<int>{4});
  }
}

}  // namespace
}  // namespace inferno
