#include "runtime/tensor_parallel_group.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
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

// Each rank's sum of 40 values (one whole Q8_0 block and a tail) over
// ranks whose hosts are `keys`, one stage of tensor parallelism, in `sync`.
std::vector<std::vector<float>> SumOnHosts(SyncDType sync, const std::vector<std::string>& keys) {
  const int world = static_cast<int>(keys.size());
  ModelConfig config = SmallTestConfig();
  config.num_attention_heads = config.num_key_value_heads = 4;  // for --tp 4
  Result<ShardPlan> plan = MakeShardPlan(config, 1, world, std::nullopt);
  EXPECT_TRUE(plan.ok()) << plan.error().ToString();
  return RunRanks(Transports(world), [&](ProcessGroup& group) {
    Result<std::optional<TensorParallelGroup>> made =
        MakeTensorParallelGroup(group, *plan, sync, keys[static_cast<size_t>(group.rank())]);
    EXPECT_TRUE(made.ok() && made->has_value());
    std::vector<float> data(40);
    for (size_t i = 0; i < data.size(); ++i) data[i] = 0.01f * static_cast<float>(i) + group.rank() * 0.3f;
    EXPECT_TRUE((*made)->Sum(data).ok());
    return data;
  });
}

TEST(TensorParallelGroup, CompressedSumsAcrossHostsGiveEveryRankTheSameBitsNearTheF32Sum) {
  // One rank per host, and two hosts of two ranks (two levels).
  for (const std::vector<std::string>& keys :
       {std::vector<std::string>{"a", "b"}, std::vector<std::string>{"a", "a", "b", "b"}}) {
    const std::vector<std::vector<float>> f32 = SumOnHosts(SyncDType::kF32, keys);
    const float ranks = static_cast<float>(keys.size());
    for (SyncDType sync : {SyncDType::kBF16, SyncDType::kQ8_0}) {
      const std::vector<std::vector<float>> results = SumOnHosts(sync, keys);
      for (const std::vector<float>& result : results) EXPECT_EQ(result, results[0]) << SyncDTypeName(sync);
      for (size_t i = 0; i < 40; ++i) {
        EXPECT_NEAR(results[0][i], ranks * 0.01f * static_cast<float>(i) + 0.3f * ranks * (ranks - 1) / 2,
                    0.02f)
            << SyncDTypeName(sync) << " " << i;
      }
      EXPECT_NE(results[0], f32[0]) << SyncDTypeName(sync) << ": the sums across hosts were not rounded";
    }
  }
}

TEST(TensorParallelGroup, CompressedSumsOnOneHostStayF32) {
  const std::vector<std::string> one_host = {"a", "a", "a", "a"};
  const std::vector<std::vector<float>> f32 = SumOnHosts(SyncDType::kF32, one_host);
  for (SyncDType sync : {SyncDType::kBF16, SyncDType::kQ8_0}) {
    EXPECT_EQ(SumOnHosts(sync, one_host), f32) << SyncDTypeName(sync);
  }
}

}  // namespace
}  // namespace inferno
