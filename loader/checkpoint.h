// Checkpoint: a read-only, memory-mapped view of a Llama model's weights —
// its ModelConfig and its tensors by Hugging Face Llama name — whatever the
// file format. Tensors are read one at a time, converted to f32 or in their
// stored type; a tensor that is never read is never touched on disk.
//
// Tensor names and layouts are Hugging Face's (row-major, [out, in] for
// projections), whatever the source format:
//   model.embed_tokens.weight                      (vocab_size, hidden_size)
//   model.layers.{i}.input_layernorm.weight        (hidden_size)
//   model.layers.{i}.self_attn.q_proj.weight       (n_heads * head_dim, hidden_size)
//   model.layers.{i}.self_attn.k_proj.weight       (n_kv_heads * head_dim, hidden_size)
//   model.layers.{i}.self_attn.v_proj.weight       (n_kv_heads * head_dim, hidden_size)
//   model.layers.{i}.self_attn.o_proj.weight       (hidden_size, n_heads * head_dim)
//   model.layers.{i}.post_attention_layernorm.weight (hidden_size)
//   model.layers.{i}.mlp.gate_proj.weight          (intermediate_size, hidden_size)
//   model.layers.{i}.mlp.up_proj.weight            (intermediate_size, hidden_size)
//   model.layers.{i}.mlp.down_proj.weight          (hidden_size, intermediate_size)
//   in a mixture-of-experts layer, in place of the three mlp tensors
//   (names per family, model/llama_layout.h: Qwen3-MoE's below, Mixtral's
//   block_sparse_moe.gate and block_sparse_moe.experts.{e}.w1/w3/w2):
//   model.layers.{i}.mlp.gate.weight               (num_experts, hidden_size)
//   model.layers.{i}.mlp.experts.{e}.gate_proj.weight (expert_intermediate_size, hidden_size)
//   model.layers.{i}.mlp.experts.{e}.up_proj.weight   (expert_intermediate_size, hidden_size)
//   model.layers.{i}.mlp.experts.{e}.down_proj.weight (hidden_size, expert_intermediate_size)
//   model.norm.weight                              (hidden_size)
//   lm_head.weight                                 (vocab_size, hidden_size), absent when tied
// q_proj and k_proj rows are in Hugging Face's RoPE order (rotating pairs
// (i, i + head_dim/2) of each head); a llama2.c or GGUF checkpoint, which
// rotates adjacent pairs (2i, 2i+1), is permuted into that order on read.
//
// Thread-safety: const methods may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

class Checkpoint {
 public:
  virtual ~Checkpoint() = default;

  // Opens a safetensors file, a folder holding model.safetensors or a sharded
  // model.safetensors.index.json (plus config.json, and the eos_token_id of
  // generation_config.json when there is one), a GGUF file of the llama
  // architecture (told by its magic), or a llama2.c .bin file.
  // Validates headers, and that the tensors are exactly those the config
  // requires, with their shapes.
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& path);

  virtual const ModelConfig& config() const = 0;
  // Every tensor, in a stable order.
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  // Fails if `name` is not in the checkpoint.
  Result<TensorInfo> Find(const std::string& name) const;

  // Copies tensor `name` into `out`, converted to f32. `out.size()` must equal
  // the tensor's element count.
  virtual Status ReadF32(const std::string& name, std::span<float> out) const = 0;
  // Rows [row_begin, row_end) of a 2-D tensor (or the whole 1-D tensor) into
  // `out`, converted to f32 — for tensor-parallel slices.
  virtual Status ReadRowsF32(const std::string& name, int64_t row_begin, int64_t row_end,
                             std::span<float> out) const = 0;

  // Rows [row_begin, row_end) of tensor `name` as stored, without
  // conversion: its dtype (tensors()), Hugging Face row order (rows permuted
  // as ReadRowsF32 permutes them), each row DTypeBytes(dtype, row elements)
  // bytes, back to back in `out`. Rows are the first dimension (a 1-D
  // tensor's rows are its elements; a scalar is one row). Fails when the
  // tensor is missing, the rows are out of range, `out.size()` is not their
  // byte count, or a row is not whole blocks of a block type (a 1-D Q8_0 or
  // Q4_0 tensor). For weights kept in their stored type (bf16, f16, Q8_0,
  // Q4_0) and for converting shards.
  virtual Status ReadRowsStored(const std::string& name, int64_t row_begin, int64_t row_end,
                                std::span<std::byte> out) const = 0;

  // Rows of a tensor used where they lie in the checkpoint's file, without a
  // copy: `bytes` (rows of `dtype`, as ReadRowsStored gives them) stays
  // valid, and its pages shared with the page cache, as long as `mapping`
  // (which keeps the file mapped) is held — also after the Checkpoint is
  // gone.
  struct MappedRows {
    DType dtype = DType::kF32;
    std::span<const std::byte> bytes;
    std::shared_ptr<const void> mapping;
  };
  // Rows [row_begin, row_end) of tensor `name` in place, with their pages
  // mapped in, when the file holds exactly the bytes ReadRowsStored would
  // give, in that order (not reordered, as llama2.c's and GGUF's q and k
  // rows are), aligned for their element type (4 bytes for F32, 2 for the
  // 16-bit types and the f16 scales of Q8_0/Q4_0 blocks); nullopt otherwise
  // (or when the tensor or rows do not exist: ReadRowsStored says why).
  virtual std::optional<MappedRows> MapRows(const std::string& name, int64_t row_begin,
                                            int64_t row_end) const = 0;
};

}  // namespace inferno
