// StageWeights: the f32 weights one rank of the plan (loader/shard_plan.h)
// needs — its contiguous range of transformer layers, or under tensor
// parallelism its heads and MLP hidden units of those layers, its slice of
// the classifier's rows, plus the token embedding on the first stage and the
// final norm on the last — laid out for the engine's kernels.
//
// Layout: the checkpoint's. Every tensor, or the plan's slice of it, keeps
// its Hugging Face row order (q and k rows pair (i, i + head_dim/2) for
// RoPE); f32 rows stored contiguously in the file are used where they lie in
// the memory map, without a copy (WeightTensor); anything else — other
// dtypes, llama2.c's reordered rows, a tensor-parallel slice of columns — is
// converted into memory of its own on load.
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

// Memory a converted weight tensor is read into. resize() does not
// initialize: every element is written by the loader before it is read.
using WeightBuffer = std::vector<float, UninitializedAllocator<float>>;

// One weight tensor (or the plan's slice of one), read-only: its values in
// memory of its own, or where they lie in the checkpoint's mapping (which it
// keeps mapped). Empty when default-constructed.
class WeightTensor {
 public:
  WeightTensor() = default;
  explicit WeightTensor(WeightBuffer owned) : owned_(std::move(owned)) {}
  explicit WeightTensor(Checkpoint::MappedRows mapped) : mapped_(std::move(mapped)) {}

  std::span<const float> values() const {
    return mapped_.mapping ? mapped_.values : std::span<const float>(owned_);
  }
  operator std::span<const float>() const { return values(); }
  const float* data() const { return values().data(); }
  size_t size() const { return values().size(); }
  bool empty() const { return size() == 0; }
  float operator[](size_t i) const { return values()[i]; }
  // Whether the values are the checkpoint file's pages.
  bool in_place() const { return mapped_.mapping != nullptr; }

 private:
  WeightBuffer owned_;
  Checkpoint::MappedRows mapped_;
};

// dim = hidden_size, head_dim = config.head_dim(); for the rank's part of
// the plan: q_dim = part.heads.size() * head_dim, kv_dim =
// part.kv_heads.size() * head_dim, hidden = part.hidden_units.size() (the
// whole model's q_dim, kv_dim and intermediate_size without tensor
// parallelism).
struct LayerWeights {
  WeightTensor attention_norm;  // (dim)
  WeightTensor wq;              // (q_dim, dim)
  WeightTensor wk;              // (kv_dim, dim)
  WeightTensor wv;              // (kv_dim, dim)
  WeightTensor bq, bk, bv;      // (q_dim), (kv_dim), (kv_dim) when config.qkv_bias, else empty
  WeightTensor wo;              // (dim, q_dim): the part's columns of o_proj
  WeightTensor bo;              // (dim) when config.o_proj_bias, else empty; whole on every rank
  WeightTensor ffn_norm;        // (dim)
  WeightTensor w_gate;          // (hidden, dim)
  WeightTensor w_up;            // (hidden, dim)
  WeightTensor w_down;          // (dim, hidden): the part's columns of down_proj
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
  std::span<const float> ClassifierMatrix(int64_t dim) const {
    const RowRange rows = part.classifier_rows;
    if (!classifier.empty() || rows.size() == 0) return classifier.values();
    return token_embedding.values().subspan((rows.begin - part.embedding_rows.begin) * dim,
                                            rows.size() * dim);
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
// kInPlace uses every f32 tensor stored contiguously (a whole tensor, a slice
// of its rows, or a shard holding just the slice) where it lies in the
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
