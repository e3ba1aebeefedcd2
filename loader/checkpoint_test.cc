#include "loader/checkpoint.h"

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loader/mapped_checkpoint.h"
#include "loader/safetensors_format.h"
#include "loader/test_models.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

// The bytes of a safetensors file holding `specs` (TestWeights values) in
// `dtype`.
std::string SafetensorsBytes(const std::vector<TensorSpec>& specs, DType dtype) {
  std::vector<TensorInfo> infos;
  for (const TensorSpec& s : specs) infos.push_back({s.name, dtype, s.shape});
  std::string bytes = EncodeSafetensorsHeader(infos, {});
  for (const TensorSpec& s : specs) {
    for (float v : TestWeights(s)) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (dtype == DType::kF32) {
        bytes.append(reinterpret_cast<const char*>(&bits), 4);
      } else if (dtype == DType::kBF16) {
        const uint16_t b = static_cast<uint16_t>(bits >> 16);
        bytes.append(reinterpret_cast<const char*>(&b), 2);
      } else {  // F16 of k/64, |k| <= 100: exponent rebias, mantissa truncation is exact
        const uint32_t sign = (bits >> 16) & 0x8000u, exp = (bits >> 23) & 0xffu, mant = bits & 0x7fffffu;
        const uint16_t h =
            v == 0.0f ? 0 : static_cast<uint16_t>(sign | ((exp - 127 + 15) << 10) | (mant >> 13));
        bytes.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
  }
  return bytes;
}

TEST(CheckpointOpen, SafetensorsFolderHoldsEveryTensor) {
  const std::string folder = TestPath("folder", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(folder, TestConfig()));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ((*checkpoint)->config().num_hidden_layers, 3);
  EXPECT_EQ((*checkpoint)->tensors().size(), LlamaTensorSpecs(TestConfig()).size());
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(CheckpointOpen, SingleSafetensorsFileReadsConfigBesideIt) {
  const std::string folder = TestPath("single", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(folder, TestConfig(2, true)));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder + "/model.safetensors");
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_TRUE((*checkpoint)->config().tie_word_embeddings);
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(CheckpointOpen, HalfPrecisionTensorsAreConvertedToF32) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const std::string folder = TestPath(std::string("half_") + std::string(DTypeName(dtype)), true);
    ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(TestConfig())));
    ASSERT_TRUE(
        WriteBytes(folder + "/model.safetensors", SafetensorsBytes(LlamaTensorSpecs(TestConfig()), dtype)));
    Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
    ASSERT_TRUE(checkpoint) << checkpoint.error().message;
    EXPECT_EQ((*checkpoint)->tensors()[0].dtype, dtype);
    ExpectHoldsTestWeights(**checkpoint);
  }
}

TEST(CheckpointOpen, ReadRowsF32ReadsARowRange) {
  const std::string folder = TestPath("rows", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(folder, TestConfig()));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
  ASSERT_TRUE(checkpoint);
  const TensorSpec spec = LayerTensorSpecs(TestConfig(), 1)[6];  // gate_proj (40, 16)
  std::vector<float> rows(3 * 16);
  ASSERT_TRUE((*checkpoint)->ReadRowsF32(spec.name, 5, 8, rows));
  const std::vector<float> all = TestWeights(spec);
  EXPECT_EQ(rows, std::vector<float>(all.begin() + 5 * 16, all.begin() + 8 * 16));
  EXPECT_FALSE((*checkpoint)->ReadRowsF32(spec.name, 38, 41, rows));
  std::vector<float> too_small(5);
  EXPECT_FALSE((*checkpoint)->ReadRowsF32(spec.name, 0, 1, too_small));
  EXPECT_FALSE((*checkpoint)->ReadF32("no.such.tensor", too_small));
}

TEST(CheckpointOpen, ReadRowsStoredGivesTheStoredBytesOfARowRange) {
  const std::string folder = TestPath("stored_rows", true);
  ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(TestConfig())));
  ASSERT_TRUE(WriteBytes(folder + "/model.safetensors",
                         SafetensorsBytes(LlamaTensorSpecs(TestConfig()), DType::kBF16)));
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  const TensorSpec spec = LayerTensorSpecs(TestConfig(), 1)[6];  // gate_proj (40, 16)
  std::vector<std::byte> stored(3 * 16 * 2);
  ASSERT_TRUE((*checkpoint)->ReadRowsStored(spec.name, 5, 8, stored));
  std::vector<float> widened(3 * 16), converted(3 * 16);
  ConvertToF32(DType::kBF16, stored.data(), widened);
  ASSERT_TRUE((*checkpoint)->ReadRowsF32(spec.name, 5, 8, converted));
  EXPECT_EQ(widened, converted);
  std::vector<std::byte> f32_sized(3 * 16 * 4);
  const Status wrong = (*checkpoint)->ReadRowsStored(spec.name, 5, 8, f32_sized);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("output holds 192 bytes, rows [5, 8) hold 96 bytes"),
            std::string::npos)
      << wrong.error().message;
  EXPECT_FALSE((*checkpoint)->ReadRowsStored(spec.name, 38, 41, stored));
}

// Writes a Hugging Face sharded checkpoint: tensors alternate between two
// files; `file_names` lets a test point the index elsewhere.
void WriteShardedModel(const std::string& folder, const std::vector<std::string>& file_names) {
  const ModelConfig config = TestConfig();
  ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(config)));
  std::vector<TensorSpec> parts[2];
  nlohmann::json weight_map;
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  for (size_t i = 0; i < specs.size(); ++i) {
    parts[i % 2].push_back(specs[i]);
    weight_map[specs[i].name] = file_names[i % 2];
  }
  for (int p = 0; p < 2; ++p) {
    const std::string name = "model-0000" + std::to_string(p + 1) + "-of-00002.safetensors";
    ASSERT_TRUE(WriteBytes(folder + "/" + name, SafetensorsBytes(parts[p], DType::kBF16)));
  }
  const nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
  ASSERT_TRUE(WriteBytes(folder + "/model.safetensors.index.json", index.dump()));
}

TEST(CheckpointOpen, HuggingFaceShardedCheckpointHoldsEveryTensor) {
  const std::string folder = TestPath("sharded", true);
  WriteShardedModel(folder, {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"});
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(folder);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(CheckpointOpen, IndexPointingOutsideItsFolder) {
  const std::string folder = TestPath("outside/model", true);
  WriteShardedModel(folder, {"model-00001-of-00002.safetensors", "../model-00002-of-00002.safetensors"});
  const std::string message = ExpectOpenFails(folder);
  EXPECT_NE(message.find("model.safetensors.index.json"), std::string::npos) << message;
  EXPECT_NE(message.find("'../model-00002-of-00002.safetensors' lies outside"), std::string::npos) << message;
  WriteShardedModel(folder, {"model-00001-of-00002.safetensors", "/etc/passwd"});
  EXPECT_NE(ExpectOpenFails(folder).find("'/etc/passwd' lies outside"), std::string::npos);
}

TEST(CheckpointOpen, IndexListingATensorItsFileLacks) {
  const std::string folder = TestPath("index_wrong_file", true);
  // Both halves claimed by file 1: the tensors of file 2 are not listed for it.
  WriteShardedModel(folder, {"model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors"});
  const std::string message = ExpectOpenFails(folder);
  EXPECT_NE(message.find("is not in the file"), std::string::npos) << message;
}

TEST(CheckpointOpen, TensorMissingForTheConfig) {
  const std::string folder = TestPath("missing", true);
  std::vector<TensorSpec> specs = LlamaTensorSpecs(TestConfig());
  specs.pop_back();  // lm_head
  ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(TestConfig())));
  ASSERT_TRUE(WriteBytes(folder + "/model.safetensors", SafetensorsBytes(specs, DType::kF32)));
  const std::string message = ExpectOpenFails(folder);
  EXPECT_NE(message.find("tensor 'lm_head.weight' is missing"), std::string::npos) << message;
}

TEST(CheckpointOpen, TensorOfWrongShapeForTheConfig) {
  const std::string folder = TestPath("wrong_shape", true);
  std::vector<TensorSpec> specs = LlamaTensorSpecs(TestConfig());
  specs[1].shape = {15};  // input_layernorm of layer 0
  ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(TestConfig())));
  ASSERT_TRUE(WriteBytes(folder + "/model.safetensors", SafetensorsBytes(specs, DType::kF32)));
  const std::string message = ExpectOpenFails(folder);
  EXPECT_NE(message.find("'model.layers.0.input_layernorm.weight' has shape [15] but the config needs [16]"),
            std::string::npos)
      << message;
}

TEST(CheckpointOpen, TruncatedSafetensorsFile) {
  const std::string folder = TestPath("truncated", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(folder, TestConfig()));
  std::filesystem::resize_file(folder + "/model.safetensors",
                               std::filesystem::file_size(folder + "/model.safetensors") - 10);
  const std::string message = ExpectOpenFails(folder);
  EXPECT_NE(message.find(folder + "/model.safetensors: tensor 'lm_head.weight'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(CheckpointOpen, InvalidConfigJson) {
  const std::string folder = TestPath("bad_config", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(folder, TestConfig()));
  ASSERT_TRUE(WriteBytes(folder + "/config.json", "{\"hidden_size\": 16,"));
  EXPECT_EQ(ExpectOpenFails(folder), folder + "/config.json: not valid JSON");
}

TEST(CheckpointOpen, FolderWithoutWeights) {
  const std::string folder = TestPath("empty", true);
  ASSERT_TRUE(WriteBytes(folder + "/config.json", ModelConfigToJson(TestConfig())));
  EXPECT_NE(ExpectOpenFails(folder).find("holds neither model.safetensors"), std::string::npos);
}

TEST(CheckpointOpen, MissingFileNamesThePath) {
  EXPECT_NE(ExpectOpenFails(TestPath("nowhere.bin")).find("nowhere.bin: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace inferno
