// llama2.c v0 files through Checkpoint::Open.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loader/checkpoint.h"
#include "loader/llama2c_format.h"
#include "loader/test_models.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

std::string HeaderBytes(std::vector<int32_t> fields) {
  return std::string(reinterpret_cast<const char*>(fields.data()), fields.size() * sizeof(int32_t));
}

TEST(Llama2cCheckpoint, SeparateClassifierGivesHuggingFaceNamesAndRopeOrder) {
  const std::string path = TestPath("untied.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(path, TestConfig(3, false)));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  const ModelConfig& c = (*checkpoint)->config();
  EXPECT_EQ(c.hidden_size, 16);
  EXPECT_EQ(c.intermediate_size, 40);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.vocab_size, 24);
  EXPECT_EQ(c.max_position_embeddings, 32);
  EXPECT_FALSE(c.tie_word_embeddings);
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(Llama2cCheckpoint, SharedClassifierTiesWordEmbeddings) {
  const std::string path = TestPath("tied.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(path, TestConfig(2, true)));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_TRUE((*checkpoint)->config().tie_word_embeddings);
  EXPECT_FALSE((*checkpoint)->Find("lm_head.weight"));
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(Llama2cCheckpoint, TruncatedFile) {
  const std::string path = TestPath("truncated.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(path, TestConfig()));
  const uint64_t size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 4);
  const std::string message = ExpectOpenFails(path);
  EXPECT_NE(message.find(path + ": truncated: file has " + std::to_string(size - 4) + " bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("needs " + std::to_string(size)), std::string::npos) << message;
}

TEST(Llama2cCheckpoint, TrailingBytes) {
  const std::string path = TestPath("trailing.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(path, TestConfig()));
  std::ofstream(path, std::ios::app | std::ios::binary) << "xyz";
  EXPECT_NE(ExpectOpenFails(path).find("trailing bytes"), std::string::npos);
}

TEST(Llama2cCheckpoint, FileShorterThanHeader) {
  const std::string path = TestPath("short.bin");
  ASSERT_TRUE(WriteBytes(path, HeaderBytes({64, 172, 5})));
  EXPECT_EQ(ExpectOpenFails(path), path + ": truncated: 12 bytes, shorter than the 28-byte llama2.c header");
}

TEST(Llama2cCheckpoint, NonPositiveHeaderField) {
  const std::string path = TestPath("negative.bin");
  ASSERT_TRUE(WriteBytes(path, HeaderBytes({64, 172, -5, 8, 4, 512, 512})));
  EXPECT_EQ(ExpectOpenFails(path), path + ": llama2.c header field n_layers = -5 is not positive");
}

TEST(Llama2cCheckpoint, InconsistentHeads) {
  const std::string path = TestPath("heads.bin");
  ASSERT_TRUE(WriteBytes(path, HeaderBytes({64, 172, 5, 8, 3, 512, 512})));
  EXPECT_NE(ExpectOpenFails(path).find("num_key_value_heads = 3"), std::string::npos);
}

TEST(Llama2cCheckpoint, HugeHeaderSizesDoNotOverflow) {
  const std::string path = TestPath("huge.bin");
  const int32_t big = 2147483136;  // 2^31 - 512: 256 heads of an even size
  ASSERT_TRUE(WriteBytes(path, HeaderBytes({big, big, big, 256, 256, -big, big})));
  const std::string message = ExpectOpenFails(path);
  EXPECT_NE(message.find("needs more than 2^64"), std::string::npos) << message;
}

TEST(Llama2cCheckpoint, Stories260KFromSharedModels) {
  const std::string path = SharedModelPath("stories260K.bin");
  if (path.empty()) GTEST_SKIP() << "../shared/models/stories260K.bin is absent (fresh clone): skipped";
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  const ModelConfig& c = (*checkpoint)->config();
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);

  // Compare with the raw file: k_proj of layer 1 sits after the embedding,
  // the five rms_att vectors, the five wq and layer 0's wk.
  std::ifstream in(path, std::ios::binary);
  const int64_t dim = 64, kv_dim = 32, head_dim = 8;
  const int64_t offset = 28 + 4 * (512 * dim + 5 * dim + 5 * dim * dim + kv_dim * dim);
  std::vector<float> raw(static_cast<size_t>(kv_dim * dim));
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * sizeof(float)));
  ASSERT_TRUE(in);
  std::vector<float> k(raw.size());
  ASSERT_TRUE((*checkpoint)->ReadF32("model.layers.1.self_attn.k_proj.weight", k));
  for (int64_t row = 0; row < kv_dim; ++row) {
    // Hugging Face row h*8 + j*4 + i is llama2.c row h*8 + 2i + j.
    const int64_t h = row / head_dim, j = (row % head_dim) / 4, i = row % 4;
    const int64_t stored = h * head_dim + 2 * i + j;
    for (int64_t col = 0; col < dim; ++col) {
      ASSERT_EQ(k[static_cast<size_t>(row * dim + col)], raw[static_cast<size_t>(stored * dim + col)])
          << "row " << row << " col " << col;
    }
  }
}

}  // namespace
}  // namespace inferno
