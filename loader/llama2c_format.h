// The llama2.c checkpoint format (version 0, "legacy"), in one place: its
// header, its fixed tensor order, and the mapping to Hugging Face names.
//
//   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//         (little-endian; vocab_size < 0: a separate classifier follows)
//   then float32 arrays, row-major [out, in]:
//     token_embedding_table  (vocab_size, dim)          -> model.embed_tokens.weight
//     rms_att_weight         (n_layers, dim)            -> input_layernorm
//     wq                     (n_layers, dim, dim)       -> self_attn.q_proj (RoPE-permuted)
//     wk                     (n_layers, kv_dim, dim)    -> self_attn.k_proj (RoPE-permuted)
//     wv                     (n_layers, kv_dim, dim)    -> self_attn.v_proj
//     wo                     (n_layers, dim, dim)       -> self_attn.o_proj
//     rms_ffn_weight         (n_layers, dim)            -> post_attention_layernorm
//     w1                     (n_layers, hidden_dim, dim) -> mlp.gate_proj
//     w2                     (n_layers, dim, hidden_dim) -> mlp.down_proj
//     w3                     (n_layers, hidden_dim, dim) -> mlp.up_proj
//     rms_final_weight       (dim)                      -> model.norm.weight
//     freq_cis_real, freq_cis_imag (seq_len, head_dim/2) each: legacy, skipped
//     wcls                   (vocab_size, dim)          -> lm_head.weight, only if vocab_size < 0
//   kv_dim = dim * n_kv_heads / n_heads; without wcls the embedding is shared
//   (tie_word_embeddings). Generation stops at EOS (2) or BOS (1), as run.c
//   does: the config's eos_token_ids.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/llama_layout.h"
#include "model/model_config.h"

namespace inferno {

inline constexpr uint64_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);
// llama2.c's fixed hyper-parameters, absent from its header.
inline constexpr float kLlama2cRmsNormEps = 1e-5f;
inline constexpr float kLlama2cRopeTheta = 10000.0f;
inline constexpr int64_t kLlama2cStopIds[] = {2, 1};  // EOS, BOS

// One tensor of a llama2.c file under its Hugging Face name.
struct Llama2cTensor {
  TensorSpec spec;
  uint64_t offset = 0;     // byte offset in the file
  int64_t rope_heads = 0;  // > 0: rows in llama2.c RoPE order with this many heads
};

struct Llama2cLayout {
  ModelConfig config;  // tie_word_embeddings = shared classifier
  std::vector<Llama2cTensor> tensors;
  uint64_t file_bytes = 0;  // the exact size the file must have
};

// Reads the header of the llama2.c file whose complete contents are `file`
// and lays out its tensors. Fails, naming `source` and the offending value, on
// a file shorter than the header, non-positive or inconsistent fields, sizes
// that overflow, and a file size other than the layout's.
Result<Llama2cLayout> ParseLlama2cFile(std::span<const std::byte> file, const std::string& source);

}  // namespace inferno
