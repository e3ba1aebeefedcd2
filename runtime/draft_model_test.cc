#include "runtime/draft_model.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "engine/stage_weights.h"
#include "engine/toy_model.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"

namespace inferno {
namespace {

// A toy model as one whole stage of `slots` slots and `context` positions.
class WholeToy {
 public:
  WholeToy(int slots, int64_t context) : pool_(1) {
    static const std::string folder = [] {
      const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/draft_toy";
      ToyModelShape shape;
      shape.dim = 32;
      shape.layers = 2;
      shape.seq_len = 64;
      Status written = WriteToyModel(path, ToyModelConfig(shape), 7);
      CHECK(written.ok()) << written.error().message;
      return path;
    }();
    auto checkpoint = Checkpoint::Open(folder);
    CHECK(checkpoint.ok()) << checkpoint.error().message;
    const ModelConfig& config = (*checkpoint)->config();
    auto plan = MakeShardPlan(config, 1, 1, std::nullopt);
    CHECK(plan.ok()) << plan.error().message;
    auto weights = LoadStageWeights(**checkpoint, plan->ranks[0]);
    CHECK(weights.ok()) << weights.error().message;
    stage_ = std::make_unique<TransformerStage>(config, std::move(*weights), slots, context, pool_);
    draft_ = std::make_unique<DraftModel>(*stage_, timeline_);
  }

  DraftModel& draft() { return *draft_; }

 private:
  ThreadPool pool_;
  Timeline timeline_{false};
  std::unique_ptr<TransformerStage> stage_;
  std::unique_ptr<DraftModel> draft_;
};

const std::vector<int32_t> kPrompt = {1, 72, 101, 108, 108, 111, 44, 32};

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Drafted {
  std::vector<int32_t> tokens;
  std::vector<float> probs;
};

Drafted DraftOf(DraftModel& model, int slot, const std::vector<int32_t>& tokens, int64_t k) {
  Drafted d;
  Status done = model.Draft(slot, tokens, k, d.tokens, d.probs);
  EXPECT_TRUE(done.ok()) << done.error().message;
  return d;
}

TEST(DraftModel, ADraftAfterACutBackIsThatOfAFreshModel) {
  WholeToy used(2, 64);
  ASSERT_TRUE(used.draft().Start(0, kPrompt, {}).ok());
  const Drafted first = DraftOf(used.draft(), 0, kPrompt, 4);
  ASSERT_EQ(first.tokens.size(), 4u);
  EXPECT_TRUE(first.probs.empty()) << "greedy drafts carry no q";
  // The target kept the first drafted token and corrected the second.
  const int32_t corrected = (first.tokens[1] + 1) % 259;
  const std::vector<int32_t> kept = Concat(kPrompt, {first.tokens[0], corrected});
  const Drafted second = DraftOf(used.draft(), 0, kept, 4);
  // Another sequence in slot 1 in between changes nothing of slot 0's.
  ASSERT_TRUE(used.draft().Start(1, std::vector<int32_t>{1, 200, 201}, {}).ok());
  DraftOf(used.draft(), 1, {1, 200, 201, 202}, 3);
  const std::vector<int32_t> longer = Concat(kept, second.tokens);
  const Drafted third = DraftOf(used.draft(), 0, longer, 3);

  WholeToy fresh(1, 64);
  ASSERT_TRUE(fresh.draft().Start(0, kPrompt, {}).ok());
  EXPECT_EQ(DraftOf(fresh.draft(), 0, kept, 4).tokens, second.tokens);
  WholeToy fresh_longer(1, 64);
  ASSERT_TRUE(fresh_longer.draft().Start(0, kPrompt, {}).ok());
  EXPECT_EQ(DraftOf(fresh_longer.draft(), 0, longer, 3).tokens, third.tokens);
}

TEST(DraftModel, SamplingDraftsCarryTheirDistribution) {
  const SamplingOptions sampling{.temperature = 0.9f, .top_k = 50, .seed = 3};
  WholeToy used(1, 64);
  ASSERT_TRUE(used.draft().Start(0, kPrompt, sampling).ok());
  const Drafted first = DraftOf(used.draft(), 0, kPrompt, 3);
  ASSERT_EQ(first.tokens.size(), 3u);
  ASSERT_EQ(first.probs.size(), 3u * 259);
  for (size_t i = 0; i < first.tokens.size(); ++i) {
    const std::span<const float> q = std::span<const float>(first.probs).subspan(i * 259, 259);
    double sum = 0;
    int outside = 0;
    for (float p : q) {
      sum += p;
      outside += p == 0.0f;
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << "draft " << i;
    EXPECT_GE(outside, 259 - 50) << "top_k 50 leaves the rest out";
    EXPECT_GT(q[static_cast<size_t>(first.tokens[i])], 0.0f) << "draft " << i << " was drawn from q";
  }
  // q of the next position depends on the tokens only, not on the random
  // stream or what was drafted before.
  const std::vector<int32_t> kept = Concat(kPrompt, {first.tokens[0]});
  const Drafted again = DraftOf(used.draft(), 0, kept, 1);
  WholeToy fresh(1, 64);
  ASSERT_TRUE(fresh.draft().Start(0, kPrompt, sampling).ok());
  const Drafted fresh_draft = DraftOf(fresh.draft(), 0, kept, 1);
  EXPECT_EQ(again.probs, fresh_draft.probs);
}

TEST(DraftModel, DraftsStopAtItsContext) {
  WholeToy small(1, 10);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(small.draft().Start(0, std::vector<int32_t>{1, 2, 3}, {}).ok());
  // Positions: the 9 tokens, then all drafted tokens but the last.
  EXPECT_EQ(DraftOf(small.draft(), 0, tokens, 4).tokens.size(), 2u);
  EXPECT_TRUE(DraftOf(small.draft(), 0, Concat(tokens, {10, 11}), 4).tokens.empty());
}

TEST(DraftModel, AnotherVocabularyIsRefusedByItsSize) {
  ModelConfig draft = ToyModelConfig({});
  ModelConfig target = draft;
  EXPECT_TRUE(CheckDraftVocabulary(draft, target).ok());
  target.vocab_size = 32000;
  const Status refused = CheckDraftVocabulary(draft, target);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("259 tokens, the model's 32000"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace inferno
