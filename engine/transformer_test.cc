#include "engine/transformer.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/testing/thread_all_reduce.h"
#include "engine/toy_model.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "tensor/tensor_info.h"
#include "text/gguf_tokenizer.h"

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

// Stage `stage`'s tensor-parallel index `t` of the plan of a pp × tp grid.
RankShard Part(const ModelConfig& config, int pp, int tp, int stage, int t,
               std::optional<std::vector<int64_t>> layers_per_stage = std::nullopt) {
  Result<ShardPlan> plan = MakeShardPlan(config, pp, tp, layers_per_stage);
  CHECK(plan.ok()) << plan.error().message;
  return plan->ranks[static_cast<size_t>(plan->RankOf(stage, t))];
}

// The whole model on one rank.
RankShard Whole(const ModelConfig& config) { return Part(config, 1, 1, 0, 0); }

TransformerStage MakeStage(const Checkpoint& checkpoint, const RankShard& part, ThreadPool& pool,
                           AllReduce* tensor_parallel = nullptr) {
  auto weights = LoadStageWeights(checkpoint, part);
  EXPECT_TRUE(weights.ok()) << weights.error().message;
  return TransformerStage(checkpoint.config(), std::move(*weights), 1,
                          checkpoint.config().max_position_embeddings, pool, tensor_parallel);
}

const std::vector<int32_t> kTokens = {1, 72, 105, 33, 200, 7, 3, 258, 100, 50};

// Runs `tokens` through `stages` in order, `chunk` positions per call, and
// returns the logits after every call: every stage's classifier rows from
// the last stage's final-normed state.
std::vector<std::vector<float>> RunStages(std::vector<TransformerStage*> stages,
                                          const std::vector<int32_t>& tokens, int64_t chunk) {
  const int64_t dim = stages[0]->config().hidden_size;
  std::vector<std::vector<float>> logits;
  for (size_t pos = 0; pos < tokens.size(); pos += chunk) {
    const size_t n = std::min<size_t>(chunk, tokens.size() - pos);
    std::vector<float> x(n * dim);
    stages.front()->Embed(std::span<const int32_t>(tokens).subspan(pos, n), x);
    for (TransformerStage* stage : stages) CHECK(stage->Forward(0, static_cast<int64_t>(pos), x).ok());
    TransformerStage& last = *stages.back();
    std::vector<float> normed(dim);
    last.FinalNorm(std::span<const float>(x).last(dim), normed);
    logits.emplace_back(last.config().vocab_size);
    for (TransformerStage* stage : stages) {
      const RowRange rows = stage->classifier_rows();
      stage->ClassifierSlice(normed, std::span<float>(logits.back()).subspan(rows.begin, rows.size()));
    }
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
  TransformerStage stage = MakeStage(*checkpoint, Whole(config), pool);
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

// Weights used where they lie in the file: every f32 tensor is in place,
// the checkpoint may close before the stage runs, and the logits are the
// same bits as with copied weights — for a whole stage and for a
// tensor-parallel part's slices of rows.
TEST_P(TransformerTest, WeightsInPlaceGiveTheSameBitsAsCopiedOnes) {
  const ModelConfig config = Config();
  const std::string name = GetParam() ? "in_place_tied" : "in_place";
  for (const RankShard& part : {Whole(config), Part(config, 2, 2, 0, 1)}) {
    std::optional<StageWeights> mapped, copied;
    {
      auto checkpoint = OpenToyModel(config, name);
      auto in_place = LoadStageWeights(*checkpoint, part, WeightPlacement::kInPlace);
      ASSERT_TRUE(in_place.ok()) << in_place.error().message;
      auto copy = LoadStageWeights(*checkpoint, part, WeightPlacement::kCopy);
      ASSERT_TRUE(copy.ok()) << copy.error().message;
      mapped = std::move(*in_place);
      copied = std::move(*copy);
    }
    EXPECT_EQ(copied->ByteSize().in_place, 0);
    EXPECT_EQ(mapped->ByteSize().total, copied->ByteSize().total);
    // Only o_proj and down_proj are sliced by columns, which must be copied.
    const int64_t column_slices =
        part.heads.size() == config.num_attention_heads
            ? 0
            : part.layers.size() * static_cast<int64_t>(mapped->layers[0].wo.bytes().size() +
                                                        mapped->layers[0].w_down.bytes().size());
    EXPECT_EQ(mapped->ByteSize().in_place, mapped->ByteSize().total - column_slices);
    if (part.heads.size() != config.num_attention_heads) continue;  // needs its group to run
    ThreadPool pool(1);
    const int64_t context = config.max_position_embeddings;
    TransformerStage from_mapping(config, std::move(*mapped), 1, context, pool);
    TransformerStage from_copy(config, std::move(*copied), 1, context, pool);
    EXPECT_EQ(RunStages({&from_mapping}, kTokens, 3), RunStages({&from_copy}, kTokens, 3));
  }
}

// GGUF matrices of other types are used in place too, except q and k, which
// GGUF stores in Meta's interleaved row order: the same bits as copied.
TEST_P(TransformerTest, TypedGgufWeightsInPlaceGiveTheSameBitsAsCopiedOnes) {
  const ModelConfig config = Config();
  for (const DType dtype : {DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/in_place_" +
                             std::string(DTypeName(dtype)) + (GetParam() ? "_tied" : "") + ".gguf";
    ASSERT_TRUE(WriteToyModelGguf(path, config, kSeed, dtype, ByteFallbackVocabulary(config.vocab_size)));
    std::optional<StageWeights> mapped, copied;
    {
      auto checkpoint = Checkpoint::Open(path);
      ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
      auto in_place = LoadStageWeights(**checkpoint, Whole(config), WeightPlacement::kInPlace);
      ASSERT_TRUE(in_place.ok()) << in_place.error().message;
      auto copy = LoadStageWeights(**checkpoint, Whole(config), WeightPlacement::kCopy);
      ASSERT_TRUE(copy.ok()) << copy.error().message;
      mapped = std::move(*in_place);
      copied = std::move(*copy);
    }
    EXPECT_EQ(mapped->layers[0].w_down.dtype(), dtype);
    EXPECT_TRUE(mapped->layers[0].w_down.in_place());
    EXPECT_EQ(copied->ByteSize().in_place, 0);
    EXPECT_EQ(mapped->ByteSize().total, copied->ByteSize().total);
    int64_t reordered = 0;
    for (const LayerWeights& layer : mapped->layers) {
      reordered += static_cast<int64_t>(layer.wq.bytes().size() + layer.wk.bytes().size());
    }
    EXPECT_EQ(mapped->ByteSize().in_place, mapped->ByteSize().total - reordered);
    ThreadPool pool(1);
    const int64_t context = config.max_position_embeddings;
    TransformerStage from_mapping(config, std::move(*mapped), 1, context, pool);
    TransformerStage from_copy(config, std::move(*copied), 1, context, pool);
    EXPECT_EQ(RunStages({&from_mapping}, kTokens, 3), RunStages({&from_copy}, kTokens, 3));
  }
}

// Layers split unevenly, classifier rows on several stages (one computed
// with two threads): the same bits as one stage.
TEST_P(TransformerTest, StagesSplitAnywhereGiveBitIdenticalLogits) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "split_tied" : "split");
  ThreadPool pool(1), two(2);
  TransformerStage whole = MakeStage(*checkpoint, Whole(config), pool);
  const std::vector<std::vector<float>> expected = RunStages({&whole}, kTokens, 4);
  const std::vector<int64_t> layers = {1, 2, 1};
  TransformerStage first = MakeStage(*checkpoint, Part(config, 3, 1, 0, 0, layers), pool);
  TransformerStage middle = MakeStage(*checkpoint, Part(config, 3, 1, 1, 0, layers), two);
  TransformerStage last = MakeStage(*checkpoint, Part(config, 3, 1, 2, 0, layers), pool);
  int with_rows = 0;
  for (TransformerStage* stage : {&first, &middle, &last}) with_rows += stage->classifier_rows().size() > 0;
  EXPECT_GE(with_rows, 2);
  EXPECT_EQ(RunStages({&first, &middle, &last}, kTokens, 4), expected);
}

// Every rank of a tensor-parallel group ends Forward with the same bits, and
// those match one rank's within rounding, for even and uneven splits (3
// ranks: heads 2, 1, 1 over 2 KV heads, which ranks 1 and 2 share).
TEST_P(TransformerTest, TensorParallelRanksAgreeBitForBitAndMatchOneRank) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "tp_tied" : "tp");
  ThreadPool pool(1);
  TransformerStage whole = MakeStage(*checkpoint, Whole(config), pool);
  const std::vector<float> expected = RunStages({&whole}, kTokens, 4).back();
  for (int tp : {2, 3, 4}) {
    ThreadAllReduce sums(tp, std::chrono::seconds(30));
    // Each rank: its hidden states after the layers, and its slice of the logits.
    std::vector<std::pair<std::vector<float>, std::pair<RowRange, std::vector<float>>>> results(tp);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < tp; ++rank) {
      ranks.emplace_back([&, rank] {
        ThreadPool rank_pool(1);
        TransformerStage stage =
            MakeStage(*checkpoint, Part(config, 1, tp, 0, rank), rank_pool, &sums.rank(rank));
        const int64_t dim = config.hidden_size;
        std::vector<float> x(kTokens.size() * dim);
        stage.Embed(kTokens, x);
        for (size_t pos = 0; pos < kTokens.size(); pos += 4) {
          const size_t n = std::min<size_t>(4, kTokens.size() - pos);
          CHECK(stage.Forward(0, static_cast<int64_t>(pos), std::span<float>(x).subspan(pos * dim, n * dim))
                    .ok());
        }
        std::vector<float> normed(dim);
        stage.FinalNorm(std::span<const float>(x).last(dim), normed);
        std::vector<float> logits(stage.classifier_rows().size());
        stage.ClassifierSlice(normed, logits);
        results[static_cast<size_t>(rank)] = {x, {stage.classifier_rows(), logits}};
      });
    }
    for (std::thread& rank : ranks) rank.join();
    std::vector<float> logits(config.vocab_size);
    for (const auto& [x, slice] : results) {
      EXPECT_EQ(x, results[0].first) << "tp " << tp << ": ranks disagree";
      std::copy(slice.second.begin(), slice.second.end(), logits.begin() + slice.first.begin);
    }
    float largest = 0, difference = 0;
    for (int64_t v = 0; v < config.vocab_size; ++v) {
      largest = std::max(largest, std::abs(expected[v]));
      difference = std::max(difference, std::abs(logits[v] - expected[v]));
    }
    EXPECT_LE(difference, 1e-5f * largest) << "tp " << tp;
  }
}

TEST_P(TransformerTest, BatchedPrefillAndThreadCountDoNotChangeBits) {
  const ModelConfig config = Config();
  auto checkpoint = OpenToyModel(config, GetParam() ? "batch_tied" : "batch");
  ThreadPool one(1), three(3);
  TransformerStage token_by_token = MakeStage(*checkpoint, Whole(config), one);
  const std::vector<float> expected = RunStages({&token_by_token}, kTokens, 1).back();
  TransformerStage batched = MakeStage(*checkpoint, Whole(config), three);
  EXPECT_EQ(RunStages({&batched}, kTokens, static_cast<int64_t>(kTokens.size())).back(), expected);
}

// One Forward over positions of several slots — single decode positions at
// different places of their sequences, and a prompt chunk — and one
// ClassifierSlice over their final-normed rows give every row the bits it
// gets run alone.
TEST_P(TransformerTest, BatchOfSeveralSlotsGivesEachRowItsBitsAlone) {
  const ModelConfig config = Config();
  const int64_t dim = config.hidden_size;
  const int64_t vocab = config.vocab_size;
  auto checkpoint = OpenToyModel(config, GetParam() ? "slots_tied" : "slots");
  ThreadPool pool(2);
  const auto make = [&] {
    auto weights = LoadStageWeights(*checkpoint, Whole(config));
    EXPECT_TRUE(weights.ok()) << weights.error().message;
    return TransformerStage(config, std::move(*weights), 3, config.max_position_embeddings, pool);
  };
  TransformerStage alone = make(), batched = make();
  // Slots 0 and 2 have run prompts of 4 and 7 tokens; slot 1 starts.
  const std::vector<std::vector<int32_t>> prompts = {{1, 72, 105, 33}, {}, {3, 258, 100, 50, 9, 8, 7}};
  for (TransformerStage* stage : {&alone, &batched}) {
    for (int slot : {0, 2}) {
      std::vector<float> x(prompts[slot].size() * dim);
      stage->Embed(prompts[slot], x);
      ASSERT_TRUE(stage->Forward(slot, 0, x).ok());
    }
  }
  // The batch: slot 2's next token, slot 1's first two, slot 0's next.
  const std::vector<SlotPositions> batch = {{2, 7, 1}, {1, 0, 2}, {0, 4, 1}};
  const std::vector<int32_t> tokens = {11, 1, 40, 200};
  std::vector<float> x(tokens.size() * dim);
  batched.Embed(tokens, x);
  ASSERT_TRUE(batched.Forward(batch, x).ok());
  std::vector<float> normed(tokens.size() * dim), logits(tokens.size() * vocab);
  for (size_t t = 0; t < tokens.size(); ++t) {
    batched.FinalNorm(std::span<const float>(x).subspan(t * dim, dim),
                      std::span<float>(normed).subspan(t * dim, dim));
  }
  batched.ClassifierSlice(normed, logits);

  size_t row = 0;
  for (const SlotPositions& part : batch) {
    std::vector<float> y(part.n * dim);
    alone.Embed(std::span<const int32_t>(tokens).subspan(row, part.n), y);
    ASSERT_TRUE(alone.Forward(part.slot, part.pos, y).ok());
    EXPECT_EQ(y, std::vector<float>(x.begin() + row * dim, x.begin() + (row + part.n) * dim))
        << "slot " << part.slot;
    for (int64_t i = 0; i < part.n; ++i, ++row) {
      std::vector<float> one_normed(dim), one_logits(vocab);
      alone.FinalNorm(std::span<const float>(y).subspan(i * dim, dim), one_normed);
      alone.ClassifierSlice(one_normed, one_logits);
      EXPECT_EQ(one_logits,
                std::vector<float>(logits.begin() + row * vocab, logits.begin() + (row + 1) * vocab))
          << "slot " << part.slot << " position " << part.pos + i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TiedAndSeparateHead, TransformerTest, ::testing::Bool());

// Gemma's local layers keep only their window's positions (plus one call's
// rows) in a ring, and prompts run token by token or in chunks that wrap the
// ring give the same bits.
TEST(SlidingWindow, LocalLayersKeepTheirWindowAndChunksWrapTheRingExactly) {
  ToyModelShape shape;
  shape.architecture = "Gemma3ForCausalLM";
  shape.dim = 32;
  shape.head_dim = 16;
  shape.seq_len = 200;
  shape.sliding_window = 4;
  const ModelConfig config = ToyModelConfig(shape);  // 4 layers, 0 and 2 local
  auto checkpoint = OpenToyModel(config, "sliding");
  ThreadPool pool(2);
  TransformerStage by_token = MakeStage(*checkpoint, Whole(config), pool);
  TransformerStage in_chunks = MakeStage(*checkpoint, Whole(config), pool);
  const int64_t kv_bytes = config.kv_dim() * static_cast<int64_t>(sizeof(float)) * 2;
  const int64_t ring = shape.sliding_window + TransformerStage::kMaxPositionsPerCall - 1;
  EXPECT_EQ(by_token.KvCacheBytes(), kv_bytes * (2 * shape.seq_len + 2 * ring));
  std::vector<int32_t> tokens;
  for (int i = 0; i < 150; ++i) tokens.push_back(3 + (i * 37) % 250);
  const std::vector<std::vector<float>> expected = RunStages({&by_token}, tokens, 1);
  const std::vector<std::vector<float>> chunked = RunStages({&in_chunks}, tokens, 50);
  ASSERT_EQ(chunked.size(), 3u);
  EXPECT_EQ(chunked[0], expected[49]);
  EXPECT_EQ(chunked[1], expected[99]);
  EXPECT_EQ(chunked[2], expected[149]);
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
