#include "runtime/tensor_parallel_agreement.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/inproc/transport.h"
#include "distributed/run_ranks.h"
#include "runtime/pipeline_protocol.h"
#include "runtime/sampler.h"
#include "runtime/testing/small_config.h"
#include "runtime/token_logprobs.h"

namespace inferno {
namespace {

// One stage of two tensor-parallel ranks over a vocabulary of 10 (rows 0-4
// on index 0, 5-9 on index 1).
ShardPlan OneStageOfTwo() {
  Result<ShardPlan> plan = MakeShardPlan(SmallTestConfig(), 1, 2, std::nullopt);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return *plan;
}

template <typename Body>
auto OnBothRanks(Body body) {
  const ShardPlan plan = OneStageOfTwo();
  auto world = std::make_shared<InProcessWorld>(2, std::chrono::seconds(30));
  return RunRanks(std::vector<std::shared_ptr<Transport>>{world->transport(0), world->transport(1)},
                  [&](ProcessGroup& group) {
                    Result<HostAllReduce> sum = HostAllReduce::Make(group);
                    EXPECT_TRUE(sum.ok());
                    TensorParallelGroup stage_group(*std::move(sum));
                    Timeline timeline(false);
                    TensorParallelAgreement agreement(&stage_group, plan, group.rank(), 10, group.is_leader(),
                                                      timeline);
                    return body(group.rank(), agreement);
                  });
}

TEST(TensorParallelAgreement, OtherRanksFollowTheLeadersDecisions) {
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    StepDecisions mine;
    if (rank == 0) {
      mine.admitted.push_back(SequenceSpec{7, {1, 2}, 3, {}});
      mine.cancelled = {4};
      mine.tick_due = true;
    }
    Result<StepDecisions> shared = agreement.Share(mine);
    EXPECT_TRUE(shared.ok());
    return *shared;
  });
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(results[1].admitted.size(), 1u);
  EXPECT_EQ(results[1].cancelled, std::vector<int64_t>{4});
}

TEST(TensorParallelAgreement, GroupArgMaxPicksTheFirstLargestOverTheVocabulary) {
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    // The largest value, 5, is id 3 on index 0 and id 6 on index 1.
    const std::vector<float> rows =
        rank == 0 ? std::vector<float>{0, 1, 2, 5, 4} : std::vector<float>{1, 5, 0, 0, 0};
    Result<int32_t> best = agreement.GroupArgMax(-1, rows);
    EXPECT_TRUE(best.ok());
    return *best;
  });
  EXPECT_EQ(results, (std::vector<int32_t>{3, 3}));
}

TEST(TensorParallelAgreement, GroupTopKMergesEachRanksTopK) {
  // Ties within and across ranks: 5 is ids 3 and 6, 4 is ids 4 and 8.
  const std::vector<float> vocabulary = {0, 1, 2, 5, 4, 1, 5, 0, 4, -1};
  for (int32_t k : {1, 3, 4, 7, 10}) {
    const auto results = OnBothRanks([&](int rank, TensorParallelAgreement& agreement) {
      const std::span<const float> rows(vocabulary.data() + 5 * rank, 5);
      Result<std::span<const std::pair<float, int32_t>>> top = agreement.GroupTopK(-1, rows, k);
      EXPECT_TRUE(top.ok());
      return std::vector<std::pair<float, int32_t>>(top->begin(), top->end());
    });
    std::vector<std::pair<float, int32_t>> expected;
    for (int32_t id = 0; id < 10; ++id) expected.push_back({vocabulary[id], id});
    std::sort(expected.begin(), expected.end(), MoreLikely);
    expected.resize(k);
    EXPECT_EQ(results[0], expected) << "top_k " << k;
    EXPECT_EQ(results[1], expected) << "top_k " << k;
  }
}

TEST(TensorParallelAgreement, TopKSamplingOfTheMergedCandidatesIsTheGatheredLogitsSampling) {
  // Per rank: the token sampled from the merged top-k, then from the
  // gathered vocabulary, by two samplers of one seed, for random logits
  // with ties; each pair must agree draw for draw.
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    const SamplingOptions options{.temperature = 0.7f, .top_k = 4, .top_p = 0.9f, .seed = 9};
    Sampler merged(options, 10, {});
    Sampler gathered(options, 10, {});
    EXPECT_TRUE(merged.TopKOnly());
    uint64_t state = 12345;
    std::vector<std::pair<int32_t, int32_t>> tokens;
    for (int step = 0; step < 300; ++step) {
      std::vector<float> vocabulary(10);
      for (float& logit : vocabulary) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        logit = static_cast<float>((state >> 60) % 6) * 0.75f;  // few values: many ties
      }
      const std::span<const float> rows(vocabulary.data() + 5 * rank, 5);
      Result<std::span<const std::pair<float, int32_t>>> top = agreement.GroupTopK(step, rows, 4);
      EXPECT_TRUE(top.ok());
      const int32_t draft = step % 3 == 0 ? step % 10 : -1;
      const int32_t from_top = merged.SampleTopK(*top, draft);
      Result<std::span<float>> logits = agreement.GatherLogits(step, rows);
      EXPECT_TRUE(logits.ok());
      tokens.push_back({from_top, gathered.Sample(*logits, draft)});
    }
    return tokens;
  });
  for (const auto& [from_top, from_logits] : results[0]) EXPECT_EQ(from_top, from_logits);
  EXPECT_EQ(results[0], results[1]);
}

TEST(TensorParallelAgreement, LeaderTokenReachesEveryRank) {
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    Result<int32_t> token = agreement.LeaderToken(-1, rank == 0 ? 42 : -1);
    EXPECT_TRUE(token.ok());
    return *token;
  });
  EXPECT_EQ(results, (std::vector<int32_t>{42, 42}));
}

TEST(TensorParallelAgreement, LeaderDraftReachesEveryRankEmptyOrNot) {
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    std::vector<std::vector<int32_t>> seen;
    // The leader's draft, shorter than the most; then an empty one. The
    // other rank's own is replaced.
    for (const std::vector<int32_t>& leaders : {std::vector<int32_t>{7, 8}, std::vector<int32_t>{}}) {
      std::vector<int32_t> draft = rank == 0 ? leaders : std::vector<int32_t>{1, 1, 1};
      Status shared = agreement.LeaderDraft(0, draft, 4);
      EXPECT_TRUE(shared.ok()) << shared.error().message;
      seen.push_back(draft);
    }
    return seen;
  });
  const std::vector<std::vector<int32_t>> expected = {{7, 8}, {}};
  EXPECT_EQ(results[0], expected);
  EXPECT_EQ(results[1], expected);
}

TEST(TensorParallelAgreement, GatherLogitsAssemblesTheVocabularyOnEveryRank) {
  const auto results = OnBothRanks([](int rank, TensorParallelAgreement& agreement) {
    std::vector<float> rows(5);
    for (int i = 0; i < 5; ++i) rows[i] = static_cast<float>(rank * 5 + i);
    Result<std::span<float>> logits = agreement.GatherLogits(-1, rows);
    EXPECT_TRUE(logits.ok());
    return std::vector<float>(logits->begin(), logits->end());
  });
  const std::vector<float> expected = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(results[0], expected);
  EXPECT_EQ(results[1], expected);
}

TEST(TensorParallelAgreement, StageTimesAreGatheredOnIndexZero) {
  const auto results = OnBothRanks([](int, TensorParallelAgreement& agreement) {
    Result<std::vector<double>> times = agreement.StageTimes();
    EXPECT_TRUE(times.ok());
    return times->size();
  });
  EXPECT_EQ(results[0], 2 * kTickValuesPerRank);
  EXPECT_EQ(results[1], 0u);
}

}  // namespace
}  // namespace inferno
