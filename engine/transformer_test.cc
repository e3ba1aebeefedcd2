#include "engine/transformer.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/toy_model.h"
#include "loader/checkpoint.h"

namespace inferno {
namespace {

// A plain double-precision Llama forward pass over the checkpoint's own
// (Hugging Face) layout and RoPE convention, one token at a time.
class ReferenceModel {
 public:
  ReferenceModel(const ModelConfig& config, uint64_t seed) : config_(config) {
    for (ToyTensor& tensor : MakeToyModelTensors(config, seed))
      tensors_[tensor.name] = std::move(tensor.data);
    keys_.assign(config.num_hidden_layers, std::vector<std::vector<double>>());
    values_ = keys_;
  }

  std::vector<double> Step(int32_t token) {
    const int64_t dim = config_.hidden_size, kv_dim = config_.kv_dim(), hd = config_.head_dim();
    const int64_t hidden = config_.intermediate_size, heads = config_.num_attention_heads;
    const int64_t pos = static_cast<int64_t>(keys_[0].size());
    const std::vector<float>& embedding = tensors_.at("model.embed_tokens.weight");
    std::vector<double> x(embedding.begin() + token * dim, embedding.begin() + (token + 1) * dim);
    for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<double> h = Norm(x, tensors_.at(p + "input_layernorm.weight"));
      std::vector<double> q = Mat(tensors_.at(p + "self_attn.q_proj.weight"), h, dim);
      std::vector<double> k = Mat(tensors_.at(p + "self_attn.k_proj.weight"), h, kv_dim);
      Rope(q, pos);
      Rope(k, pos);
      keys_[l].push_back(k);
      values_[l].push_back(Mat(tensors_.at(p + "self_attn.v_proj.weight"), h, kv_dim));
      std::vector<double> attention(dim, 0.0);
      for (int64_t head = 0; head < heads; ++head) {
        const int64_t kv_offset = (head / (heads / config_.num_key_value_heads)) * hd;
        std::vector<double> scores;
        for (int64_t s = 0; s <= pos; ++s) {
          double score = 0;
          for (int64_t i = 0; i < hd; ++i) score += q[head * hd + i] * keys_[l][s][kv_offset + i];
          scores.push_back(score / std::sqrt(static_cast<double>(hd)));
        }
        double max = scores[0], sum = 0;
        for (double v : scores) max = std::max(max, v);
        for (double& v : scores) sum += (v = std::exp(v - max));
        for (int64_t s = 0; s <= pos; ++s) {
          for (int64_t i = 0; i < hd; ++i)
            attention[head * hd + i] += scores[s] / sum * values_[l][s][kv_offset + i];
        }
      }
      std::vector<double> out = Mat(tensors_.at(p + "self_attn.o_proj.weight"), attention, dim);
      for (int64_t i = 0; i < dim; ++i) x[i] += out[i];
      h = Norm(x, tensors_.at(p + "post_attention_layernorm.weight"));
      std::vector<double> gate = Mat(tensors_.at(p + "mlp.gate_proj.weight"), h, hidden);
      std::vector<double> up = Mat(tensors_.at(p + "mlp.up_proj.weight"), h, hidden);
      for (int64_t i = 0; i < hidden; ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      out = Mat(tensors_.at(p + "mlp.down_proj.weight"), gate, dim);
      for (int64_t i = 0; i < dim; ++i) x[i] += out[i];
    }
    const std::string head = config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    return Mat(tensors_.at(head), Norm(x, tensors_.at("model.norm.weight")), config_.vocab_size);
  }

 private:
  std::vector<double> Norm(const std::vector<double>& x, const std::vector<float>& weight) const {
    double mean_square = 0;
    for (double v : x) mean_square += v * v / x.size();
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      out[i] = weight[i] * x[i] / std::sqrt(mean_square + config_.rms_norm_eps);
    return out;
  }
  static std::vector<double> Mat(const std::vector<float>& w, const std::vector<double>& x, int64_t rows) {
    std::vector<double> out(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < x.size(); ++c) out[r] += w[r * x.size() + c] * x[c];
    }
    return out;
  }
  // Hugging Face's rotate-half: pairs (i, i + head_dim / 2) of each head.
  void Rope(std::vector<double>& v, int64_t pos) const {
    const int64_t hd = config_.head_dim();
    for (size_t head = 0; head < v.size(); head += hd) {
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double angle = pos / std::pow(config_.rope_theta, 2.0 * i / hd);
        const double a = v[head + i], b = v[head + i + hd / 2];
        v[head + i] = a * std::cos(angle) - b * std::sin(angle);
        v[head + i + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }

  ModelConfig config_;
  std::map<std::string, std::vector<float>> tensors_;
  std::vector<std::vector<std::vector<double>>> keys_, values_;  // (layers, pos, kv_dim)
};

constexpr uint64_t kSeed = 1234;

std::unique_ptr<Checkpoint> OpenToyModel(const ModelConfig& config, const std::string& name) {
  const std::string folder = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  Status written = WriteToyModel(folder, config, kSeed);
  EXPECT_TRUE(written.ok()) << written.error().message;
  auto checkpoint = Checkpoint::Open(folder);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  return std::move(*checkpoint);
}

RankShard Shard(int64_t begin, int64_t end, int64_t n_layers) {
  RankShard shard;
  shard.layers = {begin, end};
  shard.has_embedding = begin == 0;
  shard.has_head = end == n_layers;
  return shard;
}

// A stage of `shard` holding classifier rows `rows`, by default every row
// on the last stage and none elsewhere.
TransformerStage MakeStage(const Checkpoint& checkpoint, const RankShard& shard, ThreadPool& pool,
                           std::optional<RowRange> rows = std::nullopt) {
  const RowRange whole = {0, shard.has_head ? checkpoint.config().vocab_size : 0};
  auto weights = LoadStageWeights(checkpoint, shard, rows.value_or(whole), checkpoint);
  EXPECT_TRUE(weights.ok()) << weights.error().message;
  return TransformerStage(checkpoint.config(), std::move(*weights), 1,
                          checkpoint.config().max_position_embeddings, pool);
}

const std::vector<int32_t> kTokens = {1, 72, 105, 33, 200, 7, 3, 258, 100, 50};

// Runs `tokens` through `stages` in order, `chunk` positions per call, and
// returns the logits after every call.
std::vector<std::vector<float>> RunStages(std::vector<TransformerStage*> stages,
                                          const std::vector<int32_t>& tokens, int64_t chunk) {
  const int64_t dim = stages[0]->config().hidden_size;
  std::vector<std::vector<float>> logits;
  for (size_t pos = 0; pos < tokens.size(); pos += chunk) {
    const size_t n = std::min<size_t>(chunk, tokens.size() - pos);
    std::vector<float> x(n * dim);
    stages.front()->Embed(std::span<const int32_t>(tokens).subspan(pos, n), x);
    for (TransformerStage* stage : stages) stage->Forward(0, static_cast<int64_t>(pos), x);
    TransformerStage& last = *stages.back();
    CHECK_EQ(last.classifier_rows().size(), last.config().vocab_size) << "the last stage holds every row";
    std::vector<float> normed(dim);
    last.FinalNorm(std::span<const float>(x).last(dim), normed);
    logits.emplace_back(last.config().vocab_size);
    last.ClassifierSlice(normed, logits.back());
  }
  return logits;
}

class TransformerTest : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig Config() const {
    ToyModelShape shape;
    shape.dim = 32;
    shape.tie_embeddings = GetParam();
    shape.seq_len = 32;
    return ToyModelConfig(shape);
  }
};

TEST_P(TransformerTest, MatchesDoublePrecisionReferenceInCheckpointLayout) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "reference_tied" : "reference");
  ThreadPool pool(1);
  TransformerStage stage =
      MakeStage(*checkpoint, Shard(0, config.num_hidden_layers, config.num_hidden_layers), pool);
  // Tied: the embedding is held once, the classifier reads its rows.
  EXPECT_EQ(stage.weights().classifier.empty(), GetParam());
  ReferenceModel reference(config, kSeed);
  const std::vector<std::vector<float>> logits = RunStages({&stage}, kTokens, 1);
  for (size_t t = 0; t < kTokens.size(); ++t) {
    const std::vector<double> expected = reference.Step(kTokens[t]);
    for (int64_t v = 0; v < config.vocab_size; ++v) {
      ASSERT_NEAR(logits[t][v], expected[v], 1e-3 * (1 + std::abs(expected[v])))
          << "position " << t << " id " << v;
    }
  }
}

TEST_P(TransformerTest, StagesSplitAnywhereGiveBitIdenticalLogits) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "split_tied" : "split");
  const int64_t layers = config.num_hidden_layers;
  ThreadPool pool(1);
  TransformerStage whole = MakeStage(*checkpoint, Shard(0, layers, layers), pool);
  const std::vector<std::vector<float>> expected = RunStages({&whole}, kTokens, 4);
  TransformerStage first = MakeStage(*checkpoint, Shard(0, 1, layers), pool);
  TransformerStage middle = MakeStage(*checkpoint, Shard(1, 3, layers), pool);
  TransformerStage last = MakeStage(*checkpoint, Shard(3, layers, layers), pool);
  EXPECT_EQ(RunStages({&first, &middle, &last}, kTokens, 4), expected);
}

TEST_P(TransformerTest, BatchedPrefillAndThreadCountDoNotChangeBits) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "batch_tied" : "batch");
  const int64_t layers = config.num_hidden_layers;
  ThreadPool one(1), three(3);
  TransformerStage token_by_token = MakeStage(*checkpoint, Shard(0, layers, layers), one);
  const std::vector<float> expected = RunStages({&token_by_token}, kTokens, 1).back();
  TransformerStage batched = MakeStage(*checkpoint, Shard(0, layers, layers), three);
  EXPECT_EQ(RunStages({&batched}, kTokens, static_cast<int64_t>(kTokens.size())).back(), expected);
}

TEST_P(TransformerTest, ClassifierSlicesOnAnyStageConcatenateToTheWholeLogitsBitForBit) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "slices_tied" : "slices");
  const int64_t layers = config.num_hidden_layers;
  const int64_t vocab = config.vocab_size;
  ThreadPool pool(1), two(2);
  TransformerStage whole = MakeStage(*checkpoint, Shard(0, layers, layers), pool);
  const std::vector<float> expected = RunStages({&whole}, kTokens, 4).back();
  // The last stage normalizes; every stage's slice (an empty one included)
  // comes from the normed state, the middle one with two threads.
  TransformerStage first = MakeStage(*checkpoint, Shard(0, 1, layers), pool, RowRange{0, 101});
  TransformerStage middle = MakeStage(*checkpoint, Shard(1, 3, layers), two, RowRange{101, vocab - 3});
  TransformerStage last = MakeStage(*checkpoint, Shard(3, layers, layers), pool, RowRange{vocab - 3, vocab});
  TransformerStage none = MakeStage(*checkpoint, Shard(3, layers, layers), pool, RowRange{vocab, vocab});
  const int64_t dim = config.hidden_size;
  std::vector<float> x(kTokens.size() * dim);
  first.Embed(kTokens, x);
  for (TransformerStage* stage : {&first, &middle, &last}) stage->Forward(0, 0, x);
  std::vector<float> normed(dim);
  last.FinalNorm(std::span<const float>(x).last(dim), normed);
  std::vector<float> logits(vocab);
  for (TransformerStage* stage : {&first, &middle, &last, &none}) {
    const RowRange rows = stage->classifier_rows();
    stage->ClassifierSlice(normed, std::span<float>(logits).subspan(rows.begin, rows.size()));
  }
  EXPECT_EQ(logits, expected);
}

INSTANTIATE_TEST_SUITE_P(TiedAndSeparateHead, TransformerTest, ::testing::Bool());

TEST(HuggingFaceRopeRowsToAdjacent, InterleavesTheTwoHalvesOfEachHead) {
  // Two heads of head_dim 4, one column: rows hold their own index.
  std::vector<float> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  HuggingFaceRopeRowsToAdjacent(rows, 4, 1);
  EXPECT_EQ(rows, (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
}

TEST(ToyModel, SameSeedSameWeightsOtherSeedOtherWeights) {
  const ModelConfig config = ToyModelConfig({});
  const std::vector<ToyTensor> a = MakeToyModelTensors(config, 1);
  const std::vector<ToyTensor> b = MakeToyModelTensors(config, 1);
  const std::vector<ToyTensor> c = MakeToyModelTensors(config, 2);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a[3].data, b[3].data);
  EXPECT_NE(a[3].data, c[3].data);
  EXPECT_EQ(a.size(), 2 + 9 * static_cast<size_t>(config.num_hidden_layers) + 1);
}

}  // namespace
}  // namespace inferno
