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
    kLinear,    // positions divided by `factor`
    kLlama3,    // Llama 3.1's per-frequency scaling
    kLongRope,  // Phi-3's: frequency i divided by short_factor[i], cos and sin times attention_factor
  };
  Type type = Type::kNone;
  float factor = 1.0f;
  // kLlama3 only.
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  // kLlama3, kLongRope (Phi-3's config.json has it beside rope_scaling).
  int64_t original_max_position_embeddings = 8192;
  // kLongRope: (head_dim / 2) each: short_factor for a context of at most
  // original_max_position_embeddings, long_factor past it (engine/rope.h).
  std::vector<float> short_factor = {};
  std::vector<float> long_factor = {};
  float attention_factor = 1.0f;

  bool operator==(const RopeScaling&) const = default;
};

// longrope's attention factor when a file does not give it, as transformers
// (and llama.cpp's converter) compute it: sqrt(1 + ln(s) / ln(original)) for
// s = max_positions / original, 1 when s <= 1.
float LongRopeAttentionFactor(int64_t max_positions, int64_t original);

// The feed-forward's gate activation: silu(gate) * up (SwiGLU), or GELU with
// the tanh approximation (Gemma's "gelu_pytorch_tanh", GeGLU).
enum class Activation { kSilu, kGeluTanh };

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
  // On the layers that slide (layer_slides), a position attends to the last
  // `sliding_window` positions, itself included; 0 = every layer attends to
  // every earlier position.
  int64_t sliding_window = 0;
  // (num_hidden_layers) when sliding_window > 0: which layers slide (all of
  // Mistral's; Qwen2's from max_window_layers on; Gemma's local layers, by
  // sliding_window_pattern or layer_types); empty otherwise.
  std::vector<bool> layer_slides;
  // RoPE base of the sliding layers (Gemma's rope_local_base_freq, without
  // rope_scaling); 0 = rope_theta, scaled, on every layer.
  float local_rope_theta = 0.0f;
  // Attention scores are q·k / sqrt(query_pre_attn_scalar) (Gemma); 0 =
  // head_dim.
  float query_pre_attn_scalar = 0.0f;
  // Logits become cap * tanh(logits / cap) (final_logit_softcapping); 0 = none.
  float final_logit_softcapping = 0.0f;
  Activation activation = Activation::kSilu;
  // RMSNorm multiplies by (norm_weight_offset + weight): 1 for Gemma's
  // Hugging Face files, whose norms store weight - 1, and 0 otherwise
  // (llama.cpp's Gemma GGUF files store the sum). Config files spell a value
  // other than the family's as "inferno_norm_weight_offset".
  float norm_weight_offset = 0.0f;
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

  // Whether layer `layer` attends through the sliding window.
  bool LayerSlides(int64_t layer) const {
    return sliding_window > 0 && layer_slides[static_cast<size_t>(layer)];
  }
  // Embeddings are multiplied by sqrt(hidden_size) (Gemma).
  bool scales_embedding() const { return family().gemma_layout; }
  // Each layer adds RMSNorms after attention and after the feed-forward (Gemma).
  bool post_norms() const { return family().gemma_layout; }

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

  // Fails when a sequence of `context_length` positions exceeds
  // max_position_embeddings.
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
