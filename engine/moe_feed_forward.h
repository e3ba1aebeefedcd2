// MoeFeedForward: the feed-forward of a mixture-of-experts layer
// (ModelConfig::IsSparseLayer: Mixtral, Qwen3-MoE), as Hugging Face's
// modelling code defines it. For each position x (the post-attention
// RMSNorm's output):
//   p = softmax(router · x) over the num_experts experts;
//   the num_experts_per_tok experts of the largest p are chosen (ties to the
//   lower index), their weights p_e renormalised to sum to 1 when
//   config.norm_topk_prob;
//   out = Σ over the chosen e, in increasing e, of
//         p_e · w_down_e · (silu(w_gate_e · x) * (w_up_e · x)).
//
// Batched positions are grouped by expert: each expert's matrices are read
// once per call for all the positions routed to it, and every position gives
// bit for bit the result it would give alone (the kernels compute a row the
// same way whatever the batch, and each row sums its experts in a fixed
// order).
//
// Tensor and expert parallelism: with each expert's hidden units divided
// over a stage's ranks, or whole experts placed on them (loader/shard_plan.h),
// the router is whole on every rank and its input is the same bits on every
// rank (the stage's all-reduce gives each the same sum), so all of them
// choose the same experts; each computes its part of `out` — its units of
// every chosen expert, or the chosen experts it holds (zero when it holds
// none of a row's) — which the caller sums over the stage as for a dense MLP.
// The experts a rank holds may be any set per layer (placement by load).
//
// Redundant experts (--expert-replicas): when some experts are held by more
// than one rank of the stage, every rank computes the same assignment from
// the same routing (AssignExperts, no exchange) and runs only the chosen
// experts assigned to it, so each (row, expert) pair is computed on exactly
// one rank and the stage's sum has the same terms as without copies.
//
// The routing histogram: each call adds, per expert, the number of rows
// routed to it — counted from the routing the call computes anyway, on
// every rank alike (all choose the same experts).
//
// Thread-safety: not thread-safe (it owns scratch buffers); one owner, the
// stage, calls it. The ThreadPool splits the work inside each call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/stage_weights.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"

namespace inferno {

// Top-k routing of one position: from the router's `logits` (num_experts),
// fills `experts` and `weights` (k entries each, k = experts.size() <=
// logits.size()) with the chosen experts by decreasing softmax probability
// (ties to the lower index) and their weights, divided by the sum of the k
// chosen when `renormalise`. `logits` is overwritten with the probabilities.
void RouteTopK(std::span<float> logits, bool renormalise, std::span<int32_t> experts,
               std::span<float> weights);

// The work AssignExperts counts for reading an expert's weights once, in
// rows: a guess (not tuned) that a batched matmul over a few rows costs
// about the weight read, so that in a decode call (one row) the work is the
// expert count and in a prefill an expert's rows weigh in too.
inline constexpr int64_t kExpertReadWork = 8;

// Which of a stage's ranks runs each expert chosen in one call, when
// experts may be held by several of them. rows[e]: the call's rows routed
// to expert e; holders[e]: the tensor-parallel indices holding expert e,
// increasing, non-empty (num_experts entries each). Sets runner[e] to the
// index running expert e, -1 for an expert no row chose: each chosen expert
// with one holder goes to it; then the others one by one, by decreasing
// rows (ties to the lower index), each to its holder with the least work so
// far (ties to the lower index), an expert's work being kExpertReadWork +
// its rows. `work` (scratch, one entry per index of the stage: more than
// any holder) ends as each index's work; `order` is scratch of num_experts
// entries. A pure function: every rank computes the same from the same
// routing.
void AssignExperts(std::span<const int64_t> rows, std::span<const std::vector<int32_t>> holders,
                   std::span<int64_t> work, std::span<int32_t> order, std::span<int32_t> runner);

// The experts of a sparse layer a rank holds, and under copies who else in
// its stage does (RankShard::experts and expert_holders).
struct HeldExperts {
  std::span<const int32_t> held;  // increasing; LayerWeights::experts[i] is expert held[i]
  // holders[e]: the stage's indices holding expert e (num_experts entries),
  // or empty when no expert is held twice: the rank then runs every held
  // expert a row chose.
  std::span<const std::vector<int32_t>> holders = {};
  int self = 0;  // the rank's tensor-parallel index
};

class MoeFeedForward {
 public:
  // No scratch: for a stage without sparse layers.
  MoeFeedForward() = default;
  // Scratch for up to `max_positions` rows per call; the rank's experts have
  // `expert_hidden` units each (its part of config.expert_intermediate_size).
  MoeFeedForward(const ModelConfig& config, int64_t max_positions, int64_t expert_hidden);

  // out (n, dim) = the mixture's output (this rank's part of it) for the n
  // rows of normed (n, dim), with the router and experts of `layer`, which
  // holds the experts experts.held: the chosen ones among them, or with
  // experts.holders those AssignExperts gives experts.self;
  // routed[e] += the rows routed to expert e (num_experts entries).
  // Preconditions: 1 <= n <= max_positions; layer.experts has
  // experts.held.size() entries of expert_hidden units; experts.holders is
  // empty or has num_experts entries, each an increasing list of indices in
  // [0, num_experts) holding that expert, experts.self among those of every
  // held expert; `out` does not alias `normed`.
  void Forward(const LayerWeights& layer, const HeldExperts& experts, std::span<const float> normed,
               int64_t n, std::span<float> out, std::span<int64_t> routed, ThreadPool& pool);

 private:
  int64_t dim_ = 0;
  int64_t num_experts_ = 0;
  int64_t top_k_ = 0;
  int64_t expert_hidden_ = 0;
  bool renormalise_ = false;
  std::vector<float> probabilities_;  // (max_positions, num_experts) router logits, then softmax
  std::vector<int32_t> chosen_;       // (max_positions, top_k) experts of each row
  std::vector<int64_t> expert_rows_;  // (num_experts) rows routed to each expert in the call
  std::vector<int64_t> rank_work_;    // (num_experts) AssignExperts' work per index
  std::vector<int32_t> order_;        // (num_experts) AssignExperts' scratch
  std::vector<int32_t> runner_;       // (num_experts) the index running each expert
  std::vector<float> chosen_weight_;  // (max_positions, top_k) their weights
  std::vector<int64_t> rows_;         // (max_positions) the rows routed to the current expert
  std::vector<float> row_weight_;     // (max_positions) their weights for it
  std::vector<float> gathered_;       // (max_positions, dim) those rows of normed
  std::vector<float> gate_up_;        // (max_positions, 2 * expert_hidden)
  std::vector<float> activated_;      // (max_positions, expert_hidden) SwiGLU output
  std::vector<float> expert_out_;     // (max_positions, dim) w_down's output
};

}  // namespace inferno
