#include "loader/llama_layout.h"

#include <charconv>
#include <map>

namespace inferno {
namespace {

constexpr std::string_view kLayerPrefix = "model.layers.";

}  // namespace

std::string LayerTensorName(int64_t layer, std::string_view suffix) {
  return std::string(kLayerPrefix) + std::to_string(layer) + "." + std::string(suffix);
}

std::optional<int64_t> LayerIndexOf(std::string_view name) {
  if (name.substr(0, kLayerPrefix.size()) != kLayerPrefix) return std::nullopt;
  name.remove_prefix(kLayerPrefix.size());
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.') {
    return std::nullopt;
  }
  return layer;
}

std::string_view LayerTensorSuffix(std::string_view name) {
  if (!LayerIndexOf(name)) return {};
  name.remove_prefix(kLayerPrefix.size());
  return name.substr(name.find('.') + 1);
}

std::vector<TensorSpec> LayerTensorSpecs(const ModelConfig& c, int64_t layer) {
  const int64_t q_dim = c.num_attention_heads * c.head_dim();
  const std::vector<int64_t> shapes[] = {
      {c.hidden_size},                       // input_layernorm
      {q_dim, c.hidden_size},                // q_proj
      {c.kv_dim(), c.hidden_size},           // k_proj
      {c.kv_dim(), c.hidden_size},           // v_proj
      {c.hidden_size, q_dim},                // o_proj
      {c.hidden_size},                       // post_attention_layernorm
      {c.intermediate_size, c.hidden_size},  // gate_proj
      {c.intermediate_size, c.hidden_size},  // up_proj
      {c.hidden_size, c.intermediate_size},  // down_proj
  };
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < std::size(kLayerTensorSuffixes); ++i) {
    specs.push_back({LayerTensorName(layer, kLayerTensorSuffixes[i]), shapes[i]});
  }
  return specs;
}

TensorSpec EmbeddingSpec(const ModelConfig& c) { return {kEmbedTokensName, {c.vocab_size, c.hidden_size}}; }
TensorSpec FinalNormSpec(const ModelConfig& c) { return {kFinalNormName, {c.hidden_size}}; }
TensorSpec LmHeadSpec(const ModelConfig& c) { return {kLmHeadName, {c.vocab_size, c.hidden_size}}; }

std::vector<TensorSpec> LlamaTensorSpecs(const ModelConfig& config) {
  std::vector<TensorSpec> specs = {EmbeddingSpec(config)};
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (TensorSpec& spec : LayerTensorSpecs(config, layer)) specs.push_back(std::move(spec));
  }
  specs.push_back(FinalNormSpec(config));
  if (!config.tie_word_embeddings) specs.push_back(LmHeadSpec(config));
  return specs;
}

Status CheckTensorsMatchConfig(const std::vector<TensorInfo>& tensors, const ModelConfig& config,
                               const std::string& source) {
  std::map<std::string_view, const TensorInfo*> by_name;
  for (const TensorInfo& t : tensors) by_name[t.name] = &t;
  for (const TensorSpec& spec : LlamaTensorSpecs(config)) {
    auto it = by_name.find(spec.name);
    if (it == by_name.end()) {
      return Error::NotFound(source + ": tensor '" + spec.name + "' is missing (the config needs shape " +
                             ShapeToString(spec.shape) + ")");
    }
    if (it->second->shape != spec.shape) {
      return Error::Corruption(source + ": tensor '" + spec.name + "' has shape " +
                               ShapeToString(it->second->shape) + " but the config needs " +
                               ShapeToString(spec.shape));
    }
  }
  return {};
}

}  // namespace inferno
