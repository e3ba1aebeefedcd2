#include "loader/gguf_llama.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include <glog/logging.h>

#include "model/llama_layout.h"

namespace inferno {
namespace {

constexpr std::string_view kBlockPrefix = "blk.";

// GGUF names of the global tensors and of each layer's, with the Hugging
// Face name (global) or suffix (layer).
constexpr std::pair<std::string_view, std::string_view> kGlobalNames[] = {
    {"token_embd.weight", kEmbedTokensName},
    {"output_norm.weight", kFinalNormName},
    {"output.weight", kLmHeadName},
};
constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
    {"attn_norm.weight", kAttentionNormSuffix},
    {"attn_q.weight", kQProjSuffix},
    {"attn_k.weight", kKProjSuffix},
    {"attn_v.weight", kVProjSuffix},
    {"attn_output.weight", kOProjSuffix},
    {"ffn_norm.weight", kFfnNormSuffix},
    {"ffn_gate.weight", kGateProjSuffix},
    {"ffn_up.weight", kUpProjSuffix},
    {"ffn_down.weight", kDownProjSuffix},
    {"attn_q.bias", kQBiasSuffix},
    {"attn_k.bias", kKBiasSuffix},
    {"attn_v.bias", kVBiasSuffix},
    {"attn_output.bias", kOBiasSuffix},
    {"attn_q_norm.weight", kQNormSuffix},
    {"attn_k_norm.weight", kKNormSuffix},
};

// The layer names of `c`'s family: kLayerNames, with Gemma's norms (its
// "ffn_norm" is pre_feedforward_layernorm, and it adds "post_attention_norm"
// and "post_ffw_norm") and Phi-3's fused projections ("attn_qkv"; its
// "ffn_up" holds gate_up_proj).
std::vector<std::pair<std::string_view, std::string_view>> FamilyLayerNames(const ModelConfig& c) {
  std::vector<std::pair<std::string_view, std::string_view>> names(std::begin(kLayerNames),
                                                                   std::end(kLayerNames));
  for (auto& [gguf, hf] : names) {
    if (hf == kFfnNormSuffix) hf = FeedForwardNormSuffix(c);
    if (hf == kUpProjSuffix && c.family().fused_projections) hf = kGateUpProjSuffix;
  }
  if (c.post_norms()) {
    names.push_back({"post_attention_norm.weight", kPostAttentionNormSuffix});
    names.push_back({"post_ffw_norm.weight", kPostFeedForwardNormSuffix});
  }
  if (c.family().fused_projections) names.push_back({"attn_qkv.weight", kQkvProjSuffix});
  return names;
}

// A mixture of experts' router and stacked experts (see gguf_llama.h).
constexpr std::string_view kRouterName = "ffn_gate_inp.weight";
constexpr std::pair<std::string_view, ExpertMatrix> kExpertStacks[] = {
    {"ffn_gate_exps.weight", ExpertMatrix::kGate},
    {"ffn_up_exps.weight", ExpertMatrix::kUp},
    {"ffn_down_exps.weight", ExpertMatrix::kDown},
};
// The same experts one tensor each, as the first Mixtral GGUFs hold them:
// "blk.{i}.<prefix>{expert}.weight".
constexpr std::string_view kWeightSuffix = ".weight";
constexpr std::pair<std::string_view, ExpertMatrix> kExpertsApart[] = {
    {"ffn_gate.", ExpertMatrix::kGate},
    {"ffn_up.", ExpertMatrix::kUp},
    {"ffn_down.", ExpertMatrix::kDown},
};

// The layer and suffix of "blk.{layer}.{suffix}"; nullopt for other names.
std::optional<std::pair<int64_t, std::string_view>> SplitBlockName(std::string_view name) {
  if (!name.starts_with(kBlockPrefix)) return std::nullopt;
  name.remove_prefix(kBlockPrefix.size());
  int64_t layer = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.') {
    return std::nullopt;
  }
  return std::pair{layer, name.substr(static_cast<size_t>(end - name.data()) + 1)};
}

GgufValue Uint32(int64_t value) {
  return {GgufValueType::kUint32, GgufValueType::kUint32, {static_cast<uint64_t>(value)}};
}
GgufValue Float32(float value) {
  return {GgufValueType::kFloat32, GgufValueType::kFloat32, {static_cast<double>(value)}};
}

// Reads the family's keys ("<gguf_name>.<key>", `key` below without the
// prefix); every error names the source and the whole key.
class FamilyKeys {
 public:
  FamilyKeys(const GgufFile& file, const std::string& source, std::string_view family)
      : file_(file), source_(source), prefix_(std::string(family) + ".") {}

  std::string Key(std::string_view key) const { return prefix_ + std::string(key); }

  Error Fail(std::string_view key, const std::string& what) const {
    return Error::Corruption(source_ + ": GGUF key '" + Key(key) + "' " + what);
  }

  // A non-negative integer key; `fallback` when absent (nullopt: required).
  Result<int64_t> Int(std::string_view key, std::optional<int64_t> fallback = std::nullopt) const {
    const GgufValue* value = file_.Find(Key(key));
    if (value == nullptr) {
      if (fallback) return *fallback;
      return Fail(key, "is missing (a " + prefix_.substr(0, prefix_.size() - 1) + " model needs it)");
    }
    const std::optional<int64_t> v = value->AsInt();
    if (!v || *v < 0) return Fail(key, "is a " + value->TypeName() + ", not a non-negative integer");
    return *v;
  }

  Result<float> Float(std::string_view key, std::optional<float> fallback = std::nullopt) const {
    const GgufValue* value = file_.Find(Key(key));
    if (value == nullptr) {
      if (fallback) return *fallback;
      return Fail(key, "is missing (a " + prefix_.substr(0, prefix_.size() - 1) + " model needs it)");
    }
    const std::optional<double> v = value->AsFloat();
    if (!v || !std::isfinite(*v)) return Fail(key, "is a " + value->TypeName() + ", not a finite float");
    return static_cast<float>(*v);
  }

  const GgufValue* Find(std::string_view key) const { return file_.Find(Key(key)); }

 private:
  const GgufFile& file_;
  const std::string& source_;
  const std::string prefix_;
};

// The expert keys into `c`: a dense family's expert counts must be 0; a
// mixture's are required, and it computes as llama.cpp does (every layer
// sparse, the top-k weights renormalised).
Status ReadExpertKeys(const FamilyKeys& keys, ModelConfig& c) {
  if (c.family().experts.count_field.empty()) {
    for (const char* key : {"expert_count", "expert_used_count"}) {
      Result<int64_t> experts = keys.Int(key, 0);
      if (!experts) return experts.error();
      if (*experts != 0)
        return keys.Fail(key, "= " + std::to_string(*experts) + ": mixture of experts is not implemented");
    }
    return {};
  }
  Result<int64_t> count = keys.Int("expert_count");
  if (!count) return count.error();
  Result<int64_t> used = keys.Int("expert_used_count");
  if (!used) return used.error();
  if (*used == 0) return keys.Fail("expert_used_count", "is 0");
  // Mixtral's experts are its feed_forward_length; qwen3moe's have their own.
  const bool own_length = c.family().experts.hidden_field != "intermediate_size";
  Result<int64_t> hidden =
      keys.Int("expert_feed_forward_length", own_length ? c.intermediate_size / *used : c.intermediate_size);
  if (!hidden) return hidden.error();
  if (!own_length && *hidden != c.intermediate_size) {
    return keys.Fail("expert_feed_forward_length", "= " + std::to_string(*hidden) + " differs from " +
                                                       keys.Key("feed_forward_length") + " = " +
                                                       std::to_string(c.intermediate_size));
  }
  c.num_experts = *count;
  c.num_experts_per_tok = *used;
  c.expert_intermediate_size = *hidden;
  c.norm_topk_prob = true;
  return {};
}

// The family keys read (after "<gguf_name>.").
constexpr std::string_view kKnownFamilyKeys[] = {
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.layer_norm_rms_epsilon",
    "rope.freq_base",
    "rope.dimension_count",
    "attention.key_length",
    "attention.value_length",
    "rope.scaling.type",
    "rope.scaling.factor",
    "vocab_size",
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
};

// Whether `family` has the family key `key`: every family the keys above;
// llama.cpp reads a window for gemma3 (with its pattern, local RoPE base
// and soft-capping) and phi3 only.
bool IsFamilyKey(std::string_view key, const Architecture& family) {
  if (std::find(std::begin(kKnownFamilyKeys), std::end(kKnownFamilyKeys), key) != std::end(kKnownFamilyKeys))
    return true;
  if (key == "attention.sliding_window") return family.gemma_layout || family.fused_projections;
  // Phi-3's longrope: its original context (written for every Phi-3) and
  // attention factor, beside the rope_factors_* tensors.
  if (key == "rope.scaling.original_context_length" || key == "rope.scaling.attn_factor")
    return family.fused_projections;
  return family.gemma_layout && (key == "attention.sliding_window_pattern" || key == "rope.freq_base_swa" ||
                                 key == "final_logit_softcapping");
}

// "llama, qwen2, qwen3, qwen3moe": the GGUF architectures read.
std::string GgufArchitectureNames() {
  std::string names;
  for (const Architecture& architecture : kArchitectures) {
    if (!architecture.gguf_name.empty() && FindGgufArchitecture(architecture.gguf_name) == &architecture)
      names += (names.empty() ? "" : ", ") + std::string(architecture.gguf_name);
  }
  return names;
}

// The sliding window and Gemma's settings, as llama.cpp reads them: a window
// on every layer (phi3) or on all but each pattern-th (gemma3, pattern 6 by
// default), the local layers' RoPE base (10000 by default), Gemma's score
// scale (1 / sqrt(head_dim), or sqrt(hidden / heads) for the 62-layer 27B
// model), final soft-capping, and its norms stored as 1 + weight.
Status ReadAttentionWindow(const FamilyKeys& keys, ModelConfig& c) {
  const bool gemma = c.family().gemma_layout;
  Result<int64_t> window = keys.Int("attention.sliding_window", 0);
  Result<int64_t> pattern = keys.Int("attention.sliding_window_pattern", 6);
  Result<float> local_theta = keys.Float("rope.freq_base_swa", 10000.0f);
  Result<float> softcapping = keys.Float("final_logit_softcapping", 0.0f);
  if (!window) return window.error();
  if (!pattern) return pattern.error();
  if (!local_theta) return local_theta.error();
  if (!softcapping) return softcapping.error();
  if (*window > 0) {
    c.sliding_window = *window;
    for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer)
      c.layer_slides.push_back(!gemma || *pattern == 0 || layer % *pattern < *pattern - 1);
  }
  if (!gemma) return {};
  if (!(*local_theta > 0.0f)) return keys.Fail("rope.freq_base_swa", "is not positive");
  if (*softcapping < 0.0f) return keys.Fail("final_logit_softcapping", "is negative");
  c.local_rope_theta = *local_theta;
  c.final_logit_softcapping = *softcapping;
  c.activation = Activation::kGeluTanh;
  c.query_pre_attn_scalar = static_cast<float>(GgufGemmaQueryScalar(c));
  c.norm_weight_offset = 0.0f;
  return {};
}

// The config of a file whose token_embd.weight has `vocab_size` rows.
Result<ModelConfig> ReadConfig(const GgufFile& file, const std::string& source, int64_t vocab_size) {
  const GgufValue* architecture = file.Find(kGgufArchitectureKey);
  if (architecture == nullptr || architecture->AsString() == nullptr) {
    return Error::Corruption(source + ": GGUF key '" + kGgufArchitectureKey + "' is missing or not a string");
  }
  const Architecture* family = FindGgufArchitecture(*architecture->AsString());
  if (family == nullptr) {
    return Error::Unimplemented(source + ": GGUF architecture '" +
                                PrintableInMessage(*architecture->AsString()) +
                                "' is not supported (inferno reads " + GgufArchitectureNames() + ")");
  }
  const FamilyKeys keys(file, source, family->gguf_name);
  // Mixtral is llama.cpp's "llama" with experts.
  if (const GgufValue* experts = keys.Find("expert_count");
      experts != nullptr && experts->AsInt().value_or(0) > 0) {
    if (const Architecture* mixture = FindGgufArchitecture(family->gguf_name, /*experts=*/true))
      family = mixture;
  }
  for (const GgufKeyValue& kv : file.metadata) {
    if (!kv.key.starts_with(keys.Key(""))) continue;
    const std::string_view key = std::string_view(kv.key).substr(keys.Key("").size());
    if (!IsFamilyKey(key, *family)) {
      return Error::Unimplemented(source + ": GGUF key '" + PrintableInMessage(kv.key) +
                                  "' is not implemented, and inferno would ignore it");
    }
  }
  ModelConfig c;
  c.architecture = std::string(family->name);
  c.qkv_bias = family->fixed_qkv_bias;
  c.vocab_size = vocab_size;
  Result<int64_t> vocab = keys.Int("vocab_size", vocab_size);
  if (!vocab) return vocab.error();
  if (*vocab != vocab_size) {
    return keys.Fail("vocab_size", "= " + std::to_string(*vocab) + " differs from token_embd.weight's " +
                                       std::to_string(vocab_size) + " rows");
  }
  const std::pair<const char*, int64_t*> required[] = {
      {"context_length", &c.max_position_embeddings},
      {"embedding_length", &c.hidden_size},
      {"block_count", &c.num_hidden_layers},
      {"feed_forward_length", &c.intermediate_size},
      {"attention.head_count", &c.num_attention_heads},
  };
  for (const auto& [key, field] : required) {
    Result<int64_t> value = keys.Int(key);
    if (!value) return value.error();
    *field = *value;
  }
  Result<int64_t> kv_heads = keys.Int("attention.head_count_kv", c.num_attention_heads);
  if (!kv_heads) return kv_heads.error();
  c.num_key_value_heads = *kv_heads;
  Result<float> eps = keys.Float("attention.layer_norm_rms_epsilon");
  if (!eps) return eps.error();
  c.rms_norm_eps = *eps;
  Result<float> theta = keys.Float("rope.freq_base", 10000.0f);
  if (!theta) return theta.error();
  c.rope_theta = *theta;

  Result<int64_t> key_length = keys.Int("attention.key_length", 0);
  Result<int64_t> value_length = keys.Int("attention.value_length", 0);
  if (!key_length) return key_length.error();
  if (!value_length) return value_length.error();
  if (*key_length != *value_length) {
    return keys.Fail("attention.value_length", "= " + std::to_string(*value_length) + " differs from " +
                                                   keys.Key("attention.key_length") + " = " +
                                                   std::to_string(*key_length));
  }
  if (*key_length > 0 && c.num_attention_heads > 0 && *key_length * c.num_attention_heads != c.hidden_size) {
    c.explicit_head_dim = *key_length;
  }
  Result<int64_t> rope_dims = keys.Int("rope.dimension_count", 0);
  if (!rope_dims) return rope_dims.error();
  if (Status s = ReadExpertKeys(keys, c); !s) return s.error();
  if (Status valid = c.Validate(source); !valid) return valid.error();
  if (*rope_dims != 0 && *rope_dims != c.head_dim()) {
    return keys.Fail("rope.dimension_count", "= " + std::to_string(*rope_dims) + " differs from head_dim " +
                                                 std::to_string(c.head_dim()) +
                                                 " (partial RoPE is not implemented)");
  }
  if (const GgufValue* scaling = keys.Find("rope.scaling.type")) {
    const std::string* type = scaling->AsString();
    if (type == nullptr) return keys.Fail("rope.scaling.type", "is not a string");
    if (*type == "linear") {
      Result<float> factor = keys.Float("rope.scaling.factor");
      if (!factor) return factor.error();
      if (!(*factor > 0)) return keys.Fail("rope.scaling.factor", "is not positive");
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      c.rope_scaling.factor = *factor;
    } else if (*type != "none") {
      return Error::Unimplemented(source + ": GGUF key '" + keys.Key("rope.scaling.type") + "' = '" +
                                  PrintableInMessage(*type) + "' is not implemented (none and linear are)");
    }
  }
  if (Status s = ReadAttentionWindow(keys, c); !s) return s.error();
  if (const GgufValue* eos = file.Find(kGgufEosTokenIdKey)) {
    const std::optional<int64_t> id = eos->AsInt();
    if (!id || *id < 0) {
      return Error::Corruption(source + ": GGUF key '" + kGgufEosTokenIdKey + "' is a " + eos->TypeName() +
                               ", not a token id");
    }
    if (*id >= vocab_size) {
      return Error::Corruption(source + ": GGUF key '" + kGgufEosTokenIdKey + "' = " + std::to_string(*id) +
                               " is outside the vocabulary of " + std::to_string(vocab_size));
    }
    c.eos_token_ids.push_back(*id);
  }
  return c;
}

// The Hugging Face name of a GGUF tensor name of `c`'s family, or nullopt.
std::optional<std::string> HfName(std::string_view name, const ModelConfig& c) {
  for (const auto& [gguf, hf] : kGlobalNames) {
    if (name == gguf) return std::string(hf);
  }
  const std::optional<std::pair<int64_t, std::string_view>> block = SplitBlockName(name);
  if (!block) return std::nullopt;
  for (const auto& [gguf, hf] : FamilyLayerNames(c)) {
    if (block->second == gguf) return LayerTensorName(block->first, hf);
  }
  return std::nullopt;
}

// Appends the router or the experts `tensor` holds when it is one of a
// mixture's (true), else leaves `model` alone (false). Fails naming `source`
// when a stack is not {columns, rows, num_experts}.
Result<bool> AppendExpertTensors(const GgufTensor& tensor, const std::string& source, GgufLlamaModel& model) {
  const ModelConfig& c = model.config;
  const std::optional<std::pair<int64_t, std::string_view>> block = SplitBlockName(tensor.info.name);
  if (!block || c.num_experts == 0) return false;
  const auto [layer, suffix] = *block;
  const DType dtype = GgmlTypeDType(tensor.info.type);
  const std::vector<int64_t>& ne = tensor.info.ne;
  if (suffix == kRouterName) {
    model.tensors.push_back(
        {{LayerTensorName(layer, RouterSuffix(c)), dtype, {ne.rbegin(), ne.rend()}}, tensor.begin, 0});
    return true;
  }
  for (const auto& [gguf, matrix] : kExpertStacks) {
    if (suffix != gguf) continue;
    if (ne.size() != 3 || ne[2] != c.num_experts) {
      return Error::Corruption(source + ": tensor '" + tensor.info.name + "' has ne " + ShapeToString(ne) +
                               ", not {columns, rows, " + std::to_string(c.num_experts) + " experts}");
    }
    const Result<int64_t> row_bytes = DTypeBytes(dtype, ne[0]);
    if (!row_bytes) return row_bytes.error().Prefixed(source + ": tensor '" + tensor.info.name + "': ");
    for (int64_t e = 0; e < c.num_experts; ++e) {
      model.tensors.push_back({{LayerTensorName(layer, ExpertSuffix(c, e, matrix)), dtype, {ne[1], ne[0]}},
                               tensor.begin + static_cast<uint64_t>(e * ne[1] * *row_bytes),
                               0});
    }
    return true;
  }
  for (const auto& [prefix, matrix] : kExpertsApart) {
    if (!suffix.starts_with(prefix) || !suffix.ends_with(kWeightSuffix)) continue;
    const std::string_view digits =
        suffix.substr(prefix.size(), suffix.size() - prefix.size() - kWeightSuffix.size());
    int64_t expert = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), expert);
    if (ec != std::errc() || end != digits.data() + digits.size()) continue;
    if (expert < 0 || expert >= c.num_experts || ne.size() != 2) {
      return Error::Corruption(source + ": tensor '" + tensor.info.name + "' (ne " + ShapeToString(ne) +
                               ") is not a matrix of one of the " + std::to_string(c.num_experts) +
                               " experts");
    }
    model.tensors.push_back(
        {{LayerTensorName(layer, ExpertSuffix(c, expert, matrix)), dtype, {ne[1], ne[0]}}, tensor.begin, 0});
    return true;
  }
  return false;
}

}  // namespace

int64_t GgufGemmaQueryScalar(const ModelConfig& c) {
  return c.num_hidden_layers == 62 ? c.hidden_size / c.num_attention_heads : c.head_dim();
}

int64_t GgufSlidingPattern(const ModelConfig& c) {
  CHECK_GT(c.sliding_window, 0);
  for (int64_t n = 0; n <= c.num_hidden_layers; ++n) {
    bool matches = true;
    for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer)
      matches = matches && c.LayerSlides(layer) == (n == 0 || layer % n < n - 1);
    if (matches) return n;
  }
  return -1;
}

// Phi-3's longrope factors (rope_factors_long.weight and
// rope_factors_short.weight: f32, head_dim / 2 each, as llama.cpp's
// converter writes them) into `c`'s rope_scaling, with the original context
// and attention factor keys; absent tensors leave `c` as it is. The factors
// are applied as from a config.json (the short ones, within the original
// context).
Status ReadLongRopeFactors(const GgufFile& file, std::span<const std::byte> bytes, const std::string& source,
                           ModelConfig& c) {
  const GgufTensor* factors[2] = {nullptr, nullptr};  // long, short
  for (const GgufTensor& tensor : file.tensors) {
    for (int i = 0; i < 2; ++i) {
      if (tensor.info.name == kGgufRopeFactorNames[i]) factors[i] = &tensor;
    }
  }
  const FamilyKeys keys(file, source, c.family().gguf_name);
  if (factors[0] == nullptr && factors[1] == nullptr) {
    if (keys.Find("rope.scaling.attn_factor") != nullptr) {
      return keys.Fail("rope.scaling.attn_factor",
                       "is set without the tensors rope_factors_long/short.weight");
    }
    return {};
  }
  if (!c.family().fused_projections) {
    return Error::Unimplemented(source + ": tensors rope_factors_*.weight are read for phi3 only (" +
                                c.architecture + " here)");
  }
  const int64_t half = c.head_dim() / 2;
  std::vector<float>* lists[2] = {&c.rope_scaling.long_factor, &c.rope_scaling.short_factor};
  for (int i = 0; i < 2; ++i) {
    const GgufTensor* tensor = factors[i];
    const std::string name(kGgufRopeFactorNames[i]);
    if (tensor == nullptr)
      return Error::Corruption(source + ": tensor '" + name + "' is missing beside the other");
    if (tensor->info.type != GgmlType::kF32 || tensor->info.ne != std::vector<int64_t>{half} ||
        tensor->end - tensor->begin != static_cast<uint64_t>(half) * sizeof(float) ||
        tensor->end > bytes.size()) {
      return Error::Corruption(source + ": tensor '" + name + "' is not " + std::to_string(half) +
                               " f32 values (head_dim / 2)");
    }
    lists[i]->resize(static_cast<size_t>(half));
    std::memcpy(lists[i]->data(), bytes.data() + tensor->begin, static_cast<size_t>(half) * sizeof(float));
    if (!std::all_of(lists[i]->begin(), lists[i]->end(), [](float f) { return f > 0.0f; })) {
      return Error::Corruption(source + ": tensor '" + name + "' holds a factor that is not positive");
    }
  }
  Result<int64_t> original = keys.Int("rope.scaling.original_context_length");
  if (!original) return original.error();
  if (*original <= 0) return keys.Fail("rope.scaling.original_context_length", "is not positive");
  Result<float> attention =
      keys.Float("rope.scaling.attn_factor", LongRopeAttentionFactor(c.max_position_embeddings, *original));
  if (!attention) return attention.error();
  if (!(*attention > 0.0f)) return keys.Fail("rope.scaling.attn_factor", "is not positive");
  c.rope_scaling.type = RopeScaling::Type::kLongRope;
  c.rope_scaling.original_max_position_embeddings = *original;
  c.rope_scaling.attention_factor = *attention;
  return {};
}

Result<GgufLlamaModel> ReadGgufLlama(const GgufFile& file, std::span<const std::byte> bytes,
                                     const std::string& source) {
  int64_t vocab_size = 0;
  for (const GgufTensor& tensor : file.tensors) {
    if (tensor.info.name == kGlobalNames[0].first && tensor.info.ne.size() == 2)
      vocab_size = tensor.info.ne[1];
  }
  if (vocab_size == 0) {
    return Error::NotFound(source +
                           ": tensor 'token_embd.weight' is missing, empty or not 2-D (it gives the "
                           "vocabulary size)");
  }
  Result<ModelConfig> config = ReadConfig(file, source, vocab_size);
  if (!config) return config.error();
  GgufLlamaModel model;
  model.config = std::move(*config);
  model.config.tie_word_embeddings = true;
  if (Status s = ReadLongRopeFactors(file, bytes, source, model.config); !s) return s.error();
  for (const GgufTensor& tensor : file.tensors) {
    if (std::find(std::begin(kGgufRopeFactorNames), std::end(kGgufRopeFactorNames), tensor.info.name) !=
        std::end(kGgufRopeFactorNames)) {
      continue;  // read into the config above
    }
    Result<bool> expert = AppendExpertTensors(tensor, source, model);
    if (!expert) return expert.error();
    if (*expert) continue;
    std::optional<std::string> name = HfName(tensor.info.name, model.config);
    if (!name) {
      return Error::Unimplemented(source + ": tensor '" + PrintableInMessage(tensor.info.name) +
                                  "' is not part of a GGUF llama model, and inferno would ignore it");
    }
    GgufLlamaTensor held;
    held.info.name = std::move(*name);
    held.info.dtype = GgmlTypeDType(tensor.info.type);
    held.info.shape.assign(tensor.info.ne.rbegin(), tensor.info.ne.rend());
    held.begin = tensor.begin;
    const std::string_view suffix = LayerTensorSuffix(held.info.name);
    if (model.config.family().gguf_interleaved_rope) {
      if (suffix == kQProjSuffix) held.interleaved_heads = model.config.num_attention_heads;
      if (suffix == kKProjSuffix) held.interleaved_heads = model.config.num_key_value_heads;
    }
    if (held.info.name == kLmHeadName) model.config.tie_word_embeddings = false;
    model.tensors.push_back(std::move(held));
  }
  return model;
}

std::string GgufTensorName(std::string_view hf_name, const ModelConfig& config) {
  for (const auto& [gguf, hf] : kGlobalNames) {
    if (hf_name == hf) return std::string(gguf);
  }
  const std::optional<int64_t> layer = LayerIndexOf(hf_name);
  CHECK(layer) << hf_name;
  const std::string_view suffix = LayerTensorSuffix(hf_name);
  for (const auto& [gguf, hf] : FamilyLayerNames(config)) {
    if (suffix == hf) return std::string(kBlockPrefix) + std::to_string(*layer) + "." + std::string(gguf);
  }
  LOG(FATAL) << "no GGUF name for " << hf_name;
}

std::optional<std::pair<std::string, int64_t>> GgufExpertTensorName(const ModelConfig& config,
                                                                    std::string_view hf_name) {
  const std::optional<int64_t> layer = LayerIndexOf(hf_name);
  if (!layer || !config.IsSparseLayer(*layer)) return std::nullopt;
  const std::string block = std::string(kBlockPrefix) + std::to_string(*layer) + ".";
  const std::string_view suffix = LayerTensorSuffix(hf_name);
  if (suffix == RouterSuffix(config)) return std::pair{block + std::string(kRouterName), int64_t{-1}};
  for (int64_t e = 0; e < config.num_experts; ++e) {
    for (const auto& [gguf, matrix] : kExpertStacks) {
      if (suffix == ExpertSuffix(config, e, matrix)) return std::pair{block + std::string(gguf), e};
    }
  }
  return std::nullopt;
}

std::vector<GgufKeyValue> GgufLlamaMetadata(const ModelConfig& c) {
  const bool longrope = c.rope_scaling.type == RopeScaling::Type::kLongRope;
  CHECK(c.rope_scaling.type == RopeScaling::Type::kNone || (longrope && c.family().fused_projections))
      << "RoPE scaling other than Phi-3's longrope is not written to GGUF";
  const std::string_view family = c.family().gguf_name;
  CHECK(!family.empty()) << c.architecture << " has no GGUF architecture of its own";
  const auto key = [&](std::string_view suffix) { return std::string(family) + "." + std::string(suffix); };
  std::vector<GgufKeyValue> metadata = {
      {kGgufArchitectureKey, {GgufValueType::kString, GgufValueType::kString, {std::string(family)}}},
      {key("vocab_size"), Uint32(c.vocab_size)},
      {key("context_length"), Uint32(c.max_position_embeddings)},
      {key("embedding_length"), Uint32(c.hidden_size)},
      {key("block_count"), Uint32(c.num_hidden_layers)},
      {key("feed_forward_length"), Uint32(c.intermediate_size)},
      {key("rope.dimension_count"), Uint32(c.head_dim())},
      {key("attention.head_count"), Uint32(c.num_attention_heads)},
      {key("attention.head_count_kv"), Uint32(c.num_key_value_heads)},
      {key("attention.layer_norm_rms_epsilon"), Float32(c.rms_norm_eps)},
      {key("rope.freq_base"), Float32(c.rope_theta)},
  };
  if (c.explicit_head_dim > 0) {
    metadata.push_back({key("attention.key_length"), Uint32(c.head_dim())});
    metadata.push_back({key("attention.value_length"), Uint32(c.head_dim())});
  }
  if (c.sliding_window > 0) {
    metadata.push_back({key("attention.sliding_window"), Uint32(c.sliding_window)});
    if (c.family().gemma_layout && GgufSlidingPattern(c) != 6)
      metadata.push_back({key("attention.sliding_window_pattern"), Uint32(GgufSlidingPattern(c))});
  }
  if (c.family().gemma_layout) {
    metadata.push_back({key("rope.freq_base_swa"), Float32(c.local_rope_theta)});
    if (c.final_logit_softcapping > 0.0f)
      metadata.push_back({key("final_logit_softcapping"), Float32(c.final_logit_softcapping)});
  }
  if (longrope) {
    metadata.push_back({key("rope.scaling.original_context_length"),
                        Uint32(c.rope_scaling.original_max_position_embeddings)});
    metadata.push_back({key("rope.scaling.attn_factor"), Float32(c.rope_scaling.attention_factor)});
  }
  if (c.num_experts > 0) {
    metadata.push_back({key("expert_count"), Uint32(c.num_experts)});
    metadata.push_back({key("expert_used_count"), Uint32(c.num_experts_per_tok)});
    if (c.family().experts.hidden_field != "intermediate_size")
      metadata.push_back({key("expert_feed_forward_length"), Uint32(c.expert_intermediate_size)});
  }
  return metadata;
}

}  // namespace inferno
