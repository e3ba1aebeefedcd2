// ShardPlan: the one plan of a job — which part of the model every rank of a
// pipeline-parallel × tensor-parallel grid computes and holds. It is computed
// once (MakeShardPlan), written into a shard folder's manifest by `shard`,
// and carried unchanged through loading (engine/stage_weights.h) and
// generation (runtime/generator.h); nothing else decides who owns what.
//
// The grid: W = pp × tp ranks; pipeline stage s (s = 0 embeds tokens,
// s = pp-1 holds the final norm) is a tensor-parallel group of tp ranks.
// Stage s, tensor-parallel index t is rank RankOf(s, t) = (pp - 1 - s) * tp + t,
// so rank 0 — the leader — is the last stage's index 0: it samples and
// prints.
//
// Inside a stage (Megatron-style), tensor-parallel index t computes
// - query heads `heads` (divided as evenly as possible, earlier indices
//   taking the remainder), and the key/value heads those read, `kv_heads`
//   (a KV head is held by every rank whose query heads use it, so any tp up
//   to the head count works, with fewer KV heads than ranks too);
// - MLP hidden units `hidden_units` (divided the same way);
// so q/k/v/gate/up are split by output rows and o_proj/down by input
// columns; norms and the o_proj bias are whole on every rank.
//
// A mixture-of-experts layer's router is whole on every rank. Its experts
// are either split like the dense MLP (each expert's hidden units divided
// over the stage: tensor parallelism), or, with `expert_parallel` (--ep),
// placed whole: tensor-parallel index t holds, in each of its sparse layers,
// the experts an ExpertPlacement gives it (loader/expert_placement.h: by
// default contiguous runs divided as evenly as possible, earlier indices
// taking the remainder, e.g. 128 experts over 3 ranks as 43, 43, 42; or any
// set per layer, e.g. placed by measured routing load), plus the copies of
// other indices' experts the placement gives it (--expert-replicas), and
// nothing of the others. Either way each rank computes its part of the mixture's output and
// the stage sums the parts with the all-reduce that follows a dense MLP;
// attention is split by heads as above.
//
// The classifier (vocab × dim) is split by rows over the whole grid: the
// vocabulary is divided evenly into tp parts, part t going to the ranks of
// index t, and each part is spread over the stages to balance their compute
// (pipeline_split.h). So the ranks of index t — one per stage, the ring the
// pipeline messages of index t travel — hold the contiguous rows
// `TpClassifierRows(t)`, stage 0 the first of them.
//
// The embedding is split by rows the same way inside stage 0: its rank of
// index t holds the rows of TpClassifierRows(t), so with tied embeddings its
// classifier rows lie inside its embedding rows and are held once. A token
// is embedded by the rank holding its row and shared with one all_reduce
// over the stage (engine/transformer.h).
//
// Thread-safety: a plain value type and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/expert_placement.h"
#include "loader/pipeline_split.h"
#include "model/model_config.h"

namespace inferno {

// Layers [begin, end) of the model.
struct LayerRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

// A slice of one checkpoint tensor owned by a rank: rows [begin, end) of
// dimension `split_dim` (0 = output rows, 1 = input columns), or the whole
// tensor when not split.
struct TensorSlice {
  std::string name;
  int split_dim = -1;  // -1: whole tensor
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const TensorSlice&) const = default;
};

struct RankShard {
  int rank = 0;
  int stage = 0;     // pipeline position, 0 = first (embedding)
  int tp_index = 0;  // index within the stage's tensor-parallel group
  LayerRange layers;
  RowRange heads;         // query heads
  RowRange kv_heads;      // key/value heads (those `heads` read)
  RowRange hidden_units;  // MLP hidden units (of intermediate_size)
  // experts[i]: the experts it holds of layer layers.begin + i, increasing:
  // all num_experts unless expert-parallel (then its own and its copies);
  // empty for a dense layer.
  std::vector<std::vector<int32_t>> experts;
  // Only when some expert of the rank's stage is held by more than one of
  // its ranks (copies): expert_holders[i][e], the tensor-parallel indices of
  // the stage holding expert e of layer layers.begin + i, increasing (empty
  // for a dense layer); else empty. Derived from the stage's `experts`
  // (SetExpertHolders), so not written into a manifest.
  std::vector<std::vector<std::vector<int32_t>>> expert_holders;
  RowRange classifier_rows;  // vocabulary ids whose logits it computes; may be empty
  // Vocabulary ids whose embedding it holds: all of them on every rank of
  // stage 0 (a lookup then needs no collective: across hosts a sync is a
  // one-way wait per position), none after it.
  RowRange embedding_rows;
  bool has_final_norm = false;  // the final norm (stage pp-1)
  // Every tensor (or slice) the rank holds, in checkpoint order; the
  // classifier rows are a row slice of lm_head.weight (of
  // model.embed_tokens.weight when tied and the rank is not in stage 0,
  // whose embedding rows contain them).
  std::vector<TensorSlice> tensors;

  // Whether, with tied embeddings (`tied`), the rank reads its classifier
  // rows from its embedding rows, which contain them (the first stage),
  // rather than holding a slice of their own.
  bool ClassifierRowsInEmbedding(bool tied) const { return tied && stage == 0; }
  // The experts it holds of layer `layer` (one of `layers`).
  const std::vector<int32_t>& ExpertsOf(int64_t layer) const {
    return experts.at(static_cast<size_t>(layer - layers.begin));
  }

  bool operator==(const RankShard&) const = default;
};

struct ShardPlan {
  int pp = 1;
  int tp = 1;
  // Whether a stage's tp ranks hold whole experts (--ep tp) rather than
  // every expert's share of hidden units.
  bool expert_parallel = false;
  std::vector<RankShard> ranks;  // indexed by rank

  int world_size() const { return pp * tp; }
  int RankOf(int stage, int tp_index) const { return (pp - 1 - stage) * tp + tp_index; }
  // Rows of the classifier held by the ranks of tensor-parallel index t
  // (contiguous; see above).
  RowRange TpClassifierRows(int tp_index) const;
  // The placement the ranks' expert lists make for a model of
  // `num_hidden_layers` layers (expert_parallel plans): the owner of every
  // listed expert, the lowest index listing it; an expert no rank lists has
  // owner -1; the other indices listing it hold copies (copies empty when
  // no expert is listed twice in a stage).
  ExpertPlacement Placement(int64_t num_hidden_layers, int64_t num_experts) const;
  // Sets every rank's expert_holders from the experts its stage's ranks
  // hold (see RankShard); MakeShardPlan does, and so must whoever reads a
  // plan's ranks from elsewhere (a manifest).
  void SetExpertHolders(int64_t num_experts);
  bool operator==(const ShardPlan&) const = default;
};

// How messages name the experts a rank holds: "experts [0, 64)" when each of
// its sparse layers holds the same contiguous run, else "experts placed per
// layer, 63-65 per layer"; "" when it holds no layer with experts.
std::string ExpertsText(const RankShard& shard);

// How messages name a plan's grid: "2 stages x 2 tensor-parallel ranks"
// ("expert-parallel" under --ep).
std::string GridText(const ShardPlan& plan);

// The part of a tensor `shape` a slice covers.
std::vector<int64_t> SliceShape(const std::vector<int64_t>& shape, const TensorSlice& slice);

// Computes the plan of a pp × tp grid for a model of `config`, experts
// placed whole when `expert_parallel` (then tp is --ep's value) as
// `placement` says (its copies too), contiguously when it is absent.
// `layers_per_stage`, if given, has pp entries summing to the layer count
// (each >= 1); otherwise layers are split evenly (pipeline_split.h). Fails
// with a one-line error naming the flag's value, e.g. "--pp 7 exceeds the 5
// layers of the model", "--tp 5 exceeds the 4 attention heads of the model",
// "--ep 9 exceeds the 8 experts of the model", "--ep 2 needs a mixture of
// experts; the model is dense (use --tp)", or CheckExpertPlacement's error.
Result<ShardPlan> MakeShardPlan(const ModelConfig& config, int pp, int tp,
                                const std::optional<std::vector<int64_t>>& layers_per_stage,
                                bool expert_parallel = false,
                                const std::optional<ExpertPlacement>& placement = std::nullopt);

}  // namespace inferno
