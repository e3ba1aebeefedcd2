#include "engine/toy_model.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loader/checkpoint.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

std::string TempPath(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

std::vector<float> ReadAll(const Checkpoint& checkpoint, const TensorSpec& spec) {
  int64_t count = 1;
  for (int64_t d : spec.shape) count *= d;
  std::vector<float> values(static_cast<size_t>(count));
  Status read = checkpoint.ReadF32(spec.name, values);
  EXPECT_TRUE(read) << spec.name << ": " << (read ? "" : read.error().message);
  return values;
}

// A family's toy model written as a Hugging Face folder and as an F32 GGUF
// file reads back, from both, as the engine's tensors: Phi-3's fused
// projections as their parts, Gemma's GGUF norms as 1 + the Hugging Face
// weight (with a config that no longer adds the 1), and the same window,
// layer types and Gemma settings.
void ExpectFilesHoldTheToyTensors(const ToyModelShape& shape, const std::string& name) {
  const ModelConfig config = ToyModelConfig(shape);
  ASSERT_TRUE(config.Validate(name)) << name;
  const std::string folder = TempPath(name), gguf = TempPath(name + ".gguf");
  ASSERT_TRUE(WriteToyModel(folder, config, 7));
  GgufVocabulary vocabulary;
  vocabulary.model = "llama";
  vocabulary.bos_id = 1;
  vocabulary.eos_id = 2;
  for (int64_t id = 0; id < config.vocab_size; ++id) {
    vocabulary.tokens.push_back("t" + std::to_string(id));
    vocabulary.scores.push_back(0.0f);
  }
  ASSERT_TRUE(WriteToyModelGguf(gguf, config, 7, DType::kF32, vocabulary));
  Result<std::unique_ptr<Checkpoint>> hf = Checkpoint::Open(folder);
  Result<std::unique_ptr<Checkpoint>> ggml = Checkpoint::Open(gguf);
  ASSERT_TRUE(hf) << hf.error().message;
  ASSERT_TRUE(ggml) << ggml.error().message;
  const ModelConfig& from_gguf = (*ggml)->config();
  EXPECT_EQ(from_gguf.architecture, config.architecture);
  EXPECT_EQ(from_gguf.sliding_window, config.sliding_window);
  EXPECT_EQ(from_gguf.layer_slides, config.layer_slides);
  EXPECT_EQ(from_gguf.local_rope_theta, config.local_rope_theta);
  EXPECT_EQ(from_gguf.query_pre_attn_scalar, config.query_pre_attn_scalar);
  EXPECT_EQ(from_gguf.final_logit_softcapping, config.final_logit_softcapping);
  EXPECT_EQ(from_gguf.activation, config.activation);
  EXPECT_EQ(from_gguf.norm_weight_offset, 0.0f) << "llama.cpp's files store the sum";
  const std::vector<ToyTensor> expected = MakeToyModelTensors(config, 7);
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  ASSERT_EQ(expected.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == kLmHeadName) continue;  // tied in GGUF when output.weight equals token_embd
    EXPECT_EQ(ReadAll(**hf, specs[i]), expected[i].data) << name << ": " << specs[i].name;
    std::vector<float> plus_offset = expected[i].data;
    if (specs[i].name.ends_with("norm.weight")) {
      for (float& v : plus_offset) v += config.norm_weight_offset;
    }
    EXPECT_EQ(ReadAll(**ggml, specs[i]), plus_offset) << name << ": " << specs[i].name;
  }
}

// A 32-wide toy of `architecture` with `layers` layers sliding over `window`.
ToyModelShape SmallShape(const std::string& architecture, int64_t layers, int64_t window) {
  ToyModelShape shape;
  shape.architecture = architecture;
  shape.dim = 32;
  shape.layers = layers;
  shape.sliding_window = window;
  return shape;
}

TEST(ToyModel, Gemma3FilesHoldItsTensorsAndSettings) {
  ToyModelShape shape = SmallShape("Gemma3ForCausalLM", 4, 6);
  shape.head_dim = 16;
  shape.final_logit_softcapping = 5.0f;
  shape.tie_embeddings = true;
  ExpectFilesHoldTheToyTensors(shape, "gemma3");
}

TEST(ToyModel, Phi3FilesStoreFusedProjectionsThatReadBackAsTheirParts) {
  ExpectFilesHoldTheToyTensors(SmallShape("Phi3ForCausalLM", 2, 9), "phi3");
  Result<std::unique_ptr<Checkpoint>> hf = Checkpoint::Open(TempPath("phi3"));
  ASSERT_TRUE(hf) << hf.error().message;
  for (const TensorInfo& info : (*hf)->tensors()) {
    EXPECT_EQ(info.name.find("qkv_proj"), std::string::npos) << "fused tensors are presented as their parts";
  }
}

}  // namespace
}  // namespace inferno
