// Architecture: what sets each supported model family apart from Llama, one
// table entry per family (config.json "architectures"). Everything that
// differs between families — which config fields exist, which tensors a
// layer has, which operations the forward pass adds — is read from the
// entry, so the next family is a new entry plus whatever is new in it.
//
// Thread-safety: constant data and pure functions.
#pragma once

#include <string_view>

namespace inferno {

struct Architecture {
  std::string_view name;        // config.json "architectures" (Hugging Face's class)
  std::string_view model_type;  // config.json "model_type"
  // q, k and v projections always have biases (Qwen2); no "attention_bias"
  // field is allowed then.
  bool fixed_qkv_bias = false;
  // config.json "attention_bias" gives q, k, v and o_proj biases (Llama,
  // Qwen3); other families refuse attention_bias = true.
  bool attention_bias_field = false;
  // Each head of q and k goes through its own RMSNorm (weights (head_dim),
  // "self_attn.q_norm.weight" / "k_norm") before RoPE (Qwen3).
  bool qk_norm = false;
  // sliding_window applies whenever set (Mistral), or only with
  // "use_sliding_window": true (the Qwen families).
  bool slides_without_flag = false;
};

// Every supported family, Llama first.
inline constexpr Architecture kArchitectures[] = {
    {.name = "LlamaForCausalLM",
     .model_type = "llama",
     .attention_bias_field = true,
     .slides_without_flag = true},
    {.name = "MistralForCausalLM", .model_type = "mistral", .slides_without_flag = true},
    {.name = "Qwen2ForCausalLM", .model_type = "qwen2", .fixed_qkv_bias = true},
    {.name = "Qwen3ForCausalLM", .model_type = "qwen3", .attention_bias_field = true, .qk_norm = true},
};

// The entry named `name`; nullptr for an unsupported family.
const Architecture* FindArchitecture(std::string_view name);

// "LlamaForCausalLM, MistralForCausalLM, ..." — for error messages.
std::string_view ArchitectureNames();

}  // namespace inferno
