// ModelConfig: the hyper-parameters of a Llama-family model (the families of
// model/architecture.h), with the names of Hugging Face's config.json.
//
// Every config.json field is honoured or refused (ParseModelConfigJson):
// fields that change the arithmetic are implemented or fail the parse naming
// the field; fields without effect on inference (dtype, versions, training
// settings) are listed as such and skipped; any other field is an error, so
// a model never runs with a setting silently ignored.
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/architecture.h"

namespace inferno {

// RoPE frequency scaling (config.json "rope_scaling").
struct RopeScaling {
  enum class Type {
    kNone,
    kLinear,  // positions divided by `factor`
    kLlama3,  // Llama 3.1's per-frequency scaling
  };
  Type type = Type::kNone;
  float factor = 1.0f;
  // kLlama3 only.
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_max_position_embeddings = 8192;

  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string architecture = "LlamaForCausalLM";  // the name of an entry of kArchitectures
  int64_t hidden_size = 0;                        // dim
  int64_t intermediate_size = 0;                  // hidden dim of the SwiGLU MLP
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // <= num_attention_heads, divides it
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // the model's context limit (llama2.c seq_len)
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;  // lm_head shares embed_tokens
  // config.json "head_dim" when given (it may differ from hidden / heads,
  // e.g. Qwen3, Gemma); 0 means hidden_size / num_attention_heads.
  int64_t explicit_head_dim = 0;
  // q, k and v projections have biases (Qwen2 always; Llama's
  // "attention_bias" also gives o_proj one).
  bool qkv_bias = false;
  bool o_proj_bias = false;
  // Attention sees only the last `sliding_window` positions (Mistral);
  // 0 = full attention. Not implemented: runs whose sequences could exceed
  // it are refused (see CheckContextFits).
  int64_t sliding_window = 0;
  // eos_token_id of config.json and generation_config.json (an int or a
  // list in either); empty when neither names one.
  std::vector<int64_t> eos_token_ids;
  // Mixture of experts (families with family().experts; 0 experts: dense).
  // A sparse layer's feed-forward routes each position to the
  // num_experts_per_tok experts of the largest router logits, weighted by
  // their softmax over all experts (renormalised over the chosen ones when
  // norm_topk_prob), each expert a SwiGLU MLP of expert_intermediate_size.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t expert_intermediate_size = 0;
  bool norm_topk_prob = false;
  // Layer i is sparse when (i + 1) % decoder_sparse_step == 0 and i is not
  // in mlp_only_layers (Qwen3-MoE); otherwise its MLP is dense, of
  // intermediate_size.
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  // The architecture's entry. Precondition: `architecture` names one
  // (Validate checks it).
  const Architecture& family() const;
  // Each head of q and k is RMS-normed before RoPE (Qwen3).
  bool qk_norm() const { return family().qk_norm; }

  int64_t head_dim() const {
    return explicit_head_dim > 0 ? explicit_head_dim : hidden_size / num_attention_heads;
  }
  int64_t q_dim() const { return head_dim() * num_attention_heads; }
  int64_t kv_dim() const { return head_dim() * num_key_value_heads; }
  // Whether layer `layer`'s feed-forward is a mixture of experts.
  bool IsSparseLayer(int64_t layer) const;

  // Checks that the fields are positive and consistent (heads divide the
  // dimension unless head_dim is explicit, kv heads divide heads, head_dim
  // even for RoPE, a known architecture). `source` names the file.
  Status Validate(const std::string& source) const;

  // Fails, naming the setting, when a sequence of `context_length` positions
  // needs something the engine does not implement (a sliding window it
  // could exceed), or exceeds max_position_embeddings.
  Status CheckContextFits(int64_t context_length) const;
};

// Parses a Hugging Face config.json text (see the field policy above).
// Missing optional fields take the defaults above; num_key_value_heads
// defaults to num_attention_heads.
Result<ModelConfig> ParseModelConfigJson(const std::string& json_text, const std::string& source);

// Adds the eos_token_id of a generation_config.json text to
// `config.eos_token_ids` (other fields are generation defaults, which
// infer's flags set). Fails naming `source` on malformed JSON or ids.
Status MergeGenerationConfigJson(const std::string& json_text, const std::string& source,
                                 ModelConfig& config);

// Serializes to config.json text; ParseModelConfigJson reads back every field.
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace inferno
