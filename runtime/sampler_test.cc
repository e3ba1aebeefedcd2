#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::vector<int32_t> Draw(const SamplingOptions& options, const std::vector<float>& logits, int count,
                          const std::vector<int32_t>& prompt = {}) {
  Sampler sampler(options, static_cast<int32_t>(logits.size()), prompt);
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) {
    std::vector<float> scratch = logits;
    ids.push_back(sampler.Sample(scratch));
  }
  return ids;
}

const std::vector<float> kLogits = {0.1f, 2.0f, 1.5f, -1.0f, 2.0f, 0.5f};

TEST(Sampler, GreedyPicksFirstMaximum) { EXPECT_EQ(Draw({}, kLogits, 3), (std::vector<int32_t>{1, 1, 1})); }

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingOptions options{.temperature = 1.0f, .seed = 7};
  const std::vector<int32_t> first = Draw(options, kLogits, 50);
  EXPECT_EQ(Draw(options, kLogits, 50), first);
  options.seed = 8;
  EXPECT_NE(Draw(options, kLogits, 50), first);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  const std::vector<int32_t> ids = Draw({.temperature = 1.0f, .top_k = 2, .seed = 3}, kLogits, 200);
  std::map<int32_t, int> counts;
  for (int32_t id : ids) ++counts[id];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[4], 0);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities about 0.7, 0.26, 0.035, ...: top_p 0.9 keeps ids 0 and 1.
  const std::vector<float> logits = {5.0f, 4.0f, 2.0f, 0.0f, -1.0f};
  std::map<int32_t, int> counts;
  for (int32_t id : Draw({.temperature = 1.0f, .top_p = 0.9f, .seed = 11}, logits, 400)) ++counts[id];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], 0);
}

TEST(Sampler, FullDistributionFollowsProbabilities) {
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
  std::map<int32_t, int> counts;
  for (int32_t id : Draw({.temperature = 1.0f, .seed = 5}, logits, 4000)) ++counts[id];
  EXPECT_NEAR(counts[1] / 4000.0, 0.75, 0.03);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenTokens) {
  // Prompt token 1 (2.0 -> 1.0) falls below token 2 (1.5); token 3 (-1.0)
  // would fall to -2.0 and token 0 (0.1, unseen) keeps its logit.
  const std::vector<float> logits = {0.1f, 2.0f, 1.5f, -1.0f};
  EXPECT_EQ(Draw({}, logits, 1, {1}), (std::vector<int32_t>{1}));
  EXPECT_EQ(Draw({.repetition_penalty = 2.0f}, logits, 1, {1, 3}), (std::vector<int32_t>{2}));
  // Below 1 it favours seen tokens: -1.0 * 0.1 = -0.1 beats unseen -0.5.
  EXPECT_EQ(Draw({.repetition_penalty = 0.1f}, {-0.5f, -1.0f}, 1, {1}), (std::vector<int32_t>{1}));
}

TEST(Sampler, FrequencyPenaltyGrowsWithEachRepeatPresencePenaltyOnce) {
  // Token 0 leads by 1.0 and is not in the prompt-only repetition set.
  const std::vector<float> logits = {3.0f, 2.0f, 0.0f};
  // Without penalties greedy repeats token 0.
  EXPECT_EQ(Draw({}, logits, 3), (std::vector<int32_t>{0, 0, 0}));
  // frequency 0.6: 0 once (3.0 - 0.6 = 2.4 > 2.0), twice (1.8 < 2.0): then 1.
  EXPECT_EQ(Draw({.frequency_penalty = 0.6f}, logits, 3), (std::vector<int32_t>{0, 0, 1}));
  // presence 1.5 alternates: 0 (1.5 < 2.0), 1 (0.5 < 1.5), 0, 0 stays 1.5 > 0.5.
  EXPECT_EQ(Draw({.presence_penalty = 1.5f}, logits, 4), (std::vector<int32_t>{0, 1, 0, 0}));
  // Penalties apply to generated tokens only, not to the prompt.
  EXPECT_EQ(Draw({.presence_penalty = 1.5f}, logits, 1, {0}), (std::vector<int32_t>{0}));
  // A negative penalty favours repeats.
  EXPECT_EQ(Draw({.presence_penalty = -2.0f}, {2.0f, 2.5f}, 3), (std::vector<int32_t>{1, 1, 1}));
}

TEST(Sampler, ArgMaxOnlyWithoutPenaltiesAndLogprobs) {
  EXPECT_TRUE(Sampler({}, 4, {}).ArgMaxOnly());
  EXPECT_FALSE(Sampler({.temperature = 1.0f}, 4, {}).ArgMaxOnly());
  EXPECT_FALSE(Sampler({.presence_penalty = 0.1f}, 4, {}).ArgMaxOnly());
  EXPECT_FALSE(Sampler({.repetition_penalty = 1.1f}, 4, {}).ArgMaxOnly());
  EXPECT_FALSE(Sampler({.logprobs = 0}, 4, {}).ArgMaxOnly());
}

TEST(Sampler, LogprobsAreOfTheLogitsBeforePenaltiesAndTemperature) {
  const std::vector<float> logits = {0.0f, std::log(3.0f), -1.0f};
  Sampler sampler({.temperature = 0.7f, .seed = 9, .repetition_penalty = 3.0f, .logprobs = 2}, 3,
                  std::vector<int32_t>{1});
  std::vector<float> scratch = logits;
  const int32_t token = sampler.Sample(scratch);
  const TokenLogprobs& got = sampler.last_logprobs();
  const double log_sum = std::log(1.0 + 3.0 + std::exp(-1.0));
  EXPECT_EQ(got.token, token);
  EXPECT_NEAR(got.logprob, logits[token] - log_sum, 1e-6);
  ASSERT_EQ(got.top.size(), 2u);
  EXPECT_EQ(got.top[0].token, 1);
  EXPECT_NEAR(got.top[0].logprob, std::log(3.0) - log_sum, 1e-6);
  EXPECT_EQ(got.top[1].token, 0);
}

// Allows only ids above the last accepted one, and always the last id.
class Increasing : public TokenConstraint {
 public:
  void Mask(std::span<float> logits) override {
    for (int32_t i = 0; i <= last_ && i + 1 < static_cast<int32_t>(logits.size()); ++i) {
      logits[i] = -std::numeric_limits<float>::infinity();
    }
  }
  void Accept(int32_t token) override { last_ = token; }

 private:
  int32_t last_ = -1;
};

TEST(Sampler, AConstraintMasksBeforeGreedyAndSampledPicks) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f};
  for (const SamplingOptions& options :
       {SamplingOptions{}, SamplingOptions{.temperature = 1.0f, .seed = 3}}) {
    Sampler sampler(options, 5, {}, std::make_shared<Increasing>());
    EXPECT_FALSE(sampler.ArgMaxOnly());
    int32_t last = -1;
    for (int i = 0; i < 3; ++i) {
      std::vector<float> scratch = logits;
      const int32_t token = sampler.Sample(scratch);
      EXPECT_TRUE(token > last || token == 4) << token << " after " << last;
      last = token;
    }
  }
  Sampler greedy({}, 5, {}, std::make_shared<Increasing>());
  std::vector<float> scratch = logits;
  EXPECT_EQ(greedy.Sample(scratch), 1);
  scratch = logits;
  EXPECT_EQ(greedy.Sample(scratch), 3);
}

// Pearson's chi-square of `count` draws of `options` with `draft` over
// `logits` against `expected` probabilities (every one > 0 where drawn).
double ChiSquareWithDraft(const SamplingOptions& options, const std::vector<float>& logits, int32_t draft,
                          const std::vector<double>& expected, int count) {
  Sampler sampler(options, static_cast<int32_t>(logits.size()), {});
  std::vector<int> counts(logits.size());
  for (int i = 0; i < count; ++i) {
    std::vector<float> scratch = logits;
    ++counts[static_cast<size_t>(sampler.Sample(scratch, draft))];
  }
  double chi_square = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the distribution";
      continue;
    }
    const double e = expected[i] * count;
    chi_square += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi_square;
}

std::vector<double> SoftmaxOf(const std::vector<float>& logits, double temperature, size_t keep) {
  std::vector<double> p(logits.size());
  std::vector<size_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  double sum = 0;
  for (size_t r = 0; r < keep; ++r) sum += p[order[r]] = std::exp(logits[order[r]] / temperature);
  for (double& v : p) v /= sum;
  return p;
}

// 5 degrees of freedom (6 tokens): P(chi-square > 20.5) = 0.001. The seeds
// are fixed, so the test is deterministic; a wrong rule (e.g. always
// accepting the draft, or not renormalising the rest) lands far above.
constexpr double kChiSquare5Dof999 = 20.5;

TEST(Sampler, DraftedSamplingKeepsTheDistribution) {
  const SamplingOptions options{.temperature = 0.8f, .seed = 17};
  const std::vector<double> expected = SoftmaxOf(kLogits, 0.8, kLogits.size());
  // A likely draft, an unlikely one, and none.
  for (int32_t draft : {1, 3, 5, -1}) {
    EXPECT_LT(ChiSquareWithDraft(options, kLogits, draft, expected, 60000), kChiSquare5Dof999)
        << "draft " << draft;
  }
}

TEST(Sampler, DraftedSamplingKeepsTheTopKDistribution) {
  // top_k 3 keeps ids 1, 4 (2.0) and 2 (1.5); a draft outside them is never taken.
  const SamplingOptions options{.temperature = 1.0f, .top_k = 3, .seed = 23};
  const std::vector<double> expected = SoftmaxOf(kLogits, 1.0, 3);
  for (int32_t draft : {2, 0}) {
    // 2 degrees of freedom: P(chi-square > 13.8) = 0.001.
    EXPECT_LT(ChiSquareWithDraft(options, kLogits, draft, expected, 60000), 13.8) << "draft " << draft;
  }
}

// Pearson's chi-square of `count` tokens sampled with `options` over
// `logits`, each with a draft a draft model drew (Sampler::Propose with
// `draft_options`) from `draft_logits`, against `expected`; `kept` counts
// the drafts kept.
double ChiSquareWithDraftModel(const SamplingOptions& options, const std::vector<float>& logits,
                               const SamplingOptions& draft_options, const std::vector<float>& draft_logits,
                               const std::vector<double>& expected, int count, int& kept) {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  Sampler sampler(options, vocab, {});
  Sampler drafter(draft_options, vocab, {});
  std::vector<int> counts(logits.size());
  kept = 0;
  for (int i = 0; i < count; ++i) {
    std::vector<float> q = draft_logits;
    const int32_t draft = drafter.Propose(q);
    std::vector<float> scratch = logits;
    const int32_t token = sampler.Sample(scratch, draft, q);
    kept += token == draft;
    ++counts[static_cast<size_t>(token)];
  }
  double chi_square = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the distribution";
      continue;
    }
    const double e = expected[i] * count;
    chi_square += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi_square;
}

// The probability that speculative sampling keeps a draft: sum of min(p, q).
double OverlapOf(const std::vector<double>& p, const std::vector<double>& q) {
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += std::min(p[i], q[i]);
  return sum;
}

TEST(Sampler, ADraftModelsDraftsKeepTheDistribution) {
  // A draft model that agrees with the target in part: q differs from p.
  const std::vector<float> draft_logits = {1.0f, 1.0f, 2.5f, 0.0f, 1.5f, -0.5f};
  const SamplingOptions options{.temperature = 0.8f, .seed = 29};
  const SamplingOptions draft_options{.temperature = 0.8f, .seed = 31};
  const std::vector<double> p = SoftmaxOf(kLogits, 0.8, kLogits.size());
  const std::vector<double> q = SoftmaxOf(draft_logits, 0.8, kLogits.size());
  int kept = 0;
  const int count = 60000;
  EXPECT_LT(ChiSquareWithDraftModel(options, kLogits, draft_options, draft_logits, p, count, kept),
            kChiSquare5Dof999);
  // Kept as often as the rule says (binomial standard deviation ~0.002).
  EXPECT_NEAR(static_cast<double>(kept) / count, OverlapOf(p, q), 0.01);
  // Proposals follow q.
  Sampler drafter(draft_options, static_cast<int32_t>(kLogits.size()), {});
  std::vector<float> probs = draft_logits;
  drafter.Propose(probs);
  for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(probs[i], q[i], 1e-5) << "token " << i;
}

TEST(Sampler, ADraftModelOutsideTheTopKIsNeverKept) {
  // The target keeps ids 1, 4 and 2 (top_k 3); the draft model mostly
  // proposes 0 and 5, which it must never get.
  const std::vector<float> draft_logits = {3.0f, 0.0f, 0.5f, 0.0f, 0.0f, 3.0f};
  const SamplingOptions options{.temperature = 1.0f, .top_k = 3, .seed = 37};
  const SamplingOptions draft_options{.temperature = 1.0f, .seed = 41};
  int kept = 0;
  const int count = 60000;
  const std::vector<double> p = SoftmaxOf(kLogits, 1.0, 3);
  // 2 degrees of freedom: P(chi-square > 13.8) = 0.001.
  EXPECT_LT(ChiSquareWithDraftModel(options, kLogits, draft_options, draft_logits, p, count, kept), 13.8);
  EXPECT_NEAR(static_cast<double>(kept) / count,
              OverlapOf(p, SoftmaxOf(draft_logits, 1.0, draft_logits.size())), 0.01);
}

TEST(Sampler, GreedyProposalIsTheArgMax) {
  Sampler drafter({}, static_cast<int32_t>(kLogits.size()), {});
  std::vector<float> scratch = kLogits;
  EXPECT_EQ(drafter.Propose(scratch), 1);
}

TEST(Sampler, GreedyWithADraftIsTheArgMax) {
  Sampler sampler({}, static_cast<int32_t>(kLogits.size()), {});
  std::vector<float> scratch = kLogits;
  EXPECT_EQ(sampler.Sample(scratch, 3), 1);
}

}  // namespace
}  // namespace inferno
