// StageWeights: the f32 weights one rank of the plan (loader/shard_plan.h)
// needs — its contiguous range of transformer layers, or under tensor
// parallelism its heads and MLP hidden units of those layers, its slice of
// the classifier's rows, plus the token embedding on the first stage and the
// final norm on the last — laid out for the engine's kernels.
//
// Engine layout (differs from the checkpoint's in two ways):
// - q and k rows use adjacent RoPE pairs (2i, 2i+1) within each head, as
//   llama2.c does; checkpoints (Hugging Face order, pairs (i, i + head_dim/2))
//   are permuted on load.
// - projections that read the same input are stacked: q, k, v into one
//   matrix, gate and up into another, so one matrix product serves each.
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
#include "loader/checkpoint.h"
#include "loader/model_config.h"
#include "loader/shard_plan.h"

namespace inferno {

// Allocates like std::allocator but leaves values default-initialized (for
// float: uninitialized) when a vector grows, so a weight buffer's pages are
// first touched by the copy that fills them, not by zeroing as well.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U* where) {
    ::new (static_cast<void*>(where)) U;
  }
  template <typename U, typename... Args>
  void construct(U* where, Args&&... args) {
    ::new (static_cast<void*>(where)) U(std::forward<Args>(args)...);
  }
};

// A weight tensor's storage. resize() does not initialize: every element is
// written by the loader before it is read.
using WeightBuffer = std::vector<float, UninitializedAllocator<float>>;

// dim = hidden_size, head_dim = config.head_dim(); for the rank's part of
// the plan: q_dim = part.heads.size() * head_dim, kv_dim =
// part.kv_heads.size() * head_dim, hidden = part.hidden_units.size() (the
// whole model's q_dim, kv_dim and intermediate_size without tensor
// parallelism).
struct LayerWeights {
  WeightBuffer attention_norm;  // (dim)
  WeightBuffer wqkv;            // (q_dim + 2 * kv_dim, dim): q rows, k rows, v rows
  WeightBuffer bqkv;            // (q_dim + 2 * kv_dim) when config.qkv_bias, else empty
  WeightBuffer wo;              // (dim, q_dim): the part's columns of o_proj
  WeightBuffer bo;              // (dim) when config.o_proj_bias, else empty; whole on every rank
  WeightBuffer ffn_norm;        // (dim)
  WeightBuffer w_gate_up;       // (2 * hidden, dim): gate rows, then up rows
  WeightBuffer w_down;          // (dim, hidden): the part's columns of down_proj
};

struct StageWeights {
  RankShard part;  // the rank's part of the plan

  WeightBuffer token_embedding;      // (vocab, dim); when part.has_embedding
  std::vector<LayerWeights> layers;  // part.layers.size() entries
  WeightBuffer final_norm;           // (dim); when part.has_final_norm
  // (part.classifier_rows.size(), dim): those rows of lm_head, or of the
  // token embedding when tied — except on a rank holding the whole embedding
  // with tied embeddings, where they are read from token_embedding and this
  // is empty (the embedding is held once).
  WeightBuffer classifier;

  // The bytes of every buffer above.
  int64_t ByteSize() const;

  // The classifier rows' weights, (classifier_rows.size(), dim), wherever
  // they are held.
  std::span<const float> ClassifierMatrix(int64_t dim) const {
    const RowRange rows = part.classifier_rows;
    if (!classifier.empty() || rows.size() == 0) return classifier;
    return std::span<const float>(token_embedding).subspan(rows.begin * dim, rows.size() * dim);
  }
};

// Reads the tensors of rank `part` of the plan (its layers' slices, the
// embedding and final norm it owns, its classifier rows) from `checkpoint` —
// the whole model, or the rank's own shard written by //tools:shard, which
// holds exactly those slices — into the engine layout. Fails, naming the
// tensor, when a tensor is missing or does not match the config or the
// plan. `progress` (may be empty) is called after each layer with the
// layers loaded so far and the part's layer count.
using LoadProgress = std::function<void(int64_t layers_done, int64_t layers_total)>;
Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& part,
                                      const LoadProgress& progress = {});

// Reorders the rows of a q or k projection (n_heads * head_dim, cols) — or,
// with cols 1, its bias — from Hugging Face RoPE order (row i and
// i + head_dim/2 of a head form a pair) to adjacent pairs (rows 2i, 2i+1).
// Exposed for tests and converters.
void HuggingFaceRopeRowsToAdjacent(std::span<float> rows, int64_t head_dim, int64_t cols);

}  // namespace inferno
