// GGUF files of the llama architecture through Checkpoint::Open.
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "loader/checkpoint.h"
#include "loader/gguf_format.h"
#include "loader/gguf_llama.h"
#include "loader/gguf_vocabulary.h"
#include "loader/llama2c_format.h"
#include "loader/mapped_file.h"
#include "loader/test_models.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

std::string FileBytes(const std::string& path) {
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  CHECK(file) << file.error().message;
  const std::span<const std::byte> bytes = (*file)->bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A copy of the GGUF file `from` at `to` with its header edited by `edit`
// (metadata, tensor names and types; the data stays as it was).
void Rewrite(const std::string& from, const std::string& to, const std::function<void(GgufFile&)>& edit) {
  const std::string bytes = FileBytes(from);
  Result<GgufFile> file = ParseGgufFile(std::as_bytes(std::span(bytes.data(), bytes.size())), from);
  ASSERT_TRUE(file) << file.error().message;
  edit(*file);
  std::vector<GgufTensorInfo> infos;
  for (const GgufTensor& t : file->tensors) infos.push_back(t.info);
  ASSERT_TRUE(WriteBytes(
      to, EncodeGgufHeader(file->metadata, infos, file->alignment) + bytes.substr(file->data_begin)));
}

GgufKeyValue* Key(GgufFile& file, const std::string& key) {
  for (GgufKeyValue& kv : file.metadata) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

std::string ValidModel(const std::string& name, const ModelConfig& config = TestConfig(2, false)) {
  const std::string path = TestPath(name);
  CHECK(WriteTestGgufModel(path, config));
  return path;
}

TEST(GgufCheckpoint, GivesHuggingFaceNamesShapesAndValues) {
  for (bool tied : {false, true}) {
    const ModelConfig expected = TestConfig(3, tied);
    const std::string path = ValidModel(tied ? "tied.gguf" : "untied.gguf", expected);
    Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error().message;
    const ModelConfig& c = (*checkpoint)->config();
    EXPECT_EQ(c.hidden_size, expected.hidden_size);
    EXPECT_EQ(c.intermediate_size, expected.intermediate_size);
    EXPECT_EQ(c.num_hidden_layers, 3);
    EXPECT_EQ(c.num_attention_heads, expected.num_attention_heads);
    EXPECT_EQ(c.num_key_value_heads, expected.num_key_value_heads);
    EXPECT_EQ(c.vocab_size, expected.vocab_size);
    EXPECT_EQ(c.max_position_embeddings, expected.max_position_embeddings);
    EXPECT_EQ(c.rms_norm_eps, expected.rms_norm_eps);
    EXPECT_EQ(c.rope_theta, expected.rope_theta);
    EXPECT_EQ(c.tie_word_embeddings, tied);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
    ExpectHoldsTestWeights(**checkpoint);
  }
}

// Matrices stored as F16, BF16, Q8_0, Q4_0 read back as the f32 values of
// their stored (rounded or quantized) rows, each q/k row in Hugging Face
// order; norms stay F32.
TEST(GgufCheckpoint, ReadsEveryMatrixTypeAsItsDequantizedValues) {
  ModelConfig config = TestConfig(2, false);
  config.hidden_size = 64;  // rows of 64 and 96: whole 32-element blocks
  config.intermediate_size = 96;
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const std::string path = TestPath("typed_" + std::string(DTypeName(dtype)) + ".gguf");
    ASSERT_TRUE(WriteTestGgufModel(path, config, dtype));
    Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error().message;
    for (const TensorSpec& spec : LlamaTensorSpecs(config)) {
      const TensorInfo info = (*checkpoint)->Find(spec.name).value();
      EXPECT_EQ(info.dtype, spec.shape.size() == 2 ? dtype : DType::kF32) << spec.name;
      const std::vector<float> weights = TestWeights(spec);
      std::vector<float> expected(weights.size());
      const int64_t row = spec.shape.back();
      std::vector<std::byte> stored(static_cast<size_t>(DTypeBytes(info.dtype, row).value()));
      for (size_t begin = 0; begin < weights.size(); begin += static_cast<size_t>(row)) {
        ASSERT_TRUE(ConvertFromF32(info.dtype, std::span(weights).subspan(begin, row), stored.data()));
        ConvertToF32(info.dtype, stored.data(), std::span(expected).subspan(begin, row));
      }
      std::vector<float> read(weights.size());
      ASSERT_TRUE((*checkpoint)->ReadF32(spec.name, read)) << spec.name;
      EXPECT_EQ(read, expected) << DTypeName(dtype) << " " << spec.name;
    }
  }
}

// The GGUF's stored q and k rows are llama2.c's (Meta's interleaved order),
// compared with the llama2.c file test_models writes with its own
// permutation; dims are stored fastest-first.
TEST(GgufCheckpoint, StoresQAndKRowsInterleavedLikeLlama2c) {
  const ModelConfig config = TestConfig(1, true);
  const std::string gguf_path = ValidModel("interleaved.gguf", config);
  const std::string bin_path = TestPath("interleaved.bin");
  ASSERT_TRUE(WriteTestLlama2cModel(bin_path, config));
  const std::string gguf_bytes = FileBytes(gguf_path), bin_bytes = FileBytes(bin_path);
  Result<GgufFile> gguf =
      ParseGgufFile(std::as_bytes(std::span(gguf_bytes.data(), gguf_bytes.size())), gguf_path);
  Result<Llama2cLayout> bin =
      ParseLlama2cFile(std::as_bytes(std::span(bin_bytes.data(), bin_bytes.size())), bin_path);
  ASSERT_TRUE(gguf && bin);
  for (const auto& [gguf_name, hf_name] :
       {std::pair{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"},
        std::pair{"blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight"},
        std::pair{"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight"}}) {
    const GgufTensor* stored = nullptr;
    for (const GgufTensor& t : gguf->tensors) {
      if (t.info.name == gguf_name) stored = &t;
    }
    const Llama2cTensor* reference = nullptr;
    for (const Llama2cTensor& t : bin->tensors) {
      if (t.spec.name == hf_name) reference = &t;
    }
    ASSERT_TRUE(stored && reference) << gguf_name;
    EXPECT_EQ(stored->info.ne, (std::vector<int64_t>{reference->spec.shape[1], reference->spec.shape[0]}));
    EXPECT_EQ(gguf_bytes.substr(stored->begin, stored->end - stored->begin),
              bin_bytes.substr(reference->offset, stored->end - stored->begin))
        << gguf_name;
  }
}

TEST(GgufCheckpoint, FailsOnAnotherArchitecture) {
  const std::string path = TestPath("gemma.gguf");
  Rewrite(ValidModel("arch.gguf"), path,
          [](GgufFile& f) { Key(f, "general.architecture")->value.values[0] = std::string("gemma2"); });
  EXPECT_NE(
      ExpectOpenFails(path).find("GGUF architecture 'gemma2' is not supported (inferno reads llama, qwen2, "
                                 "qwen3, gemma3, phi3, qwen3moe)"),
      std::string::npos);
  // A llama file relabelled qwen3 has no qwen3.* keys.
  const std::string relabelled = TestPath("relabelled.gguf");
  Rewrite(ValidModel("arch2.gguf"), relabelled,
          [](GgufFile& f) { Key(f, "general.architecture")->value.values[0] = std::string("qwen3"); });
  EXPECT_NE(
      ExpectOpenFails(relabelled).find("GGUF key 'qwen3.context_length' is missing (a qwen3 model needs it)"),
      std::string::npos);
}

TEST(GgufCheckpoint, FailsOnMissingKey) {
  const std::string path = TestPath("missing.gguf");
  Rewrite(ValidModel("m.gguf"), path, [](GgufFile& f) {
    std::erase_if(f.metadata, [](const GgufKeyValue& kv) { return kv.key == "llama.block_count"; });
  });
  EXPECT_NE(ExpectOpenFails(path).find("GGUF key 'llama.block_count' is missing"), std::string::npos);
}

TEST(GgufCheckpoint, FailsOnMistypedKey) {
  const std::string path = TestPath("mistyped.gguf");
  Rewrite(ValidModel("t.gguf"), path, [](GgufFile& f) {
    Key(f, "llama.attention.layer_norm_rms_epsilon")->value = {
        GgufValueType::kString, GgufValueType::kString, {std::string("1e-5")}};
  });
  EXPECT_NE(
      ExpectOpenFails(path).find("'llama.attention.layer_norm_rms_epsilon' is a string, not a finite float"),
      std::string::npos);
}

TEST(GgufCheckpoint, FailsOnContradictoryKeys) {
  const std::string path = TestPath("contradictory.gguf");
  Rewrite(ValidModel("c.gguf"), path,
          [](GgufFile& f) { Key(f, "llama.vocab_size")->value.values[0] = uint64_t{99}; });
  EXPECT_NE(ExpectOpenFails(path).find("'llama.vocab_size' = 99 differs from token_embd.weight's 24 rows"),
            std::string::npos);
  Rewrite(ValidModel("c.gguf"), path,
          [](GgufFile& f) { Key(f, "llama.rope.dimension_count")->value.values[0] = uint64_t{2}; });
  EXPECT_NE(ExpectOpenFails(path).find("partial RoPE is not implemented"), std::string::npos);
}

TEST(GgufCheckpoint, FailsOnUnknownLlamaKey) {
  const std::string path = TestPath("unknown_key.gguf");
  Rewrite(ValidModel("u.gguf"), path, [](GgufFile& f) {
    f.metadata.push_back(
        {"llama.attention.sliding_window", {GgufValueType::kUint32, GgufValueType::kUint32, {uint64_t{8}}}});
  });
  EXPECT_NE(ExpectOpenFails(path).find("GGUF key 'llama.attention.sliding_window' is not implemented"),
            std::string::npos);
}

TEST(GgufCheckpoint, FailsOnShapeThatContradictsTheConfig) {
  const std::string path = TestPath("shape.gguf");
  Rewrite(ValidModel("s.gguf"), path,
          [](GgufFile& f) { Key(f, "llama.feed_forward_length")->value.values[0] = uint64_t{48}; });
  EXPECT_NE(ExpectOpenFails(path).find("has shape [40, 16] but the config needs [48, 16]"),
            std::string::npos);
}

TEST(GgufCheckpoint, FailsOnTensorOutsideTheLlamaLayout) {
  const std::string path = TestPath("extra.gguf");
  Rewrite(ValidModel("e.gguf"), path, [](GgufFile& f) { f.tensors[1].info.name = "blk.0.attn_qkv.weight"; });
  EXPECT_NE(ExpectOpenFails(path).find("tensor 'blk.0.attn_qkv.weight' is not part of a GGUF llama model"),
            std::string::npos);
}

TEST(GgufCheckpoint, FailsOnMissingTensor) {
  const std::string path = TestPath("no_output_norm.gguf");
  Rewrite(ValidModel("n.gguf"), path, [](GgufFile& f) {
    for (GgufTensor& t : f.tensors) {
      if (t.info.name == "output_norm.weight") t.info.name = "blk.9.attn_norm.weight";
    }
  });
  EXPECT_NE(ExpectOpenFails(path).find("is not part of a LlamaForCausalLM model"), std::string::npos);
}

TEST(GgufCheckpoint, FailsOnCorruptFileWithByteOffset) {
  const std::string path = TestPath("truncated.gguf");
  const std::string bytes = FileBytes(ValidModel("x.gguf"));
  ASSERT_TRUE(WriteBytes(path, bytes.substr(0, bytes.size() / 2)));
  const std::string message = ExpectOpenFails(path);
  EXPECT_NE(message.find(path + ": byte "), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

ModelConfig Qwen3MoeConfig() {
  ModelConfig config = TestMixtureConfig("Qwen3MoeForCausalLM", 3, 2, /*expert_hidden=*/32);
  config.norm_topk_prob = true;
  return config;
}

// Each expert of a stacked ffn_*_exps tensor reads back as its own Hugging
// Face tensor, in Q8_0 too; the router stays f32.
TEST(GgufCheckpoint, StacksExpertsAndReadsEachBackUnderItsHuggingFaceName) {
  ModelConfig config = Qwen3MoeConfig();
  config.hidden_size = 64;  // rows of 64 and 32: whole Q8_0 blocks
  for (DType dtype : {DType::kF32, DType::kQ8_0}) {
    const std::string path = TestPath("experts_" + std::string(DTypeName(dtype)) + ".gguf");
    ASSERT_TRUE(WriteTestGgufModel(path, config, dtype));
    const std::string bytes = FileBytes(path);
    Result<GgufFile> file = ParseGgufFile(std::as_bytes(std::span(bytes.data(), bytes.size())), path);
    ASSERT_TRUE(file) << file.error().message;
    bool stacked = false;
    for (const GgufTensor& t : file->tensors) {
      if (t.info.name == "blk.1.ffn_down_exps.weight") {
        stacked = true;
        EXPECT_EQ(t.info.ne, (std::vector<int64_t>{32, 64, 3}));
      }
    }
    EXPECT_TRUE(stacked);
    Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error().message;
    const ModelConfig& c = (*checkpoint)->config();
    EXPECT_EQ(c.num_experts, 3);
    EXPECT_EQ(c.num_experts_per_tok, 2);
    EXPECT_EQ(c.expert_intermediate_size, 32);
    EXPECT_TRUE(c.norm_topk_prob);
    EXPECT_EQ((*checkpoint)->Find(LayerTensorName(0, RouterSuffix(c)))->dtype, DType::kF32);
    for (int64_t e = 0; e < 3; ++e) {
      for (ExpertMatrix matrix : {ExpertMatrix::kGate, ExpertMatrix::kUp, ExpertMatrix::kDown}) {
        const std::string name = LayerTensorName(1, ExpertSuffix(c, e, matrix));
        const TensorInfo info = (*checkpoint)->Find(name).value();
        EXPECT_EQ(info.dtype, dtype) << name;
        const std::vector<float> weights = TestWeights({name, info.shape});
        std::vector<float> expected(weights.size());
        const int64_t row = info.shape.back();
        std::vector<std::byte> stored(static_cast<size_t>(DTypeBytes(dtype, row).value()));
        for (size_t begin = 0; begin < weights.size(); begin += static_cast<size_t>(row)) {
          ASSERT_TRUE(ConvertFromF32(dtype, std::span(weights).subspan(begin, row), stored.data()));
          ConvertToF32(dtype, stored.data(), std::span(expected).subspan(begin, row));
        }
        std::vector<float> read(weights.size());
        ASSERT_TRUE((*checkpoint)->ReadF32(name, read)) << name;
        EXPECT_EQ(read, expected) << name;
      }
    }
  }
}

// The first Mixtral GGUFs hold each expert apart (blk.{i}.ffn_gate.{e}.weight
// ...): the same bytes, split, read back as the stacked file's experts.
TEST(GgufCheckpoint, ReadsExpertsHeldApartAsTheStackedFileHoldsThem) {
  ModelConfig config = Qwen3MoeConfig();
  config.hidden_size = 64;  // each expert's matrix a multiple of the 32-byte alignment
  for (DType dtype : {DType::kF32, DType::kQ8_0}) {
    const std::string stacked = TestPath("stacked_" + std::string(DTypeName(dtype)) + ".gguf");
    ASSERT_TRUE(WriteTestGgufModel(stacked, config, dtype));
    const std::string apart = TestPath("apart_" + std::string(DTypeName(dtype)) + ".gguf");
    int split = 0;
    Rewrite(stacked, apart, [&split](GgufFile& f) {
      std::vector<GgufTensor> tensors;
      for (const GgufTensor& t : f.tensors) {
        const size_t at = t.info.name.find("_exps.weight");
        if (at == std::string::npos) {
          tensors.push_back(t);
          continue;
        }
        ++split;
        for (int64_t e = 0; e < t.info.ne[2]; ++e) {
          GgufTensor one = t;
          one.info.name = t.info.name.substr(0, at) + "." + std::to_string(e) + ".weight";
          one.info.ne = {t.info.ne[0], t.info.ne[1]};
          tensors.push_back(one);
        }
      }
      f.tensors = tensors;
    });
    EXPECT_EQ(split, 6);  // gate, up and down of 2 layers
    Result<std::unique_ptr<Checkpoint>> expected = Checkpoint::Open(stacked);
    Result<std::unique_ptr<Checkpoint>> read = Checkpoint::Open(apart);
    ASSERT_TRUE(expected) << expected.error().message;
    ASSERT_TRUE(read) << read.error().message;
    EXPECT_EQ((*read)->config().num_experts, 3);
    for (int64_t layer = 0; layer < 2; ++layer) {
      for (int64_t e = 0; e < 3; ++e) {
        for (ExpertMatrix matrix : {ExpertMatrix::kGate, ExpertMatrix::kUp, ExpertMatrix::kDown}) {
          const std::string name = LayerTensorName(layer, ExpertSuffix(config, e, matrix));
          const TensorInfo info = (*expected)->Find(name).value();
          ASSERT_TRUE((*read)->Find(name)) << name;
          EXPECT_EQ((*read)->Find(name)->shape, info.shape) << name;
          EXPECT_EQ((*read)->Find(name)->dtype, dtype) << name;
          std::vector<float> want(static_cast<size_t>(info.num_elements())), got(want.size());
          ASSERT_TRUE((*expected)->ReadF32(name, want));
          ASSERT_TRUE((*read)->ReadF32(name, got));
          EXPECT_EQ(got, want) << name;
        }
      }
    }
  }
}

TEST(GgufCheckpoint, FailsOnAnExpertHeldApartBeyondTheExpertCount) {
  const std::string path = TestPath("expert_apart_3.gguf");
  Rewrite(ValidModel("apart_base.gguf", Qwen3MoeConfig()), path, [](GgufFile& f) {
    for (GgufTensor& t : f.tensors) {
      if (t.info.name == "blk.0.ffn_up_exps.weight") {
        t.info.name = "blk.0.ffn_up.3.weight";
        t.info.ne = {t.info.ne[0], t.info.ne[1] * t.info.ne[2]};
      }
    }
  });
  EXPECT_NE(ExpectOpenFails(path).find("tensor 'blk.0.ffn_up.3.weight' (ne [16, 96]) is not a matrix of one "
                                       "of the 3 experts"),
            std::string::npos);
}

TEST(GgufCheckpoint, FailsOnAnExpertStackOfTheWrongCount) {
  const std::string path = TestPath("two_experts.gguf");
  Rewrite(ValidModel("three_experts.gguf", Qwen3MoeConfig()), path,
          [](GgufFile& f) { Key(f, "qwen3moe.expert_count")->value.values[0] = uint64_t{2}; });
  EXPECT_NE(ExpectOpenFails(path).find("has ne [16, 32, 3], not {columns, rows, 2 experts}"),
            std::string::npos);
}

TEST(GgufCheckpoint, ExpertsInADenseFamilyAreRefused) {
  ModelConfig qwen3 = TestConfig(2, false);
  qwen3.architecture = "Qwen3ForCausalLM";
  const std::string path = TestPath("qwen3_experts.gguf");
  Rewrite(ValidModel("q3.gguf", qwen3), path, [](GgufFile& f) {
    f.metadata.push_back(
        {"qwen3.expert_count", {GgufValueType::kUint32, GgufValueType::kUint32, {uint64_t{8}}}});
  });
  EXPECT_NE(ExpectOpenFails(path).find("'qwen3.expert_count' = 8: mixture of experts is not implemented"),
            std::string::npos);
}

ModelConfig Phi3Config(bool longrope) {
  ModelConfig phi3 = TestConfig(2, false);
  phi3.architecture = "Phi3ForCausalLM";
  if (longrope) {
    RopeScaling& scaling = phi3.rope_scaling;
    scaling.type = RopeScaling::Type::kLongRope;
    scaling.original_max_position_embeddings = 8;
    for (int64_t i = 0; i < phi3.head_dim() / 2; ++i) {
      scaling.short_factor.push_back(1.0f + 0.25f * static_cast<float>(i));
      scaling.long_factor.push_back(2.0f + 0.5f * static_cast<float>(i));
    }
    scaling.attention_factor = 1.125f;
  }
  return phi3;
}

// Phi-3's longrope as llama.cpp's converter writes it (rope_factors_*
// tensors, original context and attention factor keys) reads back whole; a
// file of Phi-3-mini-4k carries the original context key alone.
TEST(GgufCheckpoint, Phi3LongRopeReadsBackAndHalfOfItIsRefused) {
  const std::string longrope = ValidModel("phi3_longrope.gguf", Phi3Config(true));
  Result<std::unique_ptr<Checkpoint>> read = Checkpoint::Open(longrope);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ((*read)->config().rope_scaling, Phi3Config(true).rope_scaling);

  const std::string four_k = TestPath("phi3_4k.gguf");
  Rewrite(ValidModel("phi3.gguf", Phi3Config(false)), four_k, [](GgufFile& f) {
    f.metadata.push_back({"phi3.rope.scaling.original_context_length",
                          {GgufValueType::kUint32, GgufValueType::kUint32, {uint64_t{4096}}}});
  });
  read = Checkpoint::Open(four_k);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ((*read)->config().rope_scaling.type, RopeScaling::Type::kNone);

  const std::string factor_alone = TestPath("phi3_attn_factor.gguf");
  Rewrite(ValidModel("phi3b.gguf", Phi3Config(false)), factor_alone, [](GgufFile& f) {
    f.metadata.push_back(
        {"phi3.rope.scaling.attn_factor", {GgufValueType::kFloat32, GgufValueType::kFloat32, {1.5}}});
  });
  EXPECT_NE(
      ExpectOpenFails(factor_alone)
          .find("'phi3.rope.scaling.attn_factor' is set without the tensors rope_factors_long/short.weight"),
      std::string::npos);

  const std::string short_list = TestPath("phi3_short_list.gguf");
  Rewrite(longrope, short_list, [](GgufFile& f) {
    for (GgufTensor& t : f.tensors) {
      if (t.info.name == "rope_factors_short.weight") t.info.ne = {t.info.ne[0] - 1};
    }
  });
  EXPECT_NE(ExpectOpenFails(short_list).find("tensor 'rope_factors_short.weight' is not"), std::string::npos);
}

// llama.cpp writes Mixtral as "llama" with experts: read back as Mixtral.
TEST(GgufCheckpoint, LlamaWithExpertsIsMixtral) {
  ModelConfig mixtral = TestConfig(2, false);
  mixtral.architecture = "MixtralForCausalLM";
  mixtral.num_experts = 4;
  mixtral.num_experts_per_tok = 2;
  mixtral.expert_intermediate_size = mixtral.intermediate_size;
  mixtral.norm_topk_prob = true;
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(ValidModel("mixtral.gguf", mixtral));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ((*checkpoint)->config().architecture, "MixtralForCausalLM");
  EXPECT_EQ((*checkpoint)->config().num_experts, 4);
  EXPECT_EQ((*checkpoint)->config().expert_intermediate_size, mixtral.intermediate_size);
  ExpectHoldsTestWeights(**checkpoint);
}

TEST(GgufWriter, RefusesAMixtureGgufCannotHold) {
  ModelConfig config = Qwen3MoeConfig();
  config.norm_topk_prob = false;
  EXPECT_FALSE(WriteTestGgufModel(TestPath("unnormalised.gguf"), config));
  config.norm_topk_prob = true;
  config.mlp_only_layers = {0};
  EXPECT_FALSE(WriteTestGgufModel(TestPath("dense_layer.gguf"), config));
}

}  // namespace
}  // namespace inferno
