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
  // GGUF's general.architecture for the family ("" when llama.cpp writes it
  // as another family's: Mistral files are "llama" files), the prefix of its
  // metadata keys; and whether the q and k rows are stored in Meta's
  // interleaved RoPE order (llama.cpp's converter permutes them for "llama"
  // only, whose RoPE is the interleaved kind; the Qwen families use the
  // rotate-half RoPE of Hugging Face and keep its rows).
  std::string_view gguf_name;
  bool gguf_interleaved_rope = false;
  // Gemma: RMSNorm scales by (1 + weight), its config.json names the
  // activation "hidden_activation", the embedding is multiplied by
  // sqrt(hidden_size), every layer adds a norm after attention and one after
  // the feed-forward ("post_attention_layernorm" is the former; the
  // feed-forward's own norm is "pre_feedforward_layernorm"), and its config
  // has local/global attention fields (sliding_window_pattern,
  // rope_local_base_freq, query_pre_attn_scalar, the soft-capping fields).
  bool gemma_layout = false;
  // Phi-3: q, k, v stored as one "self_attn.qkv_proj" (rows q then k then v)
  // and gate, up as one "mlp.gate_up_proj" (rows gate then up); readers
  // present the parts under the Llama names.
  bool fused_projections = false;
  // Mixture-of-experts feed-forward (Mixtral, Qwen3-MoE); all empty for a
  // dense family. See ExpertLayout.
  struct ExpertLayout {
    // config.json's expert count ("num_local_experts" / "num_experts"); ""
    // for a dense family. "num_experts_per_tok" is the top-k of every family.
    std::string_view count_field;
    // config.json's hidden size of one expert ("intermediate_size" when the
    // experts are the model's only MLPs, "moe_intermediate_size" otherwise).
    std::string_view hidden_field;
    // Whether "norm_topk_prob" decides if the top-k weights are renormalised
    // to sum to 1 (Qwen3-MoE); otherwise they always are (Mixtral).
    bool norm_topk_field = false;
    // Whether "decoder_sparse_step" and "mlp_only_layers" make some layers
    // dense (their MLP of intermediate_size, named as Llama's).
    bool dense_layer_fields = false;
    // Layer i's router is "model.layers.{i}.{block}.gate.weight" (num_experts,
    // dim); expert e's matrices "{block}.experts.{e}.{gate|up|down}.weight",
    // shaped as the dense MLP's gate_proj, up_proj and down_proj.
    std::string_view block;
    std::string_view gate;
    std::string_view up;
    std::string_view down;
  };
  ExpertLayout experts = {};
};

// Every supported family, Llama first.
inline constexpr Architecture kArchitectures[] = {
    {.name = "LlamaForCausalLM",
     .model_type = "llama",
     .attention_bias_field = true,
     .slides_without_flag = true,
     .gguf_name = "llama",
     .gguf_interleaved_rope = true,
     .fused_projections = false},
    {.name = "MistralForCausalLM",
     .model_type = "mistral",
     .slides_without_flag = true,
     .gguf_name = "",
     .gguf_interleaved_rope = false,
     .fused_projections = false},
    {.name = "Qwen2ForCausalLM",
     .model_type = "qwen2",
     .fixed_qkv_bias = true,
     .gguf_name = "qwen2",
     .gguf_interleaved_rope = false,
     .fused_projections = false},
    {.name = "Qwen3ForCausalLM",
     .model_type = "qwen3",
     .attention_bias_field = true,
     .qk_norm = true,
     .gguf_name = "qwen3",
     .gguf_interleaved_rope = false,
     .fused_projections = false},
    {.name = "Gemma3ForCausalLM",
     .model_type = "gemma3_text",
     .attention_bias_field = true,
     .qk_norm = true,
     .slides_without_flag = true,
     .gguf_name = "gemma3",
     .gguf_interleaved_rope = false,
     .gemma_layout = true,
     .fused_projections = false},
    {.name = "Phi3ForCausalLM",
     .model_type = "phi3",
     .slides_without_flag = true,
     .gguf_name = "phi3",
     .gguf_interleaved_rope = false,
     .fused_projections = true},
    {.name = "MixtralForCausalLM",
     .model_type = "mixtral",
     .slides_without_flag = true,
     .gguf_name = "llama",  // llama.cpp's "llama" with experts
     .gguf_interleaved_rope = true,
     .experts = {.count_field = "num_local_experts",
                 .hidden_field = "intermediate_size",
                 .norm_topk_field = false,
                 .dense_layer_fields = false,
                 .block = "block_sparse_moe",
                 .gate = "w1",
                 .up = "w3",
                 .down = "w2"}},
    {.name = "Qwen3MoeForCausalLM",
     .model_type = "qwen3_moe",
     .attention_bias_field = true,
     .qk_norm = true,
     .gguf_name = "qwen3moe",
     .gguf_interleaved_rope = false,
     .experts = {.count_field = "num_experts",
                 .hidden_field = "moe_intermediate_size",
                 .norm_topk_field = true,
                 .dense_layer_fields = true,
                 .block = "mlp",
                 .gate = "gate_proj",
                 .up = "up_proj",
                 .down = "down_proj"}},
};

// The entry named `name`; nullptr for an unsupported family.
const Architecture* FindArchitecture(std::string_view name);
// The entry whose gguf_name is `gguf_name`, the first (Llama before Mixtral)
// or, with `experts`, the first with experts; nullptr for none.
const Architecture* FindGgufArchitecture(std::string_view gguf_name, bool experts = false);

// "LlamaForCausalLM, MistralForCausalLM, ..." — for error messages.
std::string_view ArchitectureNames();

}  // namespace inferno
