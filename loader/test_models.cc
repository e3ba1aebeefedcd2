#include "loader/test_models.h"

#include "loader/gguf_writer.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loader/safetensors_writer.h"

namespace inferno {

ModelConfig TestConfig(int64_t layers, bool tied) {
  ModelConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 40;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.vocab_size = 24;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  return c;
}

ModelConfig TestMixtureConfig(const std::string& architecture, int64_t experts, int64_t per_token,
                              int64_t expert_hidden) {
  ModelConfig c = TestConfig(2, false);
  c.architecture = architecture;
  c.num_experts = experts;
  c.num_experts_per_tok = per_token;
  c.expert_intermediate_size = expert_hidden;
  return c;
}

float TestWeight(const std::string& name, int64_t i) {
  uint32_t h = 2166136261u;
  for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * 16777619u;
  // k/64 with |k| <= 100: exact in F16 and BF16.
  return static_cast<float>(static_cast<int64_t>((h % 97 + static_cast<uint64_t>(i)) % 200) - 100) / 64.0f;
}

std::vector<float> TestWeights(const TensorSpec& spec) {
  int64_t n = 1;
  for (int64_t d : spec.shape) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = TestWeight(spec.name, i);
  return values;
}

std::string ExpectOpenFails(const std::string& path) {
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  if (checkpoint) {
    ADD_FAILURE() << "opened a bad checkpoint " << path;
    return "";
  }
  EXPECT_EQ(checkpoint.error().message.find('\n'), std::string::npos);
  return checkpoint.error().message;
}

void ExpectHoldsTestWeights(const Checkpoint& checkpoint) {
  for (const TensorSpec& spec : LlamaTensorSpecs(checkpoint.config())) {
    Result<TensorInfo> info = checkpoint.Find(spec.name);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->shape, spec.shape) << spec.name;
    std::vector<float> values(static_cast<size_t>(info->num_elements()));
    ASSERT_TRUE(checkpoint.ReadF32(spec.name, values));
    EXPECT_EQ(values, TestWeights(spec)) << spec.name;
  }
}

std::vector<float> ExpectedSliceValues(const Checkpoint& original, const TensorSlice& slice) {
  const TensorInfo info = *original.Find(slice.name);
  std::vector<float> all(static_cast<size_t>(info.num_elements()));
  EXPECT_TRUE(original.ReadF32(slice.name, all));
  if (slice.split_dim < 0) return all;
  const int64_t rows = info.shape[0], cols = info.shape[1];
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t index = slice.split_dim == 0 ? r : c;
      if (index >= slice.begin && index < slice.end) out.push_back(all[static_cast<size_t>(r * cols + c)]);
    }
  }
  return out;
}

void ExpectRankWeightsMatch(const Checkpoint& rank_weights, const Checkpoint& original,
                            const RankShard& shard) {
  EXPECT_EQ(rank_weights.tensors().size(), shard.tensors.size()) << "rank " << shard.rank;
  for (const TensorSlice& slice : shard.tensors) {
    const std::vector<float> expected = ExpectedSliceValues(original, slice);
    std::vector<float> got(expected.size());
    Status s = rank_weights.ReadF32(slice.name, got);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0)
        << "rank " << shard.rank << " tensor " << slice.name;
  }
}

Status WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return Error::Io(path + ": write failed");
  return {};
}

Status WriteTestSafetensorsModel(const std::string& folder, const ModelConfig& config) {
  std::filesystem::create_directories(folder);
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  std::vector<std::vector<float>> values;
  std::vector<NamedTensorF32> tensors;
  for (const TensorSpec& spec : specs) values.push_back(TestWeights(spec));
  for (size_t i = 0; i < specs.size(); ++i) tensors.push_back({specs[i].name, specs[i].shape, values[i]});
  if (Status s = WriteBytes(folder + "/config.json", ModelConfigToJson(config)); !s) return s;
  return WriteSafetensorsF32(folder + "/model.safetensors", tensors, {{"format", "pt"}});
}

Status WriteTestGgufModel(const std::string& path, const ModelConfig& config, DType matrix_type) {
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  std::vector<std::vector<float>> values;
  std::vector<NamedTensorF32> tensors;
  for (const TensorSpec& spec : specs) values.push_back(TestWeights(spec));
  for (size_t i = 0; i < specs.size(); ++i) tensors.push_back({specs[i].name, specs[i].shape, values[i]});
  GgufVocabulary vocabulary;
  vocabulary.model = kGgufLlamaTokenizer;
  vocabulary.bos_id = 1;
  vocabulary.eos_id = 2;
  for (int64_t id = 0; id < config.vocab_size; ++id) {
    vocabulary.tokens.push_back(id == 0   ? "<unk>"
                                : id == 1 ? "<s>"
                                : id == 2 ? "</s>"
                                          : "t" + std::to_string(id));
    vocabulary.scores.push_back(0.0f);
  }
  return WriteGgufLlama(path, config, tensors, GgufFileType{matrix_type}, vocabulary, "test model");
}

Status WriteTestLlama2cModel(const std::string& path, const ModelConfig& c) {
  std::string bytes;
  auto put = [&](const void* data, size_t n) { bytes.append(static_cast<const char*>(data), n); };
  const int32_t header[7] = {static_cast<int32_t>(c.hidden_size),
                             static_cast<int32_t>(c.intermediate_size),
                             static_cast<int32_t>(c.num_hidden_layers),
                             static_cast<int32_t>(c.num_attention_heads),
                             static_cast<int32_t>(c.num_key_value_heads),
                             static_cast<int32_t>(c.tie_word_embeddings ? c.vocab_size : -c.vocab_size),
                             static_cast<int32_t>(c.max_position_embeddings)};
  put(header, sizeof(header));
  auto put_tensor = [&](const TensorSpec& spec, int64_t rope_heads) {
    const std::vector<float> hf = TestWeights(spec);
    const int64_t rows = spec.shape[0];
    const int64_t cols = static_cast<int64_t>(hf.size()) / rows;
    for (int64_t stored = 0; stored < rows; ++stored) {
      int64_t hf_row = stored;
      if (rope_heads > 0) {  // stored row h*hd + 2i + j holds HF row h*hd + j*hd/2 + i
        const int64_t hd = rows / rope_heads, h = stored / hd, w = stored % hd;
        hf_row = h * hd + (w % 2) * (hd / 2) + w / 2;
      }
      put(hf.data() + hf_row * cols, static_cast<size_t>(cols) * sizeof(float));
    }
  };
  put_tensor(EmbeddingSpec(c), 0);
  const std::pair<int, int64_t> order[] = {
      {0, 0}, {1, c.num_attention_heads}, {2, c.num_key_value_heads}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {8, 0},
      {7, 0}};
  for (const auto& [suffix, rope_heads] : order) {
    for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
      put_tensor(LayerTensorSpecs(c, layer)[suffix], rope_heads);
    }
  }
  put_tensor(FinalNormSpec(c), 0);
  const std::vector<float> rope_tables(static_cast<size_t>(c.max_position_embeddings * c.head_dim()), 9.0f);
  put(rope_tables.data(), rope_tables.size() * sizeof(float));
  if (!c.tie_word_embeddings) put_tensor(LmHeadSpec(c), 0);
  return WriteBytes(path, bytes);
}

std::string SharedModelPath(const std::string& name) {
  std::error_code ec;
  std::filesystem::path models;
  if (const char* env = std::getenv("INFERNO_SHARED_MODELS")) {
    models = env;
  } else if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const char* workspace = std::getenv("TEST_WORKSPACE");
    const std::filesystem::path anchor =
        std::filesystem::path(srcdir) / (workspace ? workspace : "inferno") / "loader" / "test_models.h";
    // The runfile links to the source tree, whose sibling is ../shared.
    models = std::filesystem::canonical(anchor, ec).parent_path().parent_path().parent_path() / "shared" /
             "models";
    if (ec) return "";
  }
  const std::filesystem::path path = models / name;
  return std::filesystem::exists(path, ec) ? path.string() : "";
}

std::string TestPath(const std::string& name, bool folder) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  if (folder) std::filesystem::create_directories(path);
  return path;
}

}  // namespace inferno
