// StageWeights: the f32 weights one pipeline stage needs — its contiguous
// range of transformer layers, its slice of the classifier's rows (any
// stage; see pipeline_split.h), plus the token embedding on the first stage
// and the final norm on the last — laid out for the engine's kernels.
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
#include <span>
#include <vector>

#include "base/error.h"
#include "engine/pipeline_split.h"
#include "loader/checkpoint.h"
#include "loader/model_config.h"
#include "loader/shard_plan.h"

namespace inferno {

// dim = hidden_size, q_dim = num_attention_heads * head_dim (dim unless
// config.json sets head_dim), kv_dim = num_key_value_heads * head_dim,
// hidden = intermediate_size.
struct LayerWeights {
  std::vector<float> attention_norm;  // (dim)
  std::vector<float> wqkv;            // (q_dim + 2 * kv_dim, dim): q rows, k rows, v rows
  std::vector<float> bqkv;            // (q_dim + 2 * kv_dim) when config.qkv_bias, else empty
  std::vector<float> wo;              // (dim, q_dim)
  std::vector<float> bo;              // (dim) when config.o_proj_bias, else empty
  std::vector<float> ffn_norm;        // (dim)
  std::vector<float> w_gate_up;       // (2 * hidden, dim): gate rows, then up rows
  std::vector<float> w_down;          // (dim, hidden)
};

struct StageWeights {
  LayerRange layer_range;    // the model's layers this stage runs
  bool is_first = false;     // owns the token embedding
  bool is_last = false;      // owns the final norm
  RowRange classifier_rows;  // the vocabulary ids whose logits this stage computes; may be empty

  std::vector<float> token_embedding;  // (vocab, dim); when is_first
  std::vector<LayerWeights> layers;    // layer_range.size() entries
  std::vector<float> final_norm;       // (dim); when is_last
  // (classifier_rows.size(), dim): those rows of lm_head, or of the token
  // embedding when tied — except on a first stage with tied embeddings,
  // where they are read from token_embedding and this is empty (the
  // embedding is held once).
  std::vector<float> classifier;

  // The classifier rows' weights, (classifier_rows.size(), dim), wherever
  // they are held.
  std::span<const float> ClassifierMatrix(int64_t dim) const {
    if (!classifier.empty() || classifier_rows.size() == 0) return classifier;
    return std::span<const float>(token_embedding)
        .subspan(classifier_rows.begin * dim, classifier_rows.size() * dim);
  }
};

// Reads the tensors of `shard` (its layers, and the embedding / final norm it
// owns) from `checkpoint`, and rows `classifier_rows` of the classifier
// (lm_head.weight, or model.embed_tokens.weight when tied) from
// `classifier_source` — the same checkpoint, or another that holds the
// classifier (a shard of another rank) — into the engine layout. Fails,
// naming the tensor, when a tensor is missing or does not match the config.
// Precondition: classifier_rows lies within [0, vocab).
// `progress` (may be empty) is called after each layer with the layers
// loaded so far and the stage's layer count.
using LoadProgress = std::function<void(int64_t layers_done, int64_t layers_total)>;
Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& shard,
                                      RowRange classifier_rows, const Checkpoint& classifier_source,
                                      const LoadProgress& progress = {});

// Reorders the rows of a q or k projection (n_heads * head_dim, cols) — or,
// with cols 1, its bias — from Hugging Face RoPE order (row i and
// i + head_dim/2 of a head form a pair) to adjacent pairs (rows 2i, 2i+1).
// Exposed for tests and converters.
void HuggingFaceRopeRowsToAdjacent(std::span<float> rows, int64_t head_dim, int64_t cols);

}  // namespace inferno
