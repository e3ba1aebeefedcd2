// Leader-only loading: rank 0 streams each rank its shard over the group;
// every rank ends with bit-identical weights to reading the original.
#include "loader/weight_stream.h"

#include <gtest/gtest.h>

#include "distributed/testing/rank_threads.h"
#include "loader/test_models.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

struct StreamCase {
  TransportKind transport;
  int pp;
  int tp;
};

class WeightStream : public testing::TestWithParam<StreamCase> {};

TEST_P(WeightStream, EveryRankGetsBitIdenticalWeightsInBoundedChunks) {
  const StreamCase& c = GetParam();
  const std::string model = TestPath("stream_" + TransportKindName(c.transport) + std::to_string(c.pp) +
                                     std::to_string(c.tp) + ".bin");
  ASSERT_TRUE(WriteTestLlama2cModel(model, TestConfig(4, c.tp > 1)));
  LoadResult<std::unique_ptr<MappedCheckpoint>> original = MappedCheckpoint::Open(model);
  ASSERT_TRUE(original) << original.error().message;
  LoadResult<ShardPlan> plan = MakeShardPlan(**original, c.pp, c.tp, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;

  // 1000-byte chunks: every shard travels in many messages.
  std::vector<LoadResult<std::unique_ptr<Checkpoint>>> results =
      RunRanks(MakeTransports(c.transport, plan->world_size(), milliseconds(20000)), [&](ProcessGroup& group) {
        return group.is_leader() ? ServeShards(group, **original, *plan, 1000) : ReceiveShard(group);
      });
  for (int rank = 0; rank < plan->world_size(); ++rank) {
    const auto& result = results[static_cast<size_t>(rank)];
    ASSERT_TRUE(result) << "rank " << rank << ": " << result.error().message;
    EXPECT_EQ((*result)->config().num_hidden_layers, 4);
    ExpectRankWeightsMatch(**result, **original, plan->ranks[static_cast<size_t>(rank)]);
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, WeightStream,
                         testing::Values(StreamCase{TransportKind::kInProcess, 3, 1},
                                         StreamCase{TransportKind::kInProcess, 2, 2},
                                         StreamCase{TransportKind::kZmqTcp, 2, 1}),
                         [](const testing::TestParamInfo<StreamCase>& info) {
                           return TransportKindName(info.param.transport) + "_pp" + std::to_string(info.param.pp) +
                                  "_tp" + std::to_string(info.param.tp);
                         });

TEST(WeightStream, PlanForAnotherWorldFailsOnTheLeaderAndTimesOutElsewhere) {
  const std::string model = TestPath("stream_mismatch.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(model, TestConfig(3, false)));
  LoadResult<std::unique_ptr<MappedCheckpoint>> original = MappedCheckpoint::Open(model);
  ASSERT_TRUE(original);
  LoadResult<ShardPlan> plan = MakeShardPlan(**original, 3, 1, std::nullopt);
  ASSERT_TRUE(plan);
  std::vector<LoadResult<std::unique_ptr<Checkpoint>>> results =
      RunRanks(MakeTransports(TransportKind::kInProcess, 2, milliseconds(500)), [&](ProcessGroup& group) {
        return group.is_leader() ? ServeShards(group, **original, *plan) : ReceiveShard(group);
      });
  ASSERT_FALSE(results[0]);
  EXPECT_EQ(results[0].error().message,
            "leader-only loading: the plan pp=3 tp=1 has 3 ranks but the group has 2");
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().message.find("rank 1: receiving weights from rank 0: Timeout"), std::string::npos)
      << results[1].error().message;
}

}  // namespace
}  // namespace inferno
