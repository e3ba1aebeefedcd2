#include "engine/toy_model.h"

#include "loader/gguf_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <system_error>

#include "loader/safetensors_writer.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t HashName(const std::string& name) {
  uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

// Uniform values in [center - spread, center + spread).
ToyTensor MakeTensor(const std::string& name, std::vector<int64_t> shape, uint64_t seed, float center,
                     float spread) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  ToyTensor tensor{name, std::move(shape), std::vector<float>(count)};
  uint64_t state = seed ^ HashName(name);
  for (float& v : tensor.data) {
    const float unit = static_cast<float>(SplitMix64(state) >> 40) / static_cast<float>(1 << 24);
    v = center + spread * (2.0f * unit - 1.0f);
  }
  return tensor;
}

// `tensors` (MakeToyModelTensors) as a Hugging Face file stores them: the
// parts of each FusedTensor concatenated by rows into the whole.
std::vector<ToyTensor> FuseAsStored(const ModelConfig& config, std::vector<ToyTensor> tensors) {
  std::map<std::string, ToyTensor> by_name;
  for (ToyTensor& tensor : tensors) by_name.emplace(tensor.name, std::move(tensor));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const FusedTensor& fused : FusedLayerTensors(config, layer)) {
      ToyTensor whole{fused.stored.name, fused.stored.shape, {}};
      for (const TensorSpec& part : fused.parts) {
        ToyTensor& rows = by_name.at(part.name);
        whole.data.insert(whole.data.end(), rows.data.begin(), rows.data.end());
        by_name.erase(part.name);
      }
      by_name.emplace(whole.name, std::move(whole));
    }
  }
  std::vector<ToyTensor> stored;
  for (const TensorSpec& spec : StoredTensorSpecs(config)) stored.push_back(std::move(by_name.at(spec.name)));
  return stored;
}

}  // namespace

ModelConfig ToyModelConfig(const ToyModelShape& shape) {
  ModelConfig config;
  config.architecture = shape.architecture;
  config.hidden_size = shape.dim;
  config.intermediate_size = shape.hidden > 0 ? shape.hidden : (8 * shape.dim / 3 + 31) / 32 * 32;
  config.num_hidden_layers = shape.layers;
  config.num_attention_heads = shape.heads;
  config.num_key_value_heads = shape.kv_heads;
  config.vocab_size = shape.vocab;
  config.max_position_embeddings = shape.seq_len;
  config.tie_word_embeddings = shape.tie_embeddings;
  config.explicit_head_dim = shape.head_dim;
  config.rope_scaling = shape.rope_scaling;
  config.qkv_bias = config.family().fixed_qkv_bias || shape.attention_bias;
  config.o_proj_bias = shape.attention_bias;
  const Architecture& family = config.family();
  if (family.gemma_layout) {
    config.rms_norm_eps = 1e-6f;
    config.rope_theta = 1e6f;
    config.local_rope_theta = 1e4f;
    config.activation = Activation::kGeluTanh;
    config.norm_weight_offset = 1.0f;
    config.query_pre_attn_scalar = shape.query_pre_attn_scalar > 0.0f ? shape.query_pre_attn_scalar
                                                                      : static_cast<float>(config.head_dim());
    config.final_logit_softcapping = shape.final_logit_softcapping;
  }
  if (shape.sliding_window > 0) {
    config.sliding_window = shape.sliding_window;
    for (int64_t layer = 0; layer < shape.layers; ++layer) {
      config.layer_slides.push_back(family.gemma_layout          ? layer % 2 == 0
                                    : family.slides_without_flag ? true
                                                                 : layer >= 1);
    }
  }
  if (const Architecture::ExpertLayout& layout = config.family().experts; !layout.count_field.empty()) {
    config.num_experts = shape.experts;
    config.num_experts_per_tok = shape.experts_per_token;
    config.expert_intermediate_size =
        shape.expert_hidden > 0 ? shape.expert_hidden : config.intermediate_size;
    if (layout.hidden_field == "intermediate_size")
      config.intermediate_size = config.expert_intermediate_size;
    config.norm_topk_prob = !layout.norm_topk_field || shape.norm_topk_prob;
    config.decoder_sparse_step = shape.decoder_sparse_step;
    config.mlp_only_layers = shape.mlp_only_layers;
  }
  return config;
}

std::vector<ToyTensor> MakeToyModelTensors(const ModelConfig& config, uint64_t seed, float router_skew) {
  std::vector<ToyTensor> tensors;
  for (const TensorSpec& spec : LlamaTensorSpecs(config)) {
    const bool vector = spec.shape.size() == 1;
    if (spec.name == kEmbedTokensName) {
      tensors.push_back(MakeTensor(spec.name, spec.shape, seed, 0.0f, 1.0f));
    } else if (vector && spec.name.ends_with("norm.weight")) {
      tensors.push_back(MakeTensor(spec.name, spec.shape, seed, 1.0f - config.norm_weight_offset, 0.1f));
    } else if (vector) {  // a bias
      tensors.push_back(MakeTensor(spec.name, spec.shape, seed, 0.0f, 0.1f));
    } else {  // a projection (rows, cols): values of scale 1 / sqrt(cols)
      const float scale = 1.0f / std::sqrt(static_cast<float>(spec.shape[1]));
      tensors.push_back(MakeTensor(spec.name, spec.shape, seed, 0.0f, scale));
    }
  }
  // The classifier rows of the special ids are zero, so their logits are 0
  // while the best byte's is almost surely positive: greedy decoding of the
  // toy model does not stop at once.
  const int64_t dim = config.hidden_size;
  std::vector<float>& classifier =
      tensors.back().name == kLmHeadName ? tensors.back().data : tensors.front().data;
  std::fill(classifier.begin(),
            classifier.begin() + std::min<int64_t>(kToyModelSpecialIds, config.vocab_size) * dim, 0.0f);
  if (router_skew > 0.0f && config.num_experts > 1) {
    const int64_t experts = config.num_experts;
    const bool coprime = std::gcd(experts, int64_t{37}) == 1;
    for (ToyTensor& tensor : tensors) {
      if (tensor.name == kEmbedTokensName) {
        for (int64_t row = 0; row < config.vocab_size; ++row) tensor.data[row * dim] += 4.0f;
      } else if (tensor.name.ends_with(RouterSuffix(config))) {  // (experts, dim)
        for (int64_t e = 0; e < experts; ++e) {
          const int64_t rank = coprime ? 37 * e % experts : e;
          tensor.data[e * dim] += router_skew * (1.0f - 2.0f * rank / (experts - 1));
        }
      }
    }
  }
  return tensors;
}

Status WriteToyModel(const std::string& folder, const ModelConfig& config, uint64_t seed, float router_skew) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) return Error::Io("cannot create folder '" + folder + "': " + error.message());
  const std::vector<ToyTensor> tensors = FuseAsStored(config, MakeToyModelTensors(config, seed, router_skew));
  std::vector<NamedTensorF32> named;
  for (const ToyTensor& tensor : tensors) named.push_back({tensor.name, tensor.shape, tensor.data});
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"inferno_toy_model_seed", std::to_string(seed)}};
  if (Status written = WriteSafetensorsF32(folder + "/model.safetensors", named, metadata); !written) {
    return written.error();
  }
  const std::string config_path = folder + "/config.json";
  std::ofstream config_file(config_path);
  config_file << ModelConfigToJson(config) << "\n";
  config_file.close();
  if (!config_file) return Error::Io("cannot write '" + config_path + "'");
  return {};
}

Status WriteToyModelGguf(const std::string& path, const ModelConfig& config, uint64_t seed, DType matrix_type,
                         const GgufVocabulary& vocabulary, float router_skew) {
  const std::vector<ToyTensor> tensors = MakeToyModelTensors(config, seed, router_skew);
  std::vector<NamedTensorF32> named;
  for (const ToyTensor& tensor : tensors) named.push_back({tensor.name, tensor.shape, tensor.data});
  return WriteGgufLlama(path, config, named, GgufFileType{matrix_type}, vocabulary,
                        "inferno toy model, seed " + std::to_string(seed));
}

}  // namespace inferno
