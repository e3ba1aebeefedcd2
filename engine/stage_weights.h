// StageWeights: the weights one rank of the plan (loader/shard_plan.h)
// needs — its contiguous range of transformer layers, or under tensor
// parallelism its heads and MLP hidden units of those layers, its slice of
// the classifier's rows, plus the token embedding on the first stage and the
// final norm on the last — laid out for the engine's kernels.
//
// Layout: the checkpoint's. Every tensor, or the plan's slice of it, keeps
// its Hugging Face row order (q and k rows pair (i, i + head_dim/2) for
// RoPE) and matrices keep their stored type (WeightTensor); with
// WeightPlacement::kInPlace, rows stored contiguously in the file as they are
// used (any type; 1-D tensors only as f32) are used where they lie in the
// memory map, without a copy; anything else is read on load into memory of
// the rank's own (a WeightArena: huge pages). One exception to keeping the
// type: a tensor-parallel slice of Q8_0/Q4_0 columns that does not start and end on
// a 32-column block boundary is dequantized to f32 (a block cannot be cut).
//
// Thread-safety: immutable after loading; may be read from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/weight_arena.h"
#include "kernels/kernels.h"
#include "loader/checkpoint.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"

namespace inferno {

// One weight tensor (or the plan's slice of one), read-only, as rows of
// `cols` elements in one stored type: in a WeightArena's memory, or where
// its rows lie in the checkpoint's mapping (which it keeps mapped). Copies
// share the bytes.
// Matrices keep their checkpoint's type (f32, bf16, f16, Q8_0, Q4_0); 1-D
// tensors (norms, biases) are held as f32. Empty when default-constructed.
class WeightTensor {
 public:
  WeightTensor() = default;
  // `owned` holds whole rows of DTypeBytes(dtype, cols) bytes each.
  WeightTensor(DType dtype, int64_t cols, WeightArena::Block owned);
  // Rows of `cols` elements of mapped.dtype in the checkpoint's mapping.
  WeightTensor(int64_t cols, Checkpoint::MappedRows mapped);

  DType dtype() const { return dtype_; }
  int64_t cols() const { return cols_; }
  int64_t rows() const;
  std::span<const std::byte> bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }
  // Whether the values are the checkpoint file's pages.
  bool in_place() const { return in_place_; }

  // The values of an F32 tensor (CHECKed): norms and biases.
  std::span<const float> values() const;
  operator std::span<const float>() const { return values(); }
  float operator[](size_t i) const { return values()[i]; }

  // Rows [begin, end) for MatMul.
  WeightMatrix Rows(int64_t begin, int64_t end) const;
  WeightMatrix Matrix() const { return Rows(0, rows()); }
  // Row `row` as f32 (widened or dequantized) into `out` (cols() floats).
  void RowToF32(int64_t row, std::span<float> out) const;

 private:
  DType dtype_ = DType::kF32;
  int64_t cols_ = 0;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;  // the arena chunk or the mapping bytes_ lie in
  bool in_place_ = false;
};

// One expert of a mixture-of-experts layer: a SwiGLU MLP of the part's
// expert_hidden units (the plan divides each expert's hidden units over a
// stage as it divides the dense MLP's, or under expert parallelism gives the
// rank whole experts).
struct ExpertWeights {
  WeightTensor w_gate;  // (expert_hidden, dim)
  WeightTensor w_up;    // (expert_hidden, dim)
  WeightTensor w_down;  // (dim, expert_hidden): the part's columns
};

// dim = hidden_size, head_dim = config.head_dim(); for the rank's part of
// the plan: q_dim = part.heads.size() * head_dim, kv_dim =
// part.kv_heads.size() * head_dim, hidden = part.hidden_units.size() (the
// whole model's q_dim, kv_dim and intermediate_size without tensor
// parallelism).
struct LayerWeights {
  WeightTensor attention_norm;       // (dim)
  WeightTensor wq;                   // (q_dim, dim)
  WeightTensor wk;                   // (kv_dim, dim)
  WeightTensor wv;                   // (kv_dim, dim)
  WeightTensor bq, bk, bv;           // (q_dim), (kv_dim), (kv_dim) when config.qkv_bias, else empty
  WeightTensor q_norm, k_norm;       // (head_dim) each when config.qk_norm(), else empty; whole on every rank
  WeightTensor wo;                   // (dim, q_dim): the part's columns of o_proj
  WeightTensor bo;                   // (dim) when config.o_proj_bias, else empty; whole on every rank
  WeightTensor post_attention_norm;  // (dim) when config.post_norms() (Gemma), else empty
  WeightTensor ffn_norm;             // (dim)
  WeightTensor w_gate;               // (hidden, dim)
  WeightTensor w_up;                 // (hidden, dim)
  WeightTensor w_down;               // (dim, hidden): the part's columns of down_proj
  WeightTensor post_ffn_norm;        // (dim) when config.post_norms() (Gemma), else empty
  // A sparse layer (config.IsSparseLayer) has these in place of w_gate, w_up
  // and w_down, which are empty then.
  WeightTensor router;                 // (num_experts, dim); whole on every rank
  std::vector<ExpertWeights> experts;  // experts[i] is expert part.ExpertsOf(layer)[i]
};

struct StageWeights {
  RankShard part;  // the rank's part of the plan

  WeightTensor token_embedding;      // (part.embedding_rows.size(), dim)
  std::vector<LayerWeights> layers;  // part.layers.size() entries
  WeightTensor final_norm;           // (dim); when part.has_final_norm
  // (part.classifier_rows.size(), dim): those rows of lm_head, or of the
  // token embedding when tied — except on a rank of the first stage with
  // tied embeddings, where they are read from token_embedding (whose rows
  // contain them) and this is empty (the embedding is held once).
  WeightTensor classifier;

  // The bytes of every tensor above, and of those used in place in the
  // checkpoint's mapping.
  struct Bytes {
    int64_t total = 0;
    int64_t in_place = 0;
  };
  Bytes ByteSize() const;

  // The classifier rows' weights, (classifier_rows.size(), dim), wherever
  // they are held.
  WeightMatrix ClassifierMatrix() const {
    const RowRange rows = part.classifier_rows;
    if (!classifier.empty() || rows.size() == 0) return classifier.Matrix();
    return token_embedding.Rows(rows.begin - part.embedding_rows.begin, rows.end - part.embedding_rows.begin);
  }
};

// Reads the tensors of rank `part` of the plan (its layers' slices, the
// embedding and final norm it owns, its classifier rows) from `checkpoint` —
// the whole model, or the rank's own shard written by //tools:shard, which
// holds exactly those slices — into the engine layout. Fails, naming the
// tensor, when a tensor is missing or does not match the config or the
// plan. `progress` (may be empty) is called after each layer with the
// layers loaded so far and the part's layer count.
//
// kInPlace uses every tensor stored contiguously in the order it is used (a
// whole tensor, a slice of its rows, or a shard holding just the slice; a
// matrix of any type, a 1-D tensor if f32) where it lies in the
// checkpoint's mapping: loading costs no copy, but each pass over the weights
// then goes through the page cache's pages — 4 KiB ones unless the file was
// read into huge pages (measured in docs/engine.md). kCopy converts every
// tensor into memory of the rank's own, in huge pages.
enum class WeightPlacement { kCopy, kInPlace };
using LoadProgress = std::function<void(int64_t layers_done, int64_t layers_total)>;
Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& part,
                                      WeightPlacement placement = WeightPlacement::kCopy,
                                      const LoadProgress& progress = {});

}  // namespace inferno
