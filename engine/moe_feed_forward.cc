#include "engine/moe_feed_forward.h"

#include <algorithm>

#include <glog/logging.h>

#include "kernels/kernels.h"

namespace inferno {

void RouteTopK(std::span<float> logits, bool renormalise, std::span<int32_t> experts,
               std::span<float> weights) {
  const size_t k = experts.size();
  CHECK(k >= 1 && k <= logits.size() && weights.size() == k) << k << " of " << logits.size() << " experts";
  Softmax(logits);
  float sum = 0.0f;
  for (size_t i = 0; i < k; ++i) {
    int32_t best = -1;
    for (size_t e = 0; e < logits.size(); ++e) {
      const bool taken =
          std::find(experts.begin(), experts.begin() + i, static_cast<int32_t>(e)) != experts.begin() + i;
      if (!taken && (best < 0 || logits[e] > logits[static_cast<size_t>(best)]))
        best = static_cast<int32_t>(e);
    }
    experts[i] = best;
    weights[i] = logits[static_cast<size_t>(best)];
    sum += weights[i];
  }
  if (renormalise) {
    for (float& weight : weights) weight /= sum;
  }
}

void AssignExperts(std::span<const int64_t> rows, std::span<const std::vector<int32_t>> holders,
                   std::span<int64_t> work, std::span<int32_t> order, std::span<int32_t> runner) {
  const size_t n = rows.size();
  CHECK(holders.size() == n && order.size() >= n && runner.size() == n) << n << " experts";
  std::fill(work.begin(), work.end(), 0);
  size_t shared = 0;
  for (size_t e = 0; e < n; ++e) {
    runner[e] = -1;
    if (rows[e] == 0) continue;
    CHECK(!holders[e].empty()) << "expert " << e << " has no holder";
    if (holders[e].size() > 1) {
      order[shared++] = static_cast<int32_t>(e);
      continue;
    }
    runner[e] = holders[e].front();
    CHECK(runner[e] >= 0 && static_cast<size_t>(runner[e]) < work.size()) << "expert " << e;
    work[static_cast<size_t>(runner[e])] += kExpertReadWork + rows[e];
  }
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shared),
            [&](int32_t a, int32_t b) { return rows[a] > rows[b] || (rows[a] == rows[b] && a < b); });
  for (size_t i = 0; i < shared; ++i) {
    const size_t e = static_cast<size_t>(order[i]);
    int32_t best = holders[e].front();
    for (int32_t t : holders[e]) {
      CHECK(t >= 0 && static_cast<size_t>(t) < work.size()) << "expert " << e << " on index " << t;
      if (work[static_cast<size_t>(t)] < work[static_cast<size_t>(best)]) best = t;
    }
    runner[e] = best;
    work[static_cast<size_t>(best)] += kExpertReadWork + rows[e];
  }
}

MoeFeedForward::MoeFeedForward(const ModelConfig& config, int64_t max_positions, int64_t expert_hidden)
    : dim_(config.hidden_size),
      num_experts_(config.num_experts),
      top_k_(config.num_experts_per_tok),
      expert_hidden_(expert_hidden),
      renormalise_(config.norm_topk_prob) {
  CHECK(num_experts_ >= 1 && top_k_ >= 1 && top_k_ <= num_experts_ && expert_hidden_ >= 1)
      << top_k_ << " of " << num_experts_ << " experts of " << expert_hidden_ << " units";
  probabilities_.resize(max_positions * num_experts_);
  chosen_.resize(max_positions * top_k_);
  expert_rows_.resize(num_experts_);
  rank_work_.resize(num_experts_);
  order_.resize(num_experts_);
  runner_.resize(num_experts_);
  chosen_weight_.resize(max_positions * top_k_);
  rows_.resize(max_positions);
  row_weight_.resize(max_positions);
  gathered_.resize(max_positions * dim_);
  gate_up_.resize(max_positions * 2 * expert_hidden_);
  activated_.resize(max_positions * expert_hidden_);
  expert_out_.resize(max_positions * dim_);
}

void MoeFeedForward::Forward(const LayerWeights& layer, const HeldExperts& experts,
                             std::span<const float> normed, int64_t n, std::span<float> out,
                             std::span<int64_t> routed, ThreadPool& pool) {
  const int64_t dim = dim_, hidden = expert_hidden_, k = top_k_;
  const std::span<const int32_t> held = experts.held;
  CHECK(n >= 1 && n * num_experts_ <= static_cast<int64_t>(probabilities_.size())) << n << " positions";
  CHECK_EQ(layer.experts.size(), held.size());
  CHECK_EQ(static_cast<int64_t>(routed.size()), num_experts_);
  CHECK(experts.holders.empty() || static_cast<int64_t>(experts.holders.size()) == num_experts_);
  CHECK(static_cast<int64_t>(normed.size()) >= n * dim && static_cast<int64_t>(out.size()) >= n * dim);
  const WeightMatrix router[] = {layer.router.Matrix()};
  MatMul(probabilities_, normed, router, n, num_experts_, dim, pool);
  for (int64_t t = 0; t < n; ++t) {
    RouteTopK(std::span<float>(probabilities_).subspan(t * num_experts_, num_experts_), renormalise_,
              std::span<int32_t>(chosen_).subspan(t * k, k),
              std::span<float>(chosen_weight_).subspan(t * k, k));
  }
  std::fill(expert_rows_.begin(), expert_rows_.end(), 0);
  for (int64_t i = 0; i < n * k; ++i) ++expert_rows_[static_cast<size_t>(chosen_[i])];
  for (int64_t e = 0; e < num_experts_; ++e)
    routed[static_cast<size_t>(e)] += expert_rows_[static_cast<size_t>(e)];
  if (!experts.holders.empty()) AssignExperts(expert_rows_, experts.holders, rank_work_, order_, runner_);
  std::fill_n(out.begin(), n * dim, 0.0f);
  for (size_t h = 0; h < held.size(); ++h) {
    const int32_t e = held[h];
    if (!experts.holders.empty() && runner_[static_cast<size_t>(e)] != experts.self) continue;
    // The rows routed to expert e, in order, and their weights for it.
    int64_t m = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < k; ++i) {
        if (chosen_[t * k + i] != e) continue;
        rows_[m] = t;
        row_weight_[m] = chosen_weight_[t * k + i];
        std::copy_n(normed.data() + t * dim, dim, gathered_.data() + m * dim);
        ++m;
      }
    }
    if (m == 0) continue;
    const ExpertWeights& expert = layer.experts[h];
    const WeightMatrix gate_up[] = {expert.w_gate.Matrix(), expert.w_up.Matrix()};
    MatMul(gate_up_, gathered_, gate_up, m, 2 * hidden, dim, pool);
    for (int64_t r = 0; r < m; ++r) {
      SwiGlu(std::span<float>(activated_).subspan(r * hidden, hidden),
             std::span<const float>(gate_up_).subspan(r * 2 * hidden, 2 * hidden));
    }
    const WeightMatrix down[] = {expert.w_down.Matrix()};
    MatMul(expert_out_, activated_, down, m, dim, hidden, pool);
    for (int64_t r = 0; r < m; ++r) {
      float* row = out.data() + rows_[r] * dim;
      const float* add = expert_out_.data() + r * dim;
      for (int64_t i = 0; i < dim; ++i) row[i] += row_weight_[r] * add[i];
    }
  }
}

}  // namespace inferno
