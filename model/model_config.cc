#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <glog/logging.h>
#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using nlohmann::json;

// config.json fields that do not change what inference computes: the
// checkpoint's dtype (weights are read by their safetensors dtype), library
// versions, training-only settings (dropout, initializer, pretraining_tp,
// which splits the same matrix products) and ids the generator does not use.
const std::set<std::string_view> kFieldsWithoutEffect = {
    "_name_or_path", "torch_dtype", "transformers_version", "initializer_range", "use_cache",
    "attention_dropout", "pretraining_tp", "bos_token_id", "pad_token_id", "output_attentions",
    "output_hidden_states", "return_dict", "tokenizer_class", "_attn_implementation", "embd_pdrop",
    "resid_pdrop", "auto_map", "cache_implementation",
    // Phi-3's context before longrope scaling, which is refused (rope_scaling).
    "original_max_position_embeddings"};

// The fields ParseModelConfigJson reads.
const std::set<std::string_view> kFieldsHonoured = {"architectures",
                                                    "model_type",
                                                    "hidden_size",
                                                    "intermediate_size",
                                                    "num_hidden_layers",
                                                    "num_attention_heads",
                                                    "num_key_value_heads",
                                                    "vocab_size",
                                                    "max_position_embeddings",
                                                    "rms_norm_eps",
                                                    "rope_theta",
                                                    "rope_scaling",
                                                    "tie_word_embeddings",
                                                    "head_dim",
                                                    "attention_bias",
                                                    "mlp_bias",
                                                    "hidden_act",
                                                    "sliding_window",
                                                    "use_sliding_window",
                                                    "max_window_layers",
                                                    "layer_types",
                                                    "eos_token_id",
                                                    "hidden_activation",
                                                    "sliding_window_pattern",
                                                    "rope_local_base_freq",
                                                    "query_pre_attn_scalar",
                                                    "final_logit_softcapping",
                                                    "attn_logit_softcapping",
                                                    "partial_rotary_factor",
                                                    "original_max_position_embeddings",
                                                    "inferno_norm_weight_offset"};

// Fields only the Gemma families have (Architecture::gemma_layout): any other
// family's Hugging Face class ignores them, so inferno refuses them there.
const std::set<std::string_view> kGemmaFields = {"sliding_window_pattern", "rope_local_base_freq",
                                                 "query_pre_attn_scalar", "final_logit_softcapping",
                                                 "attn_logit_softcapping"};

// The mixture-of-experts fields: those of the family are read (ReadExperts),
// the router's training settings (its auxiliary loss, the noise Mixtral adds
// to router inputs in training only) have no effect on inference.
const std::set<std::string_view> kExpertFields = {
    "num_local_experts",    "num_experts",         "num_experts_per_tok", "moe_intermediate_size",
    "norm_topk_prob",       "decoder_sparse_step", "mlp_only_layers",     "router_aux_loss_coef",
    "output_router_logits", "router_jitter_noise"};

bool Present(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && !it->is_null();
}

// Reads integer field `key` into `*out`; absent leaves the default when
// `required` is false.
Status ReadInt(const json& object, const char* key, bool required, int64_t* out, const std::string& source) {
  if (!Present(object, key)) {
    if (required) return Error::Corruption(source + ": missing integer field '" + std::string(key) + "'");
    return {};
  }
  const json& value = object.at(key);
  if (!value.is_number_integer()) {
    return Error::Corruption(source + ": field '" + std::string(key) + "' = " + value.dump() +
                             " is not an integer");
  }
  *out = value.get<int64_t>();
  return {};
}

// Reads float or bool field `key` into `*out`; absent leaves the default.
template <typename T>
Status ReadScalar(const json& object, const char* key, T* out, const std::string& source) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bool>);
  if (!Present(object, key)) return {};
  const json& value = object.at(key);
  constexpr bool kBool = std::is_same_v<T, bool>;
  if (kBool ? !value.is_boolean() : !value.is_number()) {
    return Error::Corruption(source + ": field '" + std::string(key) + "' = " + value.dump() +
                             (kBool ? " is not a boolean" : " is not a number"));
  }
  *out = value.get<T>();
  return {};
}

// eos_token_id: an int or a list of ints; appended to `ids` without repeats.
Status ReadTokenIds(const json& object, const char* key, std::vector<int64_t>& ids,
                    const std::string& source) {
  if (!Present(object, key)) return {};
  const json& value = object.at(key);
  const json list = value.is_array() ? value : json::array({value});
  for (const json& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return Error::Corruption(source + ": field '" + std::string(key) + "' = " + value.dump() +
                               " is not a token id or a list of them");
    }
    if (std::find(ids.begin(), ids.end(), id.get<int64_t>()) == ids.end()) ids.push_back(id.get<int64_t>());
  }
  return {};
}

Status ReadArchitecture(const json& object, ModelConfig& config, const std::string& source) {
  if (Present(object, "architectures")) {
    const json& value = object.at("architectures");
    if (!value.is_array() || value.size() != 1 || !value[0].is_string()) {
      return Error::Unimplemented(source + ": field 'architectures' = " + value.dump() +
                                  " is not one architecture name");
    }
    config.architecture = value[0].get<std::string>();
    if (FindArchitecture(config.architecture) == nullptr) {
      return Error::Unimplemented(source + ": architecture '" + config.architecture + "' is not supported (" +
                                  std::string(ArchitectureNames()) + ")");
    }
  }
  if (Present(object, "model_type")) {
    const json& value = object.at("model_type");
    const std::string_view expected = config.family().model_type;
    if (!value.is_string() || value.get<std::string>() != expected) {
      return Error::Unimplemented(source + ": model_type " + value.dump() + " does not match architecture '" +
                                  config.architecture + "' (expected \"" + std::string(expected) + "\")");
    }
  }
  return {};
}

// Phi-3's original context (the top-level original_max_position_embeddings,
// else rope_scaling's, else Phi3Config's default 4096) and, unless
// rope_scaling gives it, LongRopeAttentionFactor, as transformers' longrope
// computes them.
Status FinishLongRope(const json& object, ModelConfig& config, const std::string& source) {
  RopeScaling& scaling = config.rope_scaling;
  if (scaling.type != RopeScaling::Type::kLongRope) return {};
  if (!object.at("rope_scaling").contains("original_max_position_embeddings"))
    scaling.original_max_position_embeddings = 4096;
  if (Status s = ReadInt(object, "original_max_position_embeddings", false,
                         &scaling.original_max_position_embeddings, source);
      !s) {
    return s;
  }
  if (scaling.original_max_position_embeddings <= 0) {
    return Error::Corruption(source + ": original_max_position_embeddings is not positive");
  }
  const int64_t half = config.head_dim() / 2;
  if (static_cast<int64_t>(scaling.short_factor.size()) != half ||
      static_cast<int64_t>(scaling.long_factor.size()) != half) {
    return Error::Corruption(source + ": rope_scaling's short_factor and long_factor need head_dim / 2 = " +
                             std::to_string(half) + " entries each");
  }
  if (!Present(object.at("rope_scaling"), "attention_factor")) {
    scaling.attention_factor =
        LongRopeAttentionFactor(config.max_position_embeddings, scaling.original_max_position_embeddings);
  } else if (!(scaling.attention_factor > 0.0f)) {
    return Error::Corruption(source + ": rope_scaling's attention_factor is not positive");
  }
  return {};
}

// longrope's factor lists and attention_factor (original context and
// default attention factor: ParseModelConfigJson, from the top-level fields).
Status ReadLongRope(const json& value, RopeScaling& scaling, const std::string& where) {
  for (const auto& [key, out] :
       {std::pair{"short_factor", &scaling.short_factor}, std::pair{"long_factor", &scaling.long_factor}}) {
    const json& list = value.contains(key) ? value.at(key) : json();
    if (!list.is_array() || list.empty() || !std::all_of(list.begin(), list.end(), [](const json& f) {
          return f.is_number() && f.get<float>() > 0;
        })) {
      return Error::Unimplemented(where + ": '" + std::string(key) + "' is not a list of positive numbers");
    }
    for (const json& f : list) out->push_back(f.get<float>());
  }
  if (Status s = ReadScalar(value, "attention_factor", &scaling.attention_factor, where); !s) return s;
  return ReadInt(value, "original_max_position_embeddings", false, &scaling.original_max_position_embeddings,
                 where);
}

Status ReadRopeScaling(const json& object, RopeScaling& scaling, const std::string& source) {
  if (!Present(object, "rope_scaling")) return {};
  const json& value = object.at("rope_scaling");
  const auto fail = [&](const std::string& what) {
    return Error::Unimplemented(source + ": rope_scaling " + value.dump() + ": " + what);
  };
  if (!value.is_object()) return fail("not an object");
  // Newer files name the type "rope_type", older ones "type".
  const char* type_key = value.contains("rope_type") ? "rope_type" : "type";
  if (!value.contains(type_key) || !value.at(type_key).is_string()) return fail("no type");
  const std::string type = value.at(type_key).get<std::string>();
  std::set<std::string_view> allowed = {"type", "rope_type"};
  if (type == "default") {
    return {};
  } else if (type == "linear") {
    scaling.type = RopeScaling::Type::kLinear;
    allowed.insert("factor");
  } else if (type == "llama3") {
    scaling.type = RopeScaling::Type::kLlama3;
    allowed.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else if (type == "longrope" || type == "su") {  // "su": older Phi-3 files
    scaling.type = RopeScaling::Type::kLongRope;
    allowed.insert({"short_factor", "long_factor", "attention_factor", "original_max_position_embeddings"});
  } else {
    return fail("type '" + type + "' is not supported (linear, llama3, longrope)");
  }
  for (const auto& [key, unused] : value.items()) {
    if (!allowed.contains(key)) return fail("field '" + key + "' is not supported for type '" + type + "'");
  }
  const std::string where = source + ": rope_scaling";
  if (scaling.type == RopeScaling::Type::kLongRope) return ReadLongRope(value, scaling, where);
  if (!value.contains("factor")) return fail("no factor");
  if (Status s = ReadScalar(value, "factor", &scaling.factor, where); !s) return s;
  if (Status s = ReadScalar(value, "low_freq_factor", &scaling.low_freq_factor, where); !s) return s;
  if (Status s = ReadScalar(value, "high_freq_factor", &scaling.high_freq_factor, where); !s) return s;
  if (Status s = ReadInt(value, "original_max_position_embeddings", false,
                         &scaling.original_max_position_embeddings, where);
      !s) {
    return s;
  }
  if (!(scaling.factor > 0) || !(scaling.low_freq_factor > 0) ||
      !(scaling.high_freq_factor > scaling.low_freq_factor) ||
      scaling.original_max_position_embeddings <= 0) {
    return fail("factors must be positive, high_freq_factor above low_freq_factor");
  }
  return {};
}

// The defaults of the family's Hugging Face config class where they differ
// from Llama's (those of ModelConfig's fields): Gemma3TextConfig's.
void SetFamilyDefaults(ModelConfig& config) {
  if (!config.family().gemma_layout) return;
  config.explicit_head_dim = 256;
  config.rms_norm_eps = 1e-6f;
  config.rope_theta = 1e6f;
  config.local_rope_theta = 1e4f;
  config.query_pre_attn_scalar = 256.0f;
  config.tie_word_embeddings = true;
  config.activation = Activation::kGeluTanh;
  config.norm_weight_offset = 1.0f;
}

// "hidden_act" or (Gemma) "hidden_activation": silu or gelu_pytorch_tanh.
Status ReadActivation(const json& object, ModelConfig& config, const std::string& source) {
  std::optional<Activation> stated;
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    if (!Present(object, key)) continue;
    const json& value = object.at(key);
    Activation activation;
    if (value == "silu") {
      activation = Activation::kSilu;
    } else if (value == "gelu_pytorch_tanh") {
      activation = Activation::kGeluTanh;
    } else {
      return Error::Unimplemented(source + ": " + key + " " + value.dump() +
                                  " is not supported (silu, gelu_pytorch_tanh)");
    }
    if (stated && *stated != activation) {
      return Error::Corruption(source + ": hidden_act and hidden_activation disagree");
    }
    stated = activation;
  }
  if (stated) config.activation = *stated;
  return {};
}

// Gemma's query_pre_attn_scalar, rope_local_base_freq and soft-capping
// fields (sliding_window_pattern: ReadSlidingLayers); refused elsewhere.
Status ReadGemmaFields(const json& object, ModelConfig& config, const std::string& source) {
  for (const std::string_view field : kGemmaFields) {
    if (!config.family().gemma_layout && object.contains(field)) {
      return Error::Unimplemented(source + ": field '" + std::string(field) + "' is not a " +
                                  config.architecture + " field");
    }
  }
  if (Present(object, "attn_logit_softcapping")) {
    return Error::Unimplemented(source + ": attn_logit_softcapping = " +
                                object.at("attn_logit_softcapping").dump() + " is not supported");
  }
  const std::pair<const char*, float*> positive[] = {
      {"query_pre_attn_scalar", &config.query_pre_attn_scalar},
      {"rope_local_base_freq", &config.local_rope_theta},
      {"final_logit_softcapping", &config.final_logit_softcapping}};
  for (const auto& [key, out] : positive) {
    if (Status s = ReadScalar(object, key, out, source); !s) return s;
    if (Present(object, key) && !(*out > 0.0f)) {
      return Error::Corruption(source + ": " + key + " = " + object.at(key).dump() + " is not positive");
    }
  }
  return {};
}

// The mixture-of-experts fields of the family (Architecture::ExpertLayout);
// any of them in a family without it is refused.
Status ReadExperts(const json& object, ModelConfig& config, const std::string& source) {
  const Architecture::ExpertLayout& layout = config.family().experts;
  const bool mixture = !layout.count_field.empty();
  std::set<std::string_view> own;
  if (mixture) {
    own = {layout.count_field, "num_experts_per_tok", layout.hidden_field};
    if (layout.norm_topk_field) own.insert("norm_topk_prob");
    if (layout.dense_layer_fields) own.insert({"decoder_sparse_step", "mlp_only_layers"});
  }
  for (const char* field :
       {"num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
        "decoder_sparse_step", "mlp_only_layers"}) {
    if (!own.contains(field) && Present(object, field)) {
      return Error::Unimplemented(source + ": field '" + field + "' is not a " + config.architecture +
                                  " setting");
    }
  }
  if (!mixture) return {};
  const std::string count_field(layout.count_field), hidden_field(layout.hidden_field);
  if (Status s = ReadInt(object, count_field.c_str(), true, &config.num_experts, source); !s) return s;
  if (Status s = ReadInt(object, "num_experts_per_tok", true, &config.num_experts_per_tok, source); !s)
    return s;
  if (Status s = ReadInt(object, hidden_field.c_str(), true, &config.expert_intermediate_size, source); !s)
    return s;
  config.norm_topk_prob = !layout.norm_topk_field;
  if (layout.norm_topk_field) {
    if (Status s = ReadScalar(object, "norm_topk_prob", &config.norm_topk_prob, source); !s) return s;
  }
  if (Status s = ReadInt(object, "decoder_sparse_step", false, &config.decoder_sparse_step, source); !s)
    return s;
  if (Present(object, "mlp_only_layers")) {
    const json& layers = object.at("mlp_only_layers");
    if (!layers.is_array() || !std::all_of(layers.begin(), layers.end(),
                                           [](const json& layer) { return layer.is_number_integer(); })) {
      return Error::Corruption(source + ": field 'mlp_only_layers' = " + layers.dump() +
                               " is not a list of layer indices");
    }
    config.mlp_only_layers = layers.get<std::vector<int64_t>>();
  }
  return {};
}

// Which layers slide, as the family's Hugging Face class decides: Mistral,
// Phi-3 and Gemma whenever sliding_window is set, the Qwen families only with
// use_sliding_window, and then the layers from max_window_layers on; Gemma's
// every layer but each sliding_window_pattern-th; "layer_types" (newer
// files) overrides these rules.
Status ReadSlidingLayers(const json& object, ModelConfig& config, const std::string& source) {
  const Architecture& family = config.family();
  bool use_sliding_window = family.slides_without_flag;
  if (Status s = ReadScalar(object, "use_sliding_window", &use_sliding_window, source); !s) return s;
  int64_t sliding_window = family.gemma_layout ? 4096 : 0;
  if (Status s = ReadInt(object, "sliding_window", false, &sliding_window, source); !s) return s;
  int64_t max_window_layers = family.slides_without_flag ? 0 : 28;
  if (Status s = ReadInt(object, "max_window_layers", false, &max_window_layers, source); !s) return s;
  int64_t pattern = 6;
  if (Status s = ReadInt(object, "sliding_window_pattern", false, &pattern, source); !s) return s;
  if (sliding_window < 0 || pattern < 1) {
    return Error::Corruption(source + ": sliding_window and sliding_window_pattern must be positive");
  }
  if (!use_sliding_window) sliding_window = 0;
  std::vector<bool> slides(static_cast<size_t>(std::max<int64_t>(config.num_hidden_layers, 0)));
  for (size_t i = 0; i < slides.size(); ++i) {
    slides[i] = family.gemma_layout ? (static_cast<int64_t>(i) + 1) % pattern != 0
                                    : static_cast<int64_t>(i) >= max_window_layers;
  }
  if (Present(object, "layer_types")) {
    const json& types = object.at("layer_types");
    const bool well_formed =
        types.is_array() && types.size() == slides.size() &&
        std::all_of(types.begin(), types.end(), [&](const json& type) {
          return type == "full_attention" || (type == "sliding_attention" && sliding_window > 0);
        });
    if (!well_formed) {
      return Error::Unimplemented(source + ": layer_types " + types.dump() +
                                  " is not one \"full_attention\" per "
                                  "layer (or \"sliding_attention\" with a sliding_window in use)");
    }
    for (size_t i = 0; i < slides.size(); ++i) slides[i] = types[i] == "sliding_attention";
  }
  if (sliding_window > 0 && std::find(slides.begin(), slides.end(), true) != slides.end()) {
    config.sliding_window = sliding_window;
    config.layer_slides = std::move(slides);
  }
  return {};
}

// Validate's checks of the mixture-of-experts fields; "" when they hold.
std::string ExpertFieldsProblem(const ModelConfig& c) {
  if (c.family().experts.count_field.empty()) return "";
  const std::string count(c.family().experts.count_field);
  if (c.num_experts <= 0) return count + " = " + std::to_string(c.num_experts) + " is not positive";
  if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts) {
    return "num_experts_per_tok = " + std::to_string(c.num_experts_per_tok) + " is not in [1, " + count +
           " = " + std::to_string(c.num_experts) + "]";
  }
  if (c.expert_intermediate_size <= 0) {
    return std::string(c.family().experts.hidden_field) + " = " + std::to_string(c.expert_intermediate_size) +
           " is not positive";
  }
  if (c.decoder_sparse_step <= 0)
    return "decoder_sparse_step = " + std::to_string(c.decoder_sparse_step) + " is not positive";
  if (c.activation != Activation::kSilu) return "experts compute SwiGLU: hidden_act must be silu";
  for (const int64_t layer : c.mlp_only_layers) {
    if (layer < 0 || layer >= c.num_hidden_layers) {
      return "mlp_only_layers names layer " + std::to_string(layer) + " of a model of " +
             std::to_string(c.num_hidden_layers) + " layers";
    }
  }
  return "";
}

}  // namespace

bool ModelConfig::IsSparseLayer(int64_t layer) const {
  return num_experts > 0 && (layer + 1) % decoder_sparse_step == 0 &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) == mlp_only_layers.end();
}

Status ModelConfig::Validate(const std::string& source) const {
  auto fail = [&](const std::string& what) {
    return Error::Corruption(source + ": invalid model config: " + what);
  };
  const std::pair<const char*, int64_t> positive[] = {
      {"hidden_size", hidden_size},
      {"intermediate_size", intermediate_size},
      {"num_hidden_layers", num_hidden_layers},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"vocab_size", vocab_size},
      {"max_position_embeddings", max_position_embeddings},
  };
  for (const auto& [name, value] : positive) {
    if (value <= 0) return fail(std::string(name) + " = " + std::to_string(value) + " is not positive");
  }
  if (explicit_head_dim < 0) return fail("head_dim = " + std::to_string(explicit_head_dim) + " is negative");
  if (explicit_head_dim == 0 && hidden_size % num_attention_heads != 0) {
    return fail("num_attention_heads = " + std::to_string(num_attention_heads) +
                " does not divide hidden_size = " + std::to_string(hidden_size));
  }
  if (num_key_value_heads > num_attention_heads || num_attention_heads % num_key_value_heads != 0) {
    return fail("num_key_value_heads = " + std::to_string(num_key_value_heads) +
                " does not divide num_attention_heads = " + std::to_string(num_attention_heads));
  }
  if (head_dim() % 2 != 0)
    return fail("head_dim = " + std::to_string(head_dim()) + " is odd; RoPE needs pairs");
  if (!(rms_norm_eps > 0.0f))
    return fail("rms_norm_eps = " + std::to_string(rms_norm_eps) + " is not positive");
  if (!(rope_theta > 0.0f)) return fail("rope_theta = " + std::to_string(rope_theta) + " is not positive");
  if (sliding_window < 0) return fail("sliding_window = " + std::to_string(sliding_window) + " is negative");
  if (sliding_window > 0 && static_cast<int64_t>(layer_slides.size()) != num_hidden_layers)
    return fail("a sliding window needs one layer type per layer");
  if (local_rope_theta < 0.0f || query_pre_attn_scalar < 0.0f || final_logit_softcapping < 0.0f)
    return fail("rope_local_base_freq, query_pre_attn_scalar and final_logit_softcapping must be positive");
  if (FindArchitecture(architecture) == nullptr)
    return fail("architecture '" + architecture + "' is not supported");
  if (const std::string problem = ExpertFieldsProblem(*this); !problem.empty()) return fail(problem);
  return {};
}

const Architecture& ModelConfig::family() const {
  const Architecture* found = FindArchitecture(architecture);
  CHECK(found != nullptr) << "architecture '" << architecture << "' (an unvalidated ModelConfig)";
  return *found;
}

Status ModelConfig::CheckContextFits(int64_t context_length) const {
  if (context_length > max_position_embeddings) {
    return Error::InvalidArgument("a context of " + std::to_string(context_length) +
                                  " positions exceeds the model's max_position_embeddings " +
                                  std::to_string(max_position_embeddings));
  }
  return {};
}

Result<ModelConfig> ParseModelConfigJson(const std::string& json_text, const std::string& source) {
  const json object = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Error::Corruption(source + ": not valid JSON");
  if (!object.is_object()) return Error::Corruption(source + ": not a JSON object");
  for (const auto& [key, unused] : object.items()) {
    if (!kFieldsHonoured.contains(key) && !kFieldsWithoutEffect.contains(key) &&
        !kExpertFields.contains(key)) {
      return Error::Unimplemented(source + ": field '" + key +
                                  "' is not supported (inferno does not know its effect on the model)");
    }
  }
  ModelConfig config;
  if (Status s = ReadArchitecture(object, config, source); !s) return s.error();
  SetFamilyDefaults(config);
  config.num_key_value_heads = -1;
  const std::tuple<const char*, bool, int64_t*> ints[] = {
      {"hidden_size", true, &config.hidden_size},
      {"intermediate_size", true, &config.intermediate_size},
      {"num_hidden_layers", true, &config.num_hidden_layers},
      {"num_attention_heads", true, &config.num_attention_heads},
      {"num_key_value_heads", false, &config.num_key_value_heads},
      {"vocab_size", true, &config.vocab_size},
      {"max_position_embeddings", true, &config.max_position_embeddings},
      {"head_dim", false, &config.explicit_head_dim},
  };
  for (const auto& [key, required, out] : ints) {
    if (Status s = ReadInt(object, key, required, out, source); !s) return s.error();
  }
  if (config.num_key_value_heads == -1) config.num_key_value_heads = config.num_attention_heads;
  if (Status s = ReadScalar(object, "rms_norm_eps", &config.rms_norm_eps, source); !s) return s.error();
  if (Status s = ReadScalar(object, "rope_theta", &config.rope_theta, source); !s) return s.error();
  if (Status s = ReadScalar(object, "tie_word_embeddings", &config.tie_word_embeddings, source); !s)
    return s.error();
  if (Status s = ReadRopeScaling(object, config.rope_scaling, source); !s) return s.error();
  if (Status s = FinishLongRope(object, config, source); !s) return s.error();
  if (Status s = ReadTokenIds(object, "eos_token_id", config.eos_token_ids, source); !s) return s.error();
  if (Status s = ReadExperts(object, config, source); !s) return s.error();

  if (Status s = ReadActivation(object, config, source); !s) return s.error();
  bool mlp_bias = false;
  if (Status s = ReadScalar(object, "mlp_bias", &mlp_bias, source); !s) return s.error();
  if (mlp_bias) return Error::Unimplemented(source + ": mlp_bias = true is not supported");
  bool attention_bias = false;
  if (Status s = ReadScalar(object, "attention_bias", &attention_bias, source); !s) return s.error();
  const Architecture& family = config.family();
  if (family.fixed_qkv_bias) {
    if (Present(object, "attention_bias")) {
      return Error::Unimplemented(source + ": attention_bias is not a " + config.architecture +
                                  " field (its q, k, v biases are fixed)");
    }
    config.qkv_bias = true;
  } else if (attention_bias) {
    if (!family.attention_bias_field) {
      return Error::Unimplemented(source + ": attention_bias = true is not a " + config.architecture +
                                  " setting");
    }
    config.qkv_bias = config.o_proj_bias = true;
  }
  float partial_rotary_factor = 1.0f;
  if (Status s = ReadScalar(object, "partial_rotary_factor", &partial_rotary_factor, source); !s)
    return s.error();
  if (partial_rotary_factor != 1.0f) {
    return Error::Unimplemented(source +
                                ": partial_rotary_factor = " + object.at("partial_rotary_factor").dump() +
                                " is not supported (RoPE on whole heads only)");
  }
  if (Status s = ReadGemmaFields(object, config, source); !s) return s.error();
  if (Status s = ReadSlidingLayers(object, config, source); !s) return s.error();
  if (Status s = ReadScalar(object, "inferno_norm_weight_offset", &config.norm_weight_offset, source); !s)
    return s.error();
  if (config.norm_weight_offset != 0.0f && config.norm_weight_offset != 1.0f) {
    return Error::Corruption(source + ": inferno_norm_weight_offset must be 0 or 1");
  }
  if (Status s = config.Validate(source); !s) return s.error();
  return config;
}

Status MergeGenerationConfigJson(const std::string& json_text, const std::string& source,
                                 ModelConfig& config) {
  const json object = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Error::Corruption(source + ": not valid JSON");
  if (!object.is_object()) return Error::Corruption(source + ": not a JSON object");
  return ReadTokenIds(object, "eos_token_id", config.eos_token_ids, source);
}

std::string ModelConfigToJson(const ModelConfig& config) {
  json object = {
      {"architectures", {config.architecture}},
      {"model_type", config.family().model_type},
      {"hidden_size", config.hidden_size},
      {"intermediate_size", config.intermediate_size},
      {"num_hidden_layers", config.num_hidden_layers},
      {"num_attention_heads", config.num_attention_heads},
      {"num_key_value_heads", config.num_key_value_heads},
      {"vocab_size", config.vocab_size},
      {"max_position_embeddings", config.max_position_embeddings},
      {"rms_norm_eps", config.rms_norm_eps},
      {"rope_theta", config.rope_theta},
      {"tie_word_embeddings", config.tie_word_embeddings},
      {config.family().gemma_layout ? "hidden_activation" : "hidden_act",
       config.activation == Activation::kSilu ? "silu" : "gelu_pytorch_tanh"},
      {"torch_dtype", "float32"},
  };
  // Gemma's head_dim defaults to 256, not hidden_size / heads.
  if (config.explicit_head_dim > 0 || config.family().gemma_layout) object["head_dim"] = config.head_dim();
  if (config.family().attention_bias_field) object["attention_bias"] = config.o_proj_bias;
  if (config.sliding_window > 0) {
    object["sliding_window"] = config.sliding_window;
    if (!config.family().slides_without_flag) object["use_sliding_window"] = true;
    json types = json::array();
    for (bool slides : config.layer_slides) types.push_back(slides ? "sliding_attention" : "full_attention");
    object["layer_types"] = types;
  }
  if (config.family().gemma_layout) {
    object["rope_local_base_freq"] = config.local_rope_theta;
    object["query_pre_attn_scalar"] = config.query_pre_attn_scalar;
    object["final_logit_softcapping"] =
        config.final_logit_softcapping > 0.0f ? json(config.final_logit_softcapping) : json(nullptr);
    if (config.sliding_window == 0) object["sliding_window"] = 0;
  }
  ModelConfig family_defaults;
  family_defaults.architecture = config.architecture;
  SetFamilyDefaults(family_defaults);
  if (config.norm_weight_offset != family_defaults.norm_weight_offset) {
    object["inferno_norm_weight_offset"] = config.norm_weight_offset;
  }
  const RopeScaling& scaling = config.rope_scaling;
  if (scaling.type == RopeScaling::Type::kLinear) {
    object["rope_scaling"] = {{"rope_type", "linear"}, {"factor", scaling.factor}};
  } else if (scaling.type == RopeScaling::Type::kLongRope) {
    object["rope_scaling"] = {{"rope_type", "longrope"},
                              {"short_factor", scaling.short_factor},
                              {"long_factor", scaling.long_factor},
                              {"attention_factor", scaling.attention_factor},
                              {"original_max_position_embeddings", scaling.original_max_position_embeddings}};
    object["original_max_position_embeddings"] = scaling.original_max_position_embeddings;  // Phi3Config's
  } else if (scaling.type == RopeScaling::Type::kLlama3) {
    object["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", scaling.factor},
                              {"low_freq_factor", scaling.low_freq_factor},
                              {"high_freq_factor", scaling.high_freq_factor},
                              {"original_max_position_embeddings", scaling.original_max_position_embeddings}};
  }
  if (!config.eos_token_ids.empty()) object["eos_token_id"] = config.eos_token_ids;
  if (const Architecture::ExpertLayout& layout = config.family().experts; !layout.count_field.empty()) {
    object[std::string(layout.count_field)] = config.num_experts;
    object["num_experts_per_tok"] = config.num_experts_per_tok;
    object[std::string(layout.hidden_field)] = config.expert_intermediate_size;
    if (layout.norm_topk_field) object["norm_topk_prob"] = config.norm_topk_prob;
    if (layout.dense_layer_fields) {
      object["decoder_sparse_step"] = config.decoder_sparse_step;
      object["mlp_only_layers"] = config.mlp_only_layers;
    }
  }
  return object.dump(2) + "\n";
}

float LongRopeAttentionFactor(int64_t max_positions, int64_t original) {
  const double s = static_cast<double>(max_positions) / static_cast<double>(original);
  return s <= 1.0
             ? 1.0f
             : static_cast<float>(std::sqrt(1.0 + std::log(s) / std::log(static_cast<double>(original))));
}

}  // namespace inferno
