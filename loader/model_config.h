// ModelConfig: the hyper-parameters of a Llama-architecture model, with the
// names of Hugging Face's config.json.
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"

namespace inferno {

struct ModelConfig {
  int64_t hidden_size = 0;        // dim
  int64_t intermediate_size = 0;  // hidden dim of the SwiGLU MLP
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // <= num_attention_heads, divides it
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // context length (llama2.c seq_len)
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  bool tie_word_embeddings = false;  // lm_head shares embed_tokens

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t kv_dim() const { return head_dim() * num_key_value_heads; }

  // Checks that the fields are positive and consistent (heads divide the
  // dimension, kv heads divide heads, head_dim even for RoPE). `source` names
  // the file for the error message.
  Status Validate(const std::string& source) const;
};

// Parses a Hugging Face config.json text. Missing optional fields take the
// defaults above; num_key_value_heads defaults to num_attention_heads.
Result<ModelConfig> ParseModelConfigJson(const std::string& json_text, const std::string& source);

// Serializes to config.json text (architectures = LlamaForCausalLM).
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace inferno
