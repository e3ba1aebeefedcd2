// The Llama-family architectures in GGUF, as llama.cpp writes and reads
// them, in one place: their metadata keys and the ModelConfig they give, and
// their tensor names and layouts against Hugging Face's (loader/checkpoint.h).
// general.architecture names the family's entry of model/architecture.h
// ("llama", "qwen2", "qwen3", "qwen3moe"; others are refused), and its keys carry that
// prefix; below, "llama." stands for it.
//
//   general.architecture                   "llama", "qwen2", "qwen3" or "qwen3moe"
//   llama.context_length                   max_position_embeddings
//   llama.embedding_length                 hidden_size
//   llama.block_count                      num_hidden_layers
//   llama.feed_forward_length              intermediate_size
//   llama.attention.head_count             num_attention_heads
//   llama.attention.head_count_kv          num_key_value_heads (default: head_count)
//   llama.attention.layer_norm_rms_epsilon rms_norm_eps
//   llama.rope.freq_base                   rope_theta (default 10000)
//   llama.rope.dimension_count             must equal head_dim (no partial RoPE)
//   llama.attention.key_length, .value_length  head_dim when given (must agree)
//   llama.rope.scaling.type, .factor       "none" or "linear" (others refused)
//   llama.vocab_size                       must equal token_embd's rows
//   llama.expert_count, .expert_used_count must be 0 in a dense family; in a
//                                          mixture of experts (qwen3moe, and
//                                          "llama" with experts: Mixtral):
//                                          num_experts, num_experts_per_tok
//   qwen3moe.expert_feed_forward_length   expert_intermediate_size (default,
//                                          as llama.cpp: feed_forward_length /
//                                          expert_used_count; Mixtral's is
//                                          feed_forward_length); the top-k
//                                          weights are always renormalised
//                                          and every layer is sparse, as
//                                          llama.cpp computes both
//   tokenizer.ggml.eos_token_id            eos_token_ids
// Any other key of the family's prefix is refused; general.* and tokenizer.* keys describe
// the file and its tokenizer (text/gguf_tokenizer.h) and do not change the
// arithmetic.
//
//   token_embd.weight        model.embed_tokens.weight
//   blk.{i}.attn_norm.weight model.layers.{i}.input_layernorm.weight
//   blk.{i}.attn_q.weight    ...self_attn.q_proj.weight   (rows interleaved, see below)
//   blk.{i}.attn_k.weight    ...self_attn.k_proj.weight   (rows interleaved)
//   blk.{i}.attn_v.weight    ...self_attn.v_proj.weight
//   blk.{i}.attn_output.weight ...self_attn.o_proj.weight
//   blk.{i}.ffn_norm.weight  ...post_attention_layernorm.weight
//   blk.{i}.ffn_gate.weight  ...mlp.gate_proj.weight
//   blk.{i}.ffn_up.weight    ...mlp.up_proj.weight
//   blk.{i}.ffn_down.weight  ...mlp.down_proj.weight
//   output_norm.weight       model.norm.weight
//   output.weight            lm_head.weight (absent: tied to token_embd)
//   rope_factors_long.weight, rope_factors_short.weight  Phi-3's longrope
//                            factors (f32, head_dim / 2 each; read into the
//                            config with phi3.rope.scaling.original_context_length
//                            and .attn_factor)
//   blk.{i}.attn_{q,k,v,output}.bias  the biases (Qwen2's q, k, v)
//   blk.{i}.attn_{q,k}_norm.weight    ...self_attn.{q,k}_norm.weight (Qwen3)
//   blk.{i}.ffn_gate_inp.weight       the router, ...mlp.gate.weight (always f32,
//                                     as llama.cpp's quantizer leaves it)
//   blk.{i}.ffn_{gate,up,down}_exps.weight  every expert's gate, up or down
//                                     stacked: ne = {columns, rows, experts},
//                                     expert e's matrix at e's slab of rows
//   blk.{i}.ffn_{gate,up,down}.{e}.weight  expert e's alone, ne = {columns,
//                                     rows}: the first Mixtral GGUFs' layout,
//                                     which llama.cpp still reads
// A (rows, columns) tensor is stored with ne = {columns, rows}. For "llama"
// (only: Architecture::gguf_interleaved_rope), llama.cpp's converter stores
// attn_q and attn_k rows in Meta's interleaved RoPE order
// (each head's rotating pairs adjacent, as llama2.c): Hugging Face row
// h*hd + j*hd/2 + i is GGUF row h*hd + 2i + j.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "loader/gguf_format.h"
#include "loader/gguf_vocabulary.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

inline constexpr char kGgufArchitectureKey[] = "general.architecture";
inline constexpr char kGgufLlamaArchitecture[] = "llama";

// One tensor of a GGUF llama file under its Hugging Face name and shape.
struct GgufLlamaTensor {
  TensorInfo info;
  uint64_t begin = 0;             // absolute byte offset of its data in the file
  int64_t interleaved_heads = 0;  // > 0: rows in Meta's interleaved RoPE order, this many heads
};

struct GgufLlamaModel {
  ModelConfig config;
  std::vector<GgufLlamaTensor> tensors;  // in file order
};

// The model of a parsed GGUF file whose bytes are `bytes` (the tensors
// read into the config, Phi-3's rope_factors_*, come from there). Fails,
// naming `source` and the key or tensor, on another architecture, a missing,
// mistyped, contradictory or unknown llama.* key, or a tensor name outside
// the list above. Shapes are checked against the config by the caller
// (CheckTensorsMatchConfig).
Result<GgufLlamaModel> ReadGgufLlama(const GgufFile& file, std::span<const std::byte> bytes,
                                     const std::string& source);

// The GGUF name of a Hugging Face tensor name of `config`'s family (the list
// above; Gemma's and Phi-3's own names). Precondition: `hf_name` is one of
// StoredTensorSpecs(config)'s names, not a router's or an expert's
// (GgufExpertTensorName).
std::string GgufTensorName(std::string_view hf_name, const ModelConfig& config);

// Gemma's query_pre_attn_scalar as llama.cpp derives it, GGUF having no key
// for it: head_dim, but hidden_size / heads for the 62-layer (27B) model.
int64_t GgufGemmaQueryScalar(const ModelConfig& config);

// The n of llama.cpp's attention.sliding_window_pattern that gives
// config.layer_slides (layer i slides when n == 0 or i % n < n - 1; Gemma's
// default n is 6); -1 when no n does. Precondition: config.sliding_window > 0.
int64_t GgufSlidingPattern(const ModelConfig& config);

// For a router or expert tensor of `config` (model/llama_layout.h), its GGUF
// tensor's name and the expert's index in the stack (-1 for the router);
// nullopt for other names.
std::optional<std::pair<std::string, int64_t>> GgufExpertTensorName(const ModelConfig& config,
                                                                    std::string_view hf_name);

// general.architecture and the llama.* keys of `config`, in the order
// llama.cpp's converter writes them. Precondition: no RoPE scaling, or
// Phi-3's longrope.
std::vector<GgufKeyValue> GgufLlamaMetadata(const ModelConfig& config);

// Phi-3's longrope factor tensors: the long factors, then the short.
inline constexpr std::string_view kGgufRopeFactorNames[] = {"rope_factors_long.weight",
                                                            "rope_factors_short.weight"};

}  // namespace inferno
