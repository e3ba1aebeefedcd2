#include "model/llama_layout.h"

#include <charconv>
#include <map>
#include <set>

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

std::string RouterSuffix(const ModelConfig& config) {
  return std::string(config.family().experts.block) + ".gate.weight";
}

std::string ExpertSuffix(const ModelConfig& config, int64_t expert, ExpertMatrix matrix) {
  const Architecture::ExpertLayout& layout = config.family().experts;
  const std::string_view name = matrix == ExpertMatrix::kGate ? layout.gate
                                : matrix == ExpertMatrix::kUp ? layout.up
                                                              : layout.down;
  return std::string(layout.block) + ".experts." + std::to_string(expert) + "." + std::string(name) +
         ".weight";
}

std::vector<TensorSpec> LayerTensorSpecs(const ModelConfig& c, int64_t layer) {
  const int64_t q_dim = c.q_dim();
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
  const bool sparse = c.IsSparseLayer(layer);
  for (size_t i = 0; i < std::size(kLayerTensorSuffixes); ++i) {
    if (sparse && kLayerTensorSuffixes[i] == kGateProjSuffix) break;  // the MLP's are the last three
    const std::string_view suffix =
        kLayerTensorSuffixes[i] == kFfnNormSuffix ? FeedForwardNormSuffix(c) : kLayerTensorSuffixes[i];
    specs.push_back({LayerTensorName(layer, suffix), shapes[i]});
  }
  if (sparse) {
    const int64_t hidden = c.expert_intermediate_size;
    specs.push_back({LayerTensorName(layer, RouterSuffix(c)), {c.num_experts, c.hidden_size}});
    for (int64_t e = 0; e < c.num_experts; ++e) {
      specs.push_back(
          {LayerTensorName(layer, ExpertSuffix(c, e, ExpertMatrix::kGate)), {hidden, c.hidden_size}});
      specs.push_back(
          {LayerTensorName(layer, ExpertSuffix(c, e, ExpertMatrix::kUp)), {hidden, c.hidden_size}});
      specs.push_back(
          {LayerTensorName(layer, ExpertSuffix(c, e, ExpertMatrix::kDown)), {c.hidden_size, hidden}});
    }
  }
  if (c.qkv_bias) {
    specs.push_back({LayerTensorName(layer, kLayerBiasSuffixes[0]), {q_dim}});
    specs.push_back({LayerTensorName(layer, kLayerBiasSuffixes[1]), {c.kv_dim()}});
    specs.push_back({LayerTensorName(layer, kLayerBiasSuffixes[2]), {c.kv_dim()}});
  }
  if (c.o_proj_bias) specs.push_back({LayerTensorName(layer, kLayerBiasSuffixes[3]), {c.hidden_size}});
  if (c.qk_norm()) {
    specs.push_back({LayerTensorName(layer, kQNormSuffix), {c.head_dim()}});
    specs.push_back({LayerTensorName(layer, kKNormSuffix), {c.head_dim()}});
  }
  if (c.post_norms()) {
    specs.push_back({LayerTensorName(layer, kPostAttentionNormSuffix), {c.hidden_size}});
    specs.push_back({LayerTensorName(layer, kPostFeedForwardNormSuffix), {c.hidden_size}});
  }
  return specs;
}

std::string_view FeedForwardNormSuffix(const ModelConfig& c) {
  return c.post_norms() ? kPreFeedForwardNormSuffix : kFfnNormSuffix;
}

std::vector<FusedTensor> FusedLayerTensors(const ModelConfig& c, int64_t layer) {
  if (!c.family().fused_projections) return {};
  const int64_t dim = c.hidden_size;
  const auto part = [&](std::string_view suffix, int64_t rows) {
    return TensorSpec{LayerTensorName(layer, suffix), {rows, dim}};
  };
  return {{part(kQkvProjSuffix, c.q_dim() + 2 * c.kv_dim()),
           {part(kQProjSuffix, c.q_dim()), part(kKProjSuffix, c.kv_dim()), part(kVProjSuffix, c.kv_dim())}},
          {part(kGateUpProjSuffix, 2 * c.intermediate_size),
           {part(kGateProjSuffix, c.intermediate_size), part(kUpProjSuffix, c.intermediate_size)}}};
}

TensorSpec EmbeddingSpec(const ModelConfig& c) { return {kEmbedTokensName, {c.vocab_size, c.hidden_size}}; }
TensorSpec FinalNormSpec(const ModelConfig& c) { return {kFinalNormName, {c.hidden_size}}; }
TensorSpec LmHeadSpec(const ModelConfig& c) { return {kLmHeadName, {c.vocab_size, c.hidden_size}}; }

int64_t InterleavedRopeRow(int64_t hf_row, int64_t head_dim) {
  const int64_t head = hf_row / head_dim, within = hf_row % head_dim, half = head_dim / 2;
  return head * head_dim + 2 * (within % half) + within / half;
}

std::vector<TensorSpec> StoredTensorSpecs(const ModelConfig& config) {
  std::vector<TensorSpec> specs;
  for (TensorSpec& spec : LlamaTensorSpecs(config)) {
    const std::optional<int64_t> layer = LayerIndexOf(spec.name);
    bool fused_part = false;
    for (FusedTensor& fused : layer ? FusedLayerTensors(config, *layer) : std::vector<FusedTensor>{}) {
      if (fused.parts.front().name == spec.name) specs.push_back(std::move(fused.stored));
      for (const TensorSpec& part : fused.parts) fused_part = fused_part || part.name == spec.name;
    }
    if (!fused_part) specs.push_back(std::move(spec));
  }
  return specs;
}

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
  const std::vector<TensorSpec> specs = LlamaTensorSpecs(config);
  std::set<std::string_view> expected;
  for (const TensorSpec& spec : specs) expected.insert(spec.name);
  for (const TensorInfo& t : tensors) {
    if (!expected.contains(t.name) && !t.name.ends_with(".rotary_emb.inv_freq")) {
      return Error::Unimplemented(source + ": tensor '" + t.name + "' is not part of a " +
                                  config.architecture +
                                  " model with this config.json, and inferno would ignore it");
    }
  }
  for (const TensorSpec& spec : specs) {
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
