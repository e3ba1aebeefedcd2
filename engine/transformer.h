// Transformer: one rank's part of a Llama-architecture model in f32, as the
// plan (loader/shard_plan.h) gives it — a contiguous range of layers with
// their KV caches (under tensor parallelism: the rank's heads and MLP hidden
// units of those layers), a slice of the classifier's rows, plus the token
// embedding on the first stage (under tensor parallelism: a slice of its
// rows) and the final norm on the last.
//
// Tensor parallelism (Megatron): the ranks of a stage each compute q, k, v
// for their heads and attention over them, then their columns of o_proj;
// one all_reduce (sum) over the stage's group gives every rank the whole
// projection, to which the o_proj bias is added once. The MLP likewise: gate
// and up for the rank's hidden units, its columns of down, one all_reduce.
// Every rank of the group ends each layer with the same bits (see Forward).
//
// The three parts are kept apart: the config (ModelConfig, the model's
// hyper-parameters), the weights (StageWeights, immutable) and the run state
// (StageState: activations and KV caches, allocated once up front, so a
// forward pass allocates nothing).
//
// A stage serves `num_slots` sequences at once, each with its own KV cache
// (micro-batched pipelines interleave several prompts). One Forward call runs
// positions of several sequences at once — a whole prompt chunk (batched
// prefill), the next token of every running sequence (batched decode), or
// both — with one pass over each weight matrix, and every position gives bit
// for bit the result it would give alone.
//
// Thread-safety: not thread-safe; one owner drives a stage. The owner's
// ThreadPool splits the work inside each call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timeline.h"
#include "engine/all_reduce.h"
#include "engine/moe_feed_forward.h"
#include "engine/stage_weights.h"
#include "model/model_config.h"

namespace inferno {

// dim = hidden_size; for the rank's part: q_dim = its heads * head_dim,
// kv_dim = its KV heads * head_dim, hidden = its MLP hidden units (the
// model's without tensor parallelism); L = its layer count, seq_len = the
// stage's context_length.
// A layer's cache holds seq_len positions, or on a layer that slides
// (config.LayerSlides) the last sliding_window + max_positions - 1 of them
// (what one Forward call's rows can still attend to), position p in row
// p % capacity.
struct StageState {
  std::vector<float> key_cache;            // (num_slots, sum over the L layers of capacity[l] * kv_dim)
  std::vector<float> value_cache;          // (num_slots, the same)
  std::vector<int64_t> cache_capacity;     // (L) positions the cache of each layer holds
  std::vector<int64_t> cache_layer_begin;  // (L + 1) each layer's first float in a slot's part
  std::vector<float> rope_local_cos;       // (seq_len, head_dim / 2) of the sliding layers, when
  std::vector<float> rope_local_sin;       //   config.local_rope_theta sets their own base; else empty
  std::vector<float> normed;               // (max_positions, dim) RMSNorm output
  std::vector<float> qkv;                  // (max_positions, q_dim + 2 * kv_dim)
  std::vector<float> attention;            // (max_positions, q_dim) attention output, the part's heads
  std::vector<float> projected;  // (max_positions, dim) output of wo or w_down (summed over the group)
  std::vector<float> gate_up;    // (max_positions, 2 * hidden)
  std::vector<float> activated;  // (max_positions, hidden) SwiGLU or GeGLU output
  std::vector<float> scores;     // (threads, seq_len) attention scratch per thread
  std::vector<float> rope_cos;   // (seq_len, head_dim / 2)
  std::vector<float> rope_sin;   // (seq_len, head_dim / 2)
  std::vector<int> row_slot;     // (max_positions) the slot of each row of a Forward call
  std::vector<int64_t> row_pos;  // (max_positions) the position of each row
};

// Positions [pos, pos + n) of the sequence in `slot`: one part of a Forward
// call's batch.
struct SlotPositions {
  int slot = 0;
  int64_t pos = 0;
  int64_t n = 0;
};

class TransformerStage {
 public:
  // Positions one Forward call may take; longer prompts go in chunks.
  static constexpr int64_t kMaxPositionsPerCall = 64;

  // Each of the `num_slots` KV caches holds `context_length` positions (what
  // the job can use: its prompts plus the tokens it generates; see
  // ContextLength). `pool` must outlive the stage. `tensor_parallel` sums
  // over the stage's ranks in tensor-parallel index order (its rank t is
  // weights.part.tp_index t); null when the plan's tp is 1; it must outlive
  // the stage. Preconditions: 1 <= context_length <=
  // max_position_embeddings, and config.CheckContextFits(context_length).
  TransformerStage(const ModelConfig& config, StageWeights weights, int num_slots, int64_t context_length,
                   ThreadPool& pool, AllReduce* tensor_parallel = nullptr);

  const ModelConfig& config() const { return config_; }
  const StageWeights& weights() const { return weights_; }
  const RankShard& part() const { return weights_.part; }
  // The sum over the stage's tensor-parallel ranks; null when the plan's tp is 1.
  AllReduce* tensor_parallel() const { return tensor_parallel_; }
  bool is_first() const { return weights_.part.stage == 0; }
  bool is_last() const { return weights_.part.has_final_norm; }
  int num_slots() const { return num_slots_; }
  int64_t context_length() const { return context_length_; }
  int64_t max_positions_per_call() const;

  // First stage: x (tokens.size(), dim) = the embedding rows of `tokens`.
  // Every rank of a tensor-parallel first stage holds the whole table
  // (loader/shard_plan.h), so the lookup is local: no collective.
  // Preconditions: is_first(); every id in [0, vocab).
  void Embed(std::span<const int32_t> tokens, std::span<float> x);

  // Runs the stage's layers in place over x (rows, dim), the hidden states of
  // the positions of `batch` in its order (rows = the sum of its n); their
  // keys and values enter their slots' caches. Each part's positions before
  // its `pos` must have been run; each row attends to its own slot only.
  // Preconditions: the parts' slots are distinct and in [0, num_slots()),
  // each n >= 1, pos + n <= context_length(); 1 <= rows <=
  // max_positions_per_call(). Under tensor parallelism every rank of the
  // group calls it with the same arguments and x, and two all_reduces per
  // layer make every rank's x the same bits on return
  // (AllReduce::Sum gives every rank the same bits); fails, naming the layer, when a collective
  // fails. `timeline` (may be null) records the compute as "forward" spans
  // and each all_reduce as a wait span "all_reduce", labelled with
  // `sequence`.
  Status Forward(std::span<const SlotPositions> batch, std::span<float> x, Timeline* timeline = nullptr,
                 int sequence = -1);
  // Forward of one part: positions [pos, pos + x.size() / dim) of `slot`.
  Status Forward(int slot, int64_t pos, std::span<float> x, Timeline* timeline = nullptr, int sequence = -1);

  // Last stage: normed (dim) = the final RMSNorm of one hidden state (dim).
  // `normed` may alias `hidden`.
  void FinalNorm(std::span<const float> hidden, std::span<float> normed) const;

  // logits (n, classifier_rows().size()) = the logits of the stage's
  // classifier rows for n final-normed hidden states normed (n, dim), with
  // one pass over the rows. Each logit is bit for bit what the whole
  // classifier gives for its row and hidden state alone.
  void ClassifierSlice(std::span<const float> normed, std::span<float> logits);

  // The bytes of the keys and values the stage keeps, every slot and layer
  // (a sliding layer's bounded by its window, see StageState).
  int64_t KvCacheBytes() const {
    return static_cast<int64_t>((state_.key_cache.size() + state_.value_cache.size()) * sizeof(float));
  }

  // The floats one position of a slot takes in the caches: its key and its
  // value, each kv_dim, in each of the stage's layers.
  int64_t KvFloatsPerPosition() const {
    return 2 * part().layers.size() * part().kv_heads.size() * config_.head_dim();
  }

  // Copies the keys and values of positions [pos, pos + n) of `slot`, every
  // layer, into kv (L, 2, n, kv_dim): layer by layer, its keys then its
  // values. Preconditions: the slot has run the positions, and on a sliding
  // layer they are among the last capacity positions it ran (see
  // StageState); kv.size() == n * KvFloatsPerPosition().
  void CopyKvOut(int slot, int64_t pos, int64_t n, std::span<float> kv) const;
  // The reverse: the caches of positions [pos, pos + n) of `slot` from kv
  // (L, 2, n, kv_dim), as if the slot had run them (a sliding layer keeps
  // the last capacity of them). Preconditions: pos + n <= context_length(),
  // kv.size() == n * KvFloatsPerPosition().
  void CopyKvIn(int slot, int64_t pos, std::span<const float> kv);
  // The fewest positions a sliding layer of the stage holds beyond one
  // Forward call's (its window); context_length() when none slides.
  int64_t SmallestWindow() const;

  // The vocabulary ids whose logits ClassifierSlice computes.
  RowRange classifier_rows() const { return weights_.part.classifier_rows; }

  // The routing histogram of the stage's layers since it was made:
  // (part().layers.size(), num_experts), row l counting, per expert, the
  // positions Forward routed to it in layer part().layers.begin + l (every
  // position run, prompts included; the same on every rank of the stage).
  // Empty when the stage has no sparse layer; a dense layer's row is zero.
  std::span<const int64_t> RoutingCounts() const { return routed_; }

 private:
  // The attention of the stage's layer l (of its part) for the n rows of x
  // (n, dim) that Forward's batch placed (state_.row_slot, row_pos): their
  // keys and values enter the caches, their heads' outputs
  // state_.attention (n, q_dim).
  void Attend(int64_t l, std::span<const float> x, int64_t n);
  // Calls copy(cache row, kv row, kv_dim) for each position of [pos, pos +
  // n) of `slot` in each layer, keys then values, in kv's (L, 2, n, kv_dim)
  // order: the one walk CopyKvOut and CopyKvIn share.
  template <typename Copy>
  void ForEachKvRow(int slot, int64_t pos, int64_t n, Copy copy) const;

  ModelConfig config_;
  StageWeights weights_;
  int num_slots_;
  int64_t context_length_;
  ThreadPool& pool_;
  AllReduce* tensor_parallel_;  // null when the plan's tp is 1
  StageState state_;
  MoeFeedForward moe_;           // the sparse layers' feed-forward (no scratch without them)
  std::vector<int64_t> routed_;  // RoutingCounts()
};

}  // namespace inferno
