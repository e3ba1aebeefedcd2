#include "model/model_config.h"

#include <algorithm>
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
    "_name_or_path",   "torch_dtype",         "transformers_version", "initializer_range",
    "use_cache",       "attention_dropout",   "pretraining_tp",       "bos_token_id",
    "pad_token_id",    "output_attentions",   "output_hidden_states", "return_dict",
    "tokenizer_class", "_attn_implementation"};

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
                                                    "eos_token_id"};

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
  } else {
    return fail("type '" + type + "' is not supported (linear, llama3)");
  }
  for (const auto& [key, unused] : value.items()) {
    if (!allowed.contains(key)) return fail("field '" + key + "' is not supported for type '" + type + "'");
  }
  const std::string where = source + ": rope_scaling";
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
  if (sliding_window > 0 && context_length > sliding_window) {
    return Error::Unimplemented("the model's attention slides over " + std::to_string(sliding_window) +
                                " positions (sliding_window), which inferno does not implement, and a "
                                "sequence here may reach " +
                                std::to_string(context_length) +
                                " positions: lower --max-new-tokens or --context to at most " +
                                std::to_string(sliding_window) + " positions in all");
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
  if (Status s = ReadTokenIds(object, "eos_token_id", config.eos_token_ids, source); !s) return s.error();
  if (Status s = ReadExperts(object, config, source); !s) return s.error();

  if (Present(object, "hidden_act") && object.at("hidden_act") != "silu") {
    return Error::Unimplemented(source + ": hidden_act " + object.at("hidden_act").dump() +
                                " is not supported (silu)");
  }
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
  // Mistral slides whenever sliding_window is set; the Qwen families only
  // with use_sliding_window (then on layers from max_window_layers on, which
  // the refusal in CheckContextFits covers by treating every layer alike).
  bool use_sliding_window = family.slides_without_flag;
  if (Status s = ReadScalar(object, "use_sliding_window", &use_sliding_window, source); !s) return s.error();
  int64_t sliding_window = 0;
  if (Status s = ReadInt(object, "sliding_window", false, &sliding_window, source); !s) return s.error();
  int64_t max_window_layers = 0;
  if (Status s = ReadInt(object, "max_window_layers", false, &max_window_layers, source); !s)
    return s.error();
  if (use_sliding_window) config.sliding_window = sliding_window;
  // layer_types (newer files): which layers slide; without a window every
  // layer must attend fully.
  if (Present(object, "layer_types")) {
    const json& types = object.at("layer_types");
    const bool well_formed =
        types.is_array() && static_cast<int64_t>(types.size()) == config.num_hidden_layers &&
        std::all_of(types.begin(), types.end(), [&](const json& type) {
          return type == "full_attention" || (type == "sliding_attention" && config.sliding_window > 0);
        });
    if (!well_formed) {
      return Error::Unimplemented(source + ": layer_types " + types.dump() +
                                  " is not one \"full_attention\" per "
                                  "layer (or \"sliding_attention\" with a sliding_window in use)");
    }
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
      {"hidden_act", "silu"},
      {"torch_dtype", "float32"},
  };
  if (config.explicit_head_dim > 0) object["head_dim"] = config.explicit_head_dim;
  if (config.family().attention_bias_field) object["attention_bias"] = config.o_proj_bias;
  if (config.sliding_window > 0) {
    object["sliding_window"] = config.sliding_window;
    if (!config.family().slides_without_flag) object["use_sliding_window"] = true;
  }
  const RopeScaling& scaling = config.rope_scaling;
  if (scaling.type == RopeScaling::Type::kLinear) {
    object["rope_scaling"] = {{"rope_type", "linear"}, {"factor", scaling.factor}};
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

}  // namespace inferno
