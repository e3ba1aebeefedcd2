// ShardPlan: which weights every rank of a pipeline-parallel (× tensor-
// parallel) job owns.
//
// Pipeline stage s (s = 0 holds the token embedding, s = pp-1 the final norm
// and lm_head) runs on the ranks of pipeline position s. Ranks are laid out
// stage-major in reverse: stage s, tensor-parallel index t is rank
// (pp - 1 - s) * tp + t, so rank 0 — the leader — holds the last layers, the
// final norm and lm_head, samples, and sends the token id to the first stage.
//
// Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/checkpoint.h"
#include "loader/model_config.h"

namespace inferno {

// Layers [begin, end) of the model.
struct LayerRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// A slice of one checkpoint tensor owned by a rank: rows [row_begin, row_end)
// of dimension `split_dim` (0 = output rows, 1 = input columns), or the whole
// tensor when not split.
struct TensorSlice {
  std::string name;
  int split_dim = -1;  // -1: whole tensor
  int64_t begin = 0;
  int64_t end = 0;
};

struct RankShard {
  int rank = 0;
  int stage = 0;     // pipeline position, 0 = first (embedding)
  int tp_index = 0;  // index within the tensor-parallel group
  LayerRange layers;
  bool has_embedding = false;
  bool has_head = false;  // final norm + lm_head (or tied embedding)
  std::vector<TensorSlice> tensors;
};

struct ShardPlan {
  int pp = 1;
  int tp = 1;
  std::vector<RankShard> ranks;  // indexed by rank

  int world_size() const { return pp * tp; }
  static int RankOf(int stage, int tp_index, int pp, int tp) { return (pp - 1 - stage) * tp + tp_index; }
};

// The shape of `slice` of a tensor of shape `shape`: `shape` with dimension
// split_dim narrowed to end - begin (or `shape` when not split).
std::vector<int64_t> SliceShape(const std::vector<int64_t>& shape, const TensorSlice& slice);

// Computes the plan. Under tensor parallelism (tp > 1) each layer is split
// Megatron-style: q/k/v/gate/up by output rows (whole heads of q and k/v), o
// and down by input columns; norms, the embedding and lm_head are whole on
// every rank of their stage. tp must divide the attention heads, the kv heads
// and the intermediate size. With tied embeddings the last stage holds
// model.embed_tokens.weight as its head. `layers_per_stage`, if given, has pp entries summing to
// the layer count (each >= 1); otherwise layers are split to balance bytes.
// Fails with a one-line error (e.g. "pp=7 exceeds the 5 layers of the model").
Result<ShardPlan> MakeShardPlan(const Checkpoint& checkpoint, int pp, int tp,
                                const std::optional<std::vector<int64_t>>& layers_per_stage);

}  // namespace inferno
