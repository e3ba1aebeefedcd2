#include "engine/moe_feed_forward.h"

#include <algorithm>
#include <cmath>
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

  // The parts of a stage of 3 ranks (each expert's units split, or with
  // `expert_parallel` the 5 experts placed whole, 2, 2, 1 in runs or as
  // `placement` says) sum to the whole mixture, each rank's batched part of
  // a row is bit for bit its part alone, and every rank counts the routing.
  void ExpectPartsSumToTheWhole(bool expert_parallel,
                                const std::optional<ExpertPlacement>& placement = std::nullopt) {
    const ModelConfig& config = config_;
    const int64_t n = 5, dim = config.hidden_size;
    ThreadPool pool(1);
    const std::vector<float> x = Inputs(n);
    std::vector<double> sum(static_cast<size_t>(n * dim));
    for (int t = 0; t < 3; ++t) {
      const StageWeights stage = Stage(3, t, expert_parallel, placement);
      const LayerWeights& layer = stage.layers[0];
      std::vector<int32_t> held;
      for (int32_t e = 0; e < config.num_experts; ++e) {
        const int owner = placement ? placement->owner[0][static_cast<size_t>(e)]
                                    : static_cast<int>(e < 2   ? 0
                                                       : e < 4 ? 1
                                                               : 2);
        if (!expert_parallel || owner == t) held.push_back(e);
      }
      ASSERT_EQ(stage.part.ExpertsOf(0), held);
      ASSERT_EQ(layer.experts.size(), held.size());
      const int64_t units = layer.experts[0].w_gate.rows();
      EXPECT_EQ(units, expert_parallel ? config.expert_intermediate_size
                                       : EvenPart(config.expert_intermediate_size, 3, t).size());
      MoeFeedForward moe(config, n, units);
      std::vector<float> part(static_cast<size_t>(n * dim));
      std::vector<int64_t> routed(static_cast<size_t>(config.num_experts));
      moe.Forward(layer, held, x, n, part, routed, pool);
      for (size_t i = 0; i < part.size(); ++i) sum[i] += part[i];
      std::vector<int64_t> expected_routed(routed.size());
      for (int64_t row = 0; row < n; ++row) {
        std::vector<int64_t> chosen;
        Reference(std::vector<float>(x.begin() + row * dim, x.begin() + (row + 1) * dim), &chosen);
        for (int64_t e : chosen) ++expected_routed[static_cast<size_t>(e)];
      }
      EXPECT_EQ(routed, expected_routed) << "rank index " << t;
      // Grouped by expert over the batch, each row's part is the one it gets alone.
      for (int64_t row = 0; row < n; ++row) {
        std::vector<float> alone(static_cast<size_t>(dim));
        moe.Forward(layer, held, std::span<const float>(x).subspan(row * dim, dim), 1, alone, routed, pool);
        for (int64_t i = 0; i < dim; ++i)
          ASSERT_EQ(part[row * dim + i], alone[i]) << t << ", " << row << ", " << i;
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<double> expected =
          Reference(std::vector<float>(x.begin() + t * dim, x.begin() + (t + 1) * dim));
      for (int64_t i = 0; i < dim; ++i) ASSERT_NEAR(sum[t * dim + i], expected[i], 1e-5) << t << ", " << i;
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
  moe.Forward(layer, all, x, n, batched, routed, pool);
  EXPECT_EQ(std::accumulate(routed.begin(), routed.end(), int64_t{0}), n * config_.num_experts_per_tok);
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float> row(x.begin() + t * dim, x.begin() + (t + 1) * dim);
    std::vector<float> alone(static_cast<size_t>(dim));
    moe.Forward(layer, all, row, 1, alone, routed, pool);
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
  ExpectPartsSumToTheWhole(true, ExpertPlacement{{{2, 0, 1, 0, 2}}});
}

INSTANTIATE_TEST_SUITE_P(Families, MoeFeedForwardTest,
                         ::testing::Values("MixtralForCausalLM", "Qwen3MoeForCausalLM"));

}  // namespace
}  // namespace inferno
