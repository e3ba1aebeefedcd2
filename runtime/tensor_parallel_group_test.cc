#include "runtime/tensor_parallel_group.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"
#include "distributed/run_ranks.h"
#include "runtime/testing/small_config.h"

namespace inferno {
namespace {

std::vector<std::shared_ptr<Transport>> Transports(int world) {
  auto in_process = std::make_shared<InProcessWorld>(world, std::chrono::seconds(30));
  std::vector<std::shared_ptr<Transport>> transports;
  for (int rank = 0; rank < world; ++rank) transports.push_back(in_process->transport(rank));
  return transports;
}

TEST(TensorParallelGroup, NoneWithoutTensorParallelism) {
  Result<ShardPlan> plan = MakeShardPlan(SmallTestConfig(), 2, 1, std::nullopt);
  ASSERT_TRUE(plan.ok());
  const auto results = RunRanks(Transports(2), [&](ProcessGroup& group) {
    Result<std::optional<TensorParallelGroup>> made = MakeTensorParallelGroup(group, *plan);
    return made.ok() && !made->has_value();
  });
  EXPECT_EQ(results, (std::vector<bool>{true, true}));
}

TEST(TensorParallelGroup, SumsOverTheRanksOfItsStageOnly) {
  Result<ShardPlan> plan = MakeShardPlan(SmallTestConfig(), 2, 2, std::nullopt);
  ASSERT_TRUE(plan.ok());
  const auto results = RunRanks(Transports(4), [&](ProcessGroup& group) {
    Result<std::optional<TensorParallelGroup>> made = MakeTensorParallelGroup(group, *plan);
    EXPECT_TRUE(made.ok() && made->has_value());
    TensorParallelGroup& stage_group = **made;
    EXPECT_EQ(stage_group.rank(), plan->ranks[static_cast<size_t>(group.rank())].tp_index);
    std::vector<float> data = {static_cast<float>(group.rank()), 1.0f};
    AllReduce& all_reduce = stage_group;
    EXPECT_TRUE(all_reduce.Sum(data).ok());
    return data;
  });
  // Ranks 0 and 1 are the last stage, 2 and 3 the first.
  EXPECT_EQ(results[0], (std::vector<float>{1, 2}));
  EXPECT_EQ(results[1], (std::vector<float>{1, 2}));
  EXPECT_EQ(results[2], (std::vector<float>{5, 2}));
  EXPECT_EQ(results[3], (std::vector<float>{5, 2}));
}

TEST(TensorParallelGroup, CompressedSumsGiveEveryRankTheSameBitsNearTheF32Sum) {
  Result<ShardPlan> plan = MakeShardPlan(SmallTestConfig(), 1, 2, std::nullopt);
  ASSERT_TRUE(plan.ok());
  for (SyncDType sync : {SyncDType::kBF16, SyncDType::kQ8_0}) {
    const auto results = RunRanks(Transports(2), [&](ProcessGroup& group) {
      Result<std::optional<TensorParallelGroup>> made = MakeTensorParallelGroup(group, *plan, sync);
      EXPECT_TRUE(made.ok() && made->has_value());
      // 40 values: one whole Q8_0 block and a tail.
      std::vector<float> data(40);
      for (size_t i = 0; i < data.size(); ++i) data[i] = 0.01f * static_cast<float>(i) + group.rank() * 0.3f;
      EXPECT_TRUE((*made)->Sum(data).ok());
      return data;
    });
    EXPECT_EQ(results[0], results[1]) << SyncDTypeName(sync);
    for (size_t i = 0; i < 40; ++i) {
      EXPECT_NEAR(results[0][i], 0.02f * static_cast<float>(i) + 0.3f, 0.01f)
          << SyncDTypeName(sync) << " " << i;
    }
  }
}

}  // namespace
}  // namespace inferno
