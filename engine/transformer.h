// Transformer: one pipeline stage of a Llama-architecture model in f32 — a
// contiguous range of layers with their KV caches, a slice of the
// classifier's rows (any stage), plus the token embedding on the first stage
// and the final norm on the last.
//
// The three parts are kept apart: the config (ModelConfig, the model's
// hyper-parameters), the weights (StageWeights, immutable) and the run state
// (StageState: activations and KV caches, allocated once up front, so a
// forward pass allocates nothing).
//
// A stage serves `num_slots` sequences at once, each with its own KV cache
// (micro-batched pipelines interleave several prompts). Any number of
// positions of one sequence — a whole prompt chunk (batched prefill) or one
// decode token — runs in one Forward call, and every position gives bit for
// bit the result it would give alone.
//
// Thread-safety: not thread-safe; one owner drives a stage. The owner's
// ThreadPool splits the work inside each call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/stage_weights.h"
#include "engine/thread_pool.h"
#include "loader/model_config.h"

namespace inferno {

// dim = hidden_size, q_dim = num_attention_heads * head_dim,
// kv_dim = num_key_value_heads * head_dim, hidden = intermediate_size,
// L = the stage's layer count, seq_len = the stage's context_length.
struct StageState {
  std::vector<float> key_cache;    // (num_slots, L, seq_len, kv_dim)
  std::vector<float> value_cache;  // (num_slots, L, seq_len, kv_dim)
  std::vector<float> normed;       // (max_positions, dim) RMSNorm output
  std::vector<float> qkv;          // (max_positions, q_dim + 2 * kv_dim)
  std::vector<float> attention;    // (max_positions, q_dim) attention output, all heads
  std::vector<float> projected;    // (max_positions, dim) output of wo or w_down
  std::vector<float> gate_up;      // (max_positions, 2 * hidden)
  std::vector<float> activated;    // (max_positions, hidden) SwiGLU output
  std::vector<float> scores;       // (threads, seq_len) attention scratch per thread
  std::vector<float> rope_cos;     // (seq_len, head_dim / 2)
  std::vector<float> rope_sin;     // (seq_len, head_dim / 2)
};

class TransformerStage {
 public:
  // Positions one Forward call may take; longer prompts go in chunks.
  static constexpr int64_t kMaxPositionsPerCall = 64;

  // Each of the `num_slots` KV caches holds `context_length` positions (what
  // the job can use: its prompts plus the tokens it generates; see
  // ContextLength). `pool` must outlive the stage. Preconditions:
  // 1 <= context_length <= max_position_embeddings, and
  // config.CheckContextFits(context_length).
  TransformerStage(const ModelConfig& config, StageWeights weights, int num_slots, int64_t context_length,
                   ThreadPool& pool);

  const ModelConfig& config() const { return config_; }
  const StageWeights& weights() const { return weights_; }
  bool is_first() const { return weights_.is_first; }
  bool is_last() const { return weights_.is_last; }
  int num_slots() const { return num_slots_; }
  int64_t context_length() const { return context_length_; }
  int64_t max_positions_per_call() const;

  // First stage: x (tokens.size(), dim) = the embedding rows of `tokens`.
  // Preconditions: is_first(); every id in [0, vocab).
  void Embed(std::span<const int32_t> tokens, std::span<float> x) const;

  // Runs the stage's layers in place over x (n, dim), the hidden states of
  // positions [pos, pos + n) of the sequence in `slot`; their keys and values
  // enter the slot's cache. Positions before `pos` must have been run.
  // Preconditions: 1 <= n <= max_positions_per_call(); pos + n <= context_length();
  // x.size() == n * dim.
  void Forward(int slot, int64_t pos, std::span<float> x);

  // Last stage: normed (dim) = the final RMSNorm of one hidden state (dim).
  // `normed` may alias `hidden`.
  void FinalNorm(std::span<const float> hidden, std::span<float> normed) const;

  // logits (classifier_rows().size()) = the logits of the stage's classifier
  // rows for one final-normed hidden state (dim). Each logit is bit for bit
  // what the whole classifier gives for its row.
  void ClassifierSlice(std::span<const float> normed, std::span<float> logits);

  // The vocabulary ids whose logits ClassifierSlice computes.
  RowRange classifier_rows() const { return weights_.classifier_rows; }

 private:
  ModelConfig config_;
  StageWeights weights_;
  int num_slots_;
  int64_t context_length_;
  ThreadPool& pool_;
  StageState state_;
};

}  // namespace inferno
