#include "loader/model_config.h"

#include <tuple>

#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using nlohmann::json;

// Reads integer field `key` into `*out`; absent leaves the default when
// `required` is false.
Status ReadInt(const json& object, const char* key, bool required, int64_t* out, const std::string& source) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return Error::Corruption(source + ": missing integer field '" + std::string(key) + "'");
    return {};
  }
  if (!it->is_number_integer()) {
    return Error::Corruption(source + ": field '" + std::string(key) + "' = " + it->dump() +
                             " is not an integer");
  }
  *out = it->get<int64_t>();
  return {};
}

Status ReadFloat(const json& object, const char* key, float* out, const std::string& source) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_number()) {
    return Error::Corruption(source + ": field '" + std::string(key) + "' = " + it->dump() +
                             " is not a number");
  }
  *out = it->get<float>();
  return {};
}

}  // namespace

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
  if (hidden_size % num_attention_heads != 0) {
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
  return {};
}

Result<ModelConfig> ParseModelConfigJson(const std::string& json_text, const std::string& source) {
  const json object = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Error::Corruption(source + ": not valid JSON");
  if (!object.is_object()) return Error::Corruption(source + ": not a JSON object");
  ModelConfig config;
  config.num_key_value_heads = -1;
  const std::tuple<const char*, bool, int64_t*> ints[] = {
      {"hidden_size", true, &config.hidden_size},
      {"intermediate_size", true, &config.intermediate_size},
      {"num_hidden_layers", true, &config.num_hidden_layers},
      {"num_attention_heads", true, &config.num_attention_heads},
      {"num_key_value_heads", false, &config.num_key_value_heads},
      {"vocab_size", true, &config.vocab_size},
      {"max_position_embeddings", true, &config.max_position_embeddings},
  };
  for (const auto& [key, required, out] : ints) {
    if (Status s = ReadInt(object, key, required, out, source); !s) return s.error();
  }
  if (config.num_key_value_heads == -1) config.num_key_value_heads = config.num_attention_heads;
  if (Status s = ReadFloat(object, "rms_norm_eps", &config.rms_norm_eps, source); !s) return s.error();
  if (Status s = ReadFloat(object, "rope_theta", &config.rope_theta, source); !s) return s.error();
  if (auto it = object.find("tie_word_embeddings"); it != object.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return Error::Corruption(source + ": field 'tie_word_embeddings' = " + it->dump() +
                               " is not a boolean");
    }
    config.tie_word_embeddings = it->get<bool>();
  }
  if (Status s = config.Validate(source); !s) return s.error();
  return config;
}

std::string ModelConfigToJson(const ModelConfig& config) {
  const json object = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
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
      {"torch_dtype", "float32"},
  };
  return object.dump(2) + "\n";
}

}  // namespace inferno
