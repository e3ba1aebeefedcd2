#include "engine/moe_feed_forward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/toy_model.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

TEST(RouteTopK, ChoosesTheLargestByDecreasingProbabilityTiesToTheLowerIndex) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  std::vector<int32_t> experts(3);
  std::vector<float> weights(3);
  RouteTopK(logits, /*renormalise=*/false, experts, weights);
  EXPECT_EQ(experts, (std::vector<int32_t>{1, 3, 4}));
  double z = 0;
  for (float l : {0.5, 2.0, -1.0, 2.0, 1.0}) z += std::exp(l);
  EXPECT_NEAR(weights[0], std::exp(2.0) / z, 1e-6);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_NEAR(weights[2], std::exp(1.0) / z, 1e-6);
}

TEST(RouteTopK, RenormalisedWeightsAreTheSoftmaxOfTheChosenLogits) {
  std::vector<float> logits = {0.1f, -0.3f, 0.7f, 0.2f};
  std::vector<int32_t> experts(2);
  std::vector<float> weights(2);
  RouteTopK(logits, /*renormalise=*/true, experts, weights);
  EXPECT_EQ(experts, (std::vector<int32_t>{2, 3}));
  EXPECT_NEAR(weights[0], 1.0 / (1.0 + std::exp(0.2 - 0.7)), 1e-6);
  EXPECT_NEAR(weights[0] + weights[1], 1.0f, 1e-6);
}

// holders[e] for 8 experts on 2 ranks: 0 owns 0-3, 1 owns 4-7, 0 copies 4
// and 5, 1 copies 0 and 1.
std::vector<std::vector<int32_t>> TwoRanksTwoCopiesEach() {
  return {{0, 1}, {0, 1}, {0}, {0}, {0, 1}, {0, 1}, {1}, {1}};
}

TEST(AssignExperts, DecodeRowGoesGreedilyToTheLessBusyHolder) {
  // One row chose 0-5: 2 and 3 only rank 0 holds (work 2 units); then 0 and
  // 1 go to rank 1 (0 < 2, 1 < 2 units), 4 ties at 2 units to rank 0, 5 to
  // rank 1: 3 experts each, where the owners alone would run 4 and 2.
  const std::vector<std::vector<int32_t>> holders = TwoRanksTwoCopiesEach();
  const std::vector<int64_t> rows = {1, 1, 1, 1, 1, 1, 0, 0};
  std::vector<int64_t> work(2);
  std::vector<int32_t> order(8), runner(8);
  AssignExperts(rows, holders, work, order, runner);
  EXPECT_EQ(runner, (std::vector<int32_t>{1, 1, 0, 0, 0, 1, -1, -1}));
  EXPECT_EQ(work, (std::vector<int64_t>{3 * (kExpertReadWork + 1), 3 * (kExpertReadWork + 1)}));
}

TEST(AssignExperts, HeavierExpertsFirstAndWorkCountsRows) {
  // Expert 0 (both hold it) has 20 rows, expert 2 (rank 0 only) 1, expert 4
  // (both) 1: 2 to rank 0 first; then 0 (the most rows) to rank 1; then 4 to
  // rank 0, whose work (one read and a row) is below rank 1's.
  const std::vector<std::vector<int32_t>> holders = TwoRanksTwoCopiesEach();
  const std::vector<int64_t> rows = {20, 0, 1, 0, 1, 0, 0, 0};
  std::vector<int64_t> work(2);
  std::vector<int32_t> order(8), runner(8);
  AssignExperts(rows, holders, work, order, runner);
  EXPECT_EQ(runner, (std::vector<int32_t>{1, -1, 0, -1, 0, -1, -1, -1}));
  EXPECT_EQ(work, (std::vector<int64_t>{2 * (kExpertReadWork + 1), kExpertReadWork + 20}));
}

TEST(AssignExperts, EveryChosenExpertRunsOnExactlyOneOfItsHolders) {
  // 3 ranks, 12 experts, each held by one to three ranks; many routings.
  const int num_experts = 12;
  std::vector<std::vector<int32_t>> holders(num_experts);
  for (int e = 0; e < num_experts; ++e) {
    for (int t = 0; t < 3; ++t) {
      if (t == e % 3 || (e * 7 + t) % 4 == 0) holders[static_cast<size_t>(e)].push_back(t);
    }
  }
  std::vector<int64_t> work(3);
  std::vector<int32_t> order(num_experts), runner(num_experts);
  uint32_t state = 12345;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> rows(num_experts);
    for (int64_t& r : rows) r = (state = state * 1664525u + 1013904223u) >> 29;  // 0-7
    AssignExperts(rows, holders, work, order, runner);
    std::vector<int64_t> expected_work(3);
    for (int e = 0; e < num_experts; ++e) {
      const std::vector<int32_t>& h = holders[static_cast<size_t>(e)];
      if (rows[static_cast<size_t>(e)] == 0) {
        EXPECT_EQ(runner[static_cast<size_t>(e)], -1) << "expert " << e;
        continue;
      }
      ASSERT_EQ(std::ranges::count(h, runner[static_cast<size_t>(e)]), 1)
          << "expert " << e << " trial " << trial;
      expected_work[static_cast<size_t>(runner[static_cast<size_t>(e)])] +=
          kExpertReadWork + rows[static_cast<size_t>(e)];
    }
    EXPECT_EQ(work, expected_work) << "trial " << trial;
  }
}

TEST(AssignExperts, CopiesLowerTheBusierRanksShareOfUniformDecodeTokens) {
  // Qwen3-30B-A3B's routing shape: 8 of 128 experts, uniform; --ep 2 in
  // contiguous runs with R copies per rank (AddExpertReplicas' spread). The
  // expected experts of the busier rank per token, over 20000 tokens (a
  // fixed seed): E[max(X, 8 - X)] = 5.06 without copies, and with them what
  // a simulation of the same rule gives (docs/engine.md).
  ModelConfig config;
  config.architecture = "Qwen3MoeForCausalLM";
  config.num_hidden_layers = 1;
  config.num_experts = 128;
  config.num_experts_per_tok = 8;
  const std::pair<int, double> expected[] = {{0, 5.06}, {4, 4.82}, {8, 4.63}, {16, 4.33}, {32, 4.05}};
  for (const auto& [replicas, busier] : expected) {
    Result<ExpertPlacement> placement = AddExpertReplicas(2, ContiguousExperts(config, 2), replicas);
    ASSERT_TRUE(placement) << placement.error().message;
    std::vector<std::vector<int32_t>> holders(128);
    for (int e = 0; e < 128; ++e) {
      for (int t = 0; t < 2; ++t) {
        const bool copied =
            replicas > 0 && std::ranges::count(placement->copies[0][static_cast<size_t>(t)], e) > 0;
        if (placement->owner[0][static_cast<size_t>(e)] == t || copied)
          holders[static_cast<size_t>(e)].push_back(t);
      }
    }
    std::vector<int64_t> rows(128), work(2);
    std::vector<int32_t> order(128), runner(128), deck(128);
    uint64_t state = 42;
    int64_t total = 0;
    const int tokens = 20000;
    for (int token = 0; token < tokens; ++token) {
      std::iota(deck.begin(), deck.end(), 0);
      std::fill(rows.begin(), rows.end(), 0);
      for (int i = 0; i < 8; ++i) {  // 8 distinct experts: a partial Fisher-Yates shuffle
        state = state * 6364136223846793005u + 1442695040888963407u;
        std::swap(deck[i], deck[i + static_cast<int>((state >> 33) % static_cast<uint64_t>(128 - i))]);
        rows[static_cast<size_t>(deck[i])] = 1;
      }
      AssignExperts(rows, holders, work, order, runner);
      total += std::max(work[0], work[1]) / (kExpertReadWork + 1);
    }
    const double mean = static_cast<double>(total) / tokens;
    EXPECT_NEAR(mean, busier, 0.04) << "R = " << replicas;
    std::printf("R = %d: the busier rank runs %.3f of a token's 8 experts\n", replicas, mean);
  }
}

class MoeFeedForwardTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ToyModelShape shape;
    shape.architecture = GetParam();
    shape.dim = 32;
    shape.layers = 1;
    shape.experts = 5;
    shape.experts_per_token = 2;
    shape.expert_hidden = 24;
    config_ = ToyModelConfig(shape);
    ASSERT_TRUE(config_.Validate("test").ok());
    const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + "/" + GetParam();
    ASSERT_TRUE(WriteToyModel(folder, config_, /*seed=*/7).ok());
    for (ToyTensor& tensor : MakeToyModelTensors(config_, 7)) tensors_[tensor.name] = std::move(tensor.data);
    auto checkpoint = Checkpoint::Open(folder);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    checkpoint_ = std::move(*checkpoint);
  }

  // The weights of index t of a stage of tp ranks, experts placed whole when
  // `expert_parallel` (as `placement` says, if given).
  StageWeights Stage(int tp, int t, bool expert_parallel = false,
                     const std::optional<ExpertPlacement>& placement = std::nullopt) {
    Result<ShardPlan> plan = MakeShardPlan(config_, 1, tp, std::nullopt, expert_parallel, placement);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    Result<StageWeights> weights = LoadStageWeights(*checkpoint_, plan->ranks[static_cast<size_t>(t)]);
    EXPECT_TRUE(weights.ok()) << weights.error().message;
    return std::move(*weights);
  }

  // The formula of moe_feed_forward.h in double precision, from the
  // checkpoint's tensors by name.
  // `chosen`, if not null, gets the experts the row is routed to.
  std::vector<double> Reference(const std::vector<float>& x, std::vector<int64_t>* chosen_experts = nullptr) {
    const int64_t dim = config_.hidden_size, hidden = config_.expert_intermediate_size;
    const auto mat = [&](const std::string& suffix, const std::vector<double>& in, int64_t rows) {
      const std::vector<float>& w = tensors_.at(LayerTensorName(0, suffix));
      const int64_t cols = static_cast<int64_t>(in.size());
      std::vector<double> out(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) out[r] += w[r * cols + c] * in[c];
      }
      return out;
    };
    const std::vector<double> in(x.begin(), x.end());
    std::vector<double> p = mat(RouterSuffix(config_), in, config_.num_experts);
    double z = 0;
    for (double& v : p) z += (v = std::exp(v));
    for (double& v : p) v /= z;
    std::vector<int64_t> order(p.size());
    for (size_t e = 0; e < p.size(); ++e) order[e] = static_cast<int64_t>(e);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    order.resize(static_cast<size_t>(config_.num_experts_per_tok));
    if (chosen_experts != nullptr) *chosen_experts = order;
    double chosen = 0;
    for (int64_t e : order) chosen += p[e];
    std::vector<double> out(static_cast<size_t>(dim));
    for (int64_t e : order) {
      std::vector<double> gate = mat(ExpertSuffix(config_, e, ExpertMatrix::kGate), in, hidden);
      const std::vector<double> up = mat(ExpertSuffix(config_, e, ExpertMatrix::kUp), in, hidden);
      for (int64_t i = 0; i < hidden; ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      const std::vector<double> down = mat(ExpertSuffix(config_, e, ExpertMatrix::kDown), gate, dim);
      const double weight = config_.norm_topk_prob ? p[e] / chosen : p[e];
      for (int64_t i = 0; i < dim; ++i) out[i] += weight * down[i];
    }
    return out;
  }

  // n rows of inputs of RMS around 1.
  std::vector<float> Inputs(int64_t n) const {
    std::vector<float> x(static_cast<size_t>(n * config_.hidden_size));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i) + 0.3) * 1.4f;
    return x;
  }

  // The parts of a stage of tp ranks (each expert's units split, or with
  // `expert_parallel` the 5 experts placed whole, in runs or as `placement`
  // says, copies included) sum to the whole mixture, for the batch and for
  // each row alone; every rank counts the routing. Without copies each
  // rank's batched part of a row is also bit for bit its part alone (with
  // copies the assignment depends on the call's whole routing).
  void ExpectPartsSumToTheWhole(bool expert_parallel,
                                const std::optional<ExpertPlacement>& placement = std::nullopt, int tp = 3) {
    const ModelConfig& config = config_;
    const int64_t n = 5, dim = config.hidden_size;
    const bool copies = placement && !placement->copies.empty();
    ThreadPool pool(1);
    const std::vector<float> x = Inputs(n);
    std::vector<double> sum(static_cast<size_t>(n * dim)), alone_sum(static_cast<size_t>(n * dim));
    const ExpertPlacement placed = placement.value_or(ContiguousExperts(config, tp));
    for (int t = 0; t < tp; ++t) {
      const StageWeights stage = Stage(tp, t, expert_parallel, placement);
      const LayerWeights& layer = stage.layers[0];
      std::vector<int32_t> held;
      for (int32_t e = 0; e < config.num_experts; ++e) {
        const bool copied = copies && std::ranges::count(placed.copies[0][static_cast<size_t>(t)], e) > 0;
        if (!expert_parallel || placed.owner[0][static_cast<size_t>(e)] == t || copied) held.push_back(e);
      }
      ASSERT_EQ(stage.part.ExpertsOf(0), held);
      ASSERT_EQ(stage.part.expert_holders.empty(), !copies);
      ASSERT_EQ(layer.experts.size(), held.size());
      const int64_t units = layer.experts[0].w_gate.rows();
      EXPECT_EQ(units, expert_parallel ? config.expert_intermediate_size
                                       : EvenPart(config.expert_intermediate_size, tp, t).size());
      MoeFeedForward moe(config, n, units);
      const HeldExperts experts{
          held, copies ? stage.part.expert_holders[0] : std::span<const std::vector<int32_t>>(), t};
      std::vector<float> part(static_cast<size_t>(n * dim));
      std::vector<int64_t> routed(static_cast<size_t>(config.num_experts));
      moe.Forward(layer, experts, x, n, part, routed, pool);
      for (size_t i = 0; i < part.size(); ++i) sum[i] += part[i];
      std::vector<int64_t> expected_routed(routed.size());
      for (int64_t row = 0; row < n; ++row) {
        std::vector<int64_t> chosen;
        Reference(std::vector<float>(x.begin() + row * dim, x.begin() + (row + 1) * dim), &chosen);
        for (int64_t e : chosen) ++expected_routed[static_cast<size_t>(e)];
      }
      EXPECT_EQ(routed, expected_routed) << "rank index " << t;
      for (int64_t row = 0; row < n; ++row) {
        std::vector<float> alone(static_cast<size_t>(dim));
        moe.Forward(layer, experts, std::span<const float>(x).subspan(row * dim, dim), 1, alone, routed,
                    pool);
        for (int64_t i = 0; i < dim; ++i) {
          alone_sum[row * dim + i] += alone[i];
          if (!copies) {
            ASSERT_EQ(part[row * dim + i], alone[i]) << t << ", " << row << ", " << i;
          }
        }
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<double> expected =
          Reference(std::vector<float>(x.begin() + t * dim, x.begin() + (t + 1) * dim));
      for (int64_t i = 0; i < dim; ++i) {
        ASSERT_NEAR(sum[t * dim + i], expected[i], 1e-5) << t << ", " << i;
        ASSERT_NEAR(alone_sum[t * dim + i], expected[i], 1e-5) << "alone " << t << ", " << i;
      }
    }
  }

  ModelConfig config_;
  std::map<std::string, std::vector<float>> tensors_;
  std::unique_ptr<Checkpoint> checkpoint_;
};

TEST_P(MoeFeedForwardTest, MatchesTheFormulaAndEachRowAloneBitForBit) {
  const int64_t n = 9, dim = config_.hidden_size;
  const LayerWeights layer = Stage(1, 0).layers[0];
  ThreadPool pool(2);
  MoeFeedForward moe(config_, n, config_.expert_intermediate_size);
  const std::vector<int32_t> all = {0, 1, 2, 3, 4};
  std::vector<int64_t> routed(all.size());
  const std::vector<float> x = Inputs(n);
  std::vector<float> batched(static_cast<size_t>(n * dim));
  moe.Forward(layer, {all}, x, n, batched, routed, pool);
  EXPECT_EQ(std::accumulate(routed.begin(), routed.end(), int64_t{0}), n * config_.num_experts_per_tok);
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float> row(x.begin() + t * dim, x.begin() + (t + 1) * dim);
    std::vector<float> alone(static_cast<size_t>(dim));
    moe.Forward(layer, {all}, row, 1, alone, routed, pool);
    const std::vector<double> expected = Reference(row);
    for (int64_t i = 0; i < dim; ++i) {
      ASSERT_EQ(batched[t * dim + i], alone[i]) << "row " << t << " element " << i;
      ASSERT_NEAR(alone[i], expected[i], 1e-5) << "row " << t << " element " << i;
    }
  }
}

TEST_P(MoeFeedForwardTest, TensorParallelPartsSumToTheWhole) { ExpectPartsSumToTheWhole(false); }

TEST_P(MoeFeedForwardTest, ExpertParallelPartsSumToTheWhole) { ExpectPartsSumToTheWhole(true); }

TEST_P(MoeFeedForwardTest, ScatteredExpertPartsSumToTheWhole) {
  ExpectPartsSumToTheWhole(true, ExpertPlacement{.owner = {{2, 0, 1, 0, 2}}});
}

TEST_P(MoeFeedForwardTest, PartsWithCopiesSumToTheWhole) {
  // 2 ranks: 0 owns 0-2 and copies 3, 1 owns 3-4 and copies 0 and 1.
  ExpectPartsSumToTheWhole(true, ExpertPlacement{.owner = {{0, 0, 0, 1, 1}}, .copies = {{{3}, {0, 1}}}}, 2);
  // 3 ranks, one copy each (AddExpertReplicas' spread).
  Result<ExpertPlacement> spread = AddExpertReplicas(3, ContiguousExperts(config_, 3), 1);
  ASSERT_TRUE(spread.ok()) << spread.error().message;
  ExpectPartsSumToTheWhole(true, *spread, 3);
  // Every expert on both ranks.
  ExpectPartsSumToTheWhole(true, ExpertPlacement{.owner = {{0, 0, 0, 1, 1}}, .copies = {{{3, 4}, {0, 1, 2}}}},
                           2);
}

INSTANTIATE_TEST_SUITE_P(Families, MoeFeedForwardTest,
                         ::testing::Values("MixtralForCausalLM", "Qwen3MoeForCausalLM"));

}  // namespace
}  // namespace inferno
