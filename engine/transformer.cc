#include "engine/transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <glog/logging.h>

#include "base/progress.h"
#include "engine/rope.h"
#include "kernels/kernels.h"

namespace inferno {

TransformerStage::TransformerStage(const ModelConfig& config, StageWeights weights, int num_slots,
                                   int64_t context_length, ThreadPool& pool, AllReduce* tensor_parallel)
    : config_(config),
      weights_(std::move(weights)),
      num_slots_(num_slots),
      context_length_(context_length),
      pool_(pool),
      tensor_parallel_(tensor_parallel) {
  CHECK_GE(num_slots, 1);
  CHECK(context_length >= 1 && context_length <= config_.max_position_embeddings)
      << "context length " << context_length;
  CHECK(config_.CheckContextFits(context_length).ok())
      << config_.CheckContextFits(context_length).error().message;
  const RankShard& part = weights_.part;
  const bool whole = part.heads == RowRange{0, config_.num_attention_heads} &&
                     part.hidden_units == RowRange{0, config_.intermediate_size};
  CHECK(whole || tensor_parallel_) << "a tensor-parallel part needs its group";
  CHECK(!tensor_parallel_ || tensor_parallel_->rank() == part.tp_index)
      << "tensor-parallel rank " << tensor_parallel_->rank() << " holds index " << part.tp_index;
  const int64_t dim = config_.hidden_size;
  const int64_t head_dim = config_.head_dim();
  const int64_t q_dim = part.heads.size() * head_dim;
  const int64_t kv_dim = part.kv_heads.size() * head_dim;
  const int64_t hidden = part.hidden_units.size();
  const int64_t seq_len = context_length_;
  const int64_t positions = max_positions_per_call();
  state_.cache_layer_begin.push_back(0);
  for (int64_t l = 0; l < part.layers.size(); ++l) {
    const bool slides = config_.LayerSlides(part.layers.begin + l);
    const int64_t capacity = slides ? std::min(seq_len, config_.sliding_window + positions - 1) : seq_len;
    state_.cache_capacity.push_back(capacity);
    state_.cache_layer_begin.push_back(state_.cache_layer_begin.back() + capacity * kv_dim);
  }
  state_.key_cache.assign(num_slots * state_.cache_layer_begin.back(), 0.0f);
  state_.value_cache.assign(num_slots * state_.cache_layer_begin.back(), 0.0f);
  state_.normed.resize(positions * dim);
  state_.qkv.resize(positions * (q_dim + 2 * kv_dim));
  state_.attention.resize(positions * q_dim);
  state_.projected.resize(positions * dim);
  state_.gate_up.resize(positions * 2 * hidden);
  state_.activated.resize(positions * hidden);
  state_.scores.resize(pool_.num_threads() * seq_len);
  state_.rope_cos.resize(seq_len * head_dim / 2);
  state_.rope_sin.resize(seq_len * head_dim / 2);
  state_.row_slot.resize(positions);
  state_.row_pos.resize(positions);
  FillRopeTables(state_.rope_cos, state_.rope_sin, seq_len, RopeInverseFrequencies(config_, seq_len));
  if (const float factor = RopeAttentionFactor(config_); factor != 1.0f) {  // longrope
    for (float& c : state_.rope_cos) c *= factor;
    for (float& v : state_.rope_sin) v *= factor;
  }
  if (config_.local_rope_theta > 0.0f) {
    ModelConfig local = config_;
    local.rope_theta = config_.local_rope_theta;
    local.rope_scaling = {};
    state_.rope_local_cos.resize(seq_len * head_dim / 2);
    state_.rope_local_sin.resize(seq_len * head_dim / 2);
    FillRopeTables(state_.rope_local_cos, state_.rope_local_sin, seq_len,
                   RopeInverseFrequencies(local, seq_len));
  }
  for (const LayerWeights& layer : weights_.layers) {
    if (!layer.experts.empty()) {
      moe_ = MoeFeedForward(config_, positions, layer.experts.front().w_gate.rows());
      routed_.assign(static_cast<size_t>(part.layers.size() * config_.num_experts), 0);
      break;
    }
  }
  const WeightMatrix classifier = weights_.ClassifierMatrix();
  CHECK_EQ(classifier.rows, part.classifier_rows.size());
  CHECK(classifier.rows == 0 || weights_.classifier.empty() || weights_.classifier.cols() == dim);
}

int64_t TransformerStage::max_positions_per_call() const {
  return std::min(kMaxPositionsPerCall, context_length_);
}

void TransformerStage::Embed(std::span<const int32_t> tokens, std::span<float> x) {
  CHECK(is_first());
  const int64_t dim = config_.hidden_size;
  CHECK(weights_.part.embedding_rows == (RowRange{0, config_.vocab_size}))
      << "the first stage holds the whole embedding table";
  CHECK_EQ(x.size(), tokens.size() * dim);
  for (size_t t = 0; t < tokens.size(); ++t) {
    CHECK(tokens[t] >= 0 && tokens[t] < config_.vocab_size) << "token id " << tokens[t];
    float* row = x.data() + t * dim;
    weights_.token_embedding.RowToF32(tokens[t], std::span<float>(row, dim));
    if (config_.scales_embedding()) {  // Gemma: times sqrt(hidden_size), as a float
      const float scale = std::sqrt(static_cast<float>(dim));
      for (int64_t i = 0; i < dim; ++i) row[i] *= scale;
    }
  }
}

Status TransformerStage::Forward(int slot, int64_t pos, std::span<float> x, Timeline* timeline,
                                 int sequence) {
  const SlotPositions part{slot, pos, static_cast<int64_t>(x.size()) / config_.hidden_size};
  return Forward(std::span<const SlotPositions>(&part, 1), x, timeline, sequence);
}

void TransformerStage::Attend(int64_t l, std::span<const float> x, int64_t n) {
  const RankShard& part = weights_.part;
  const LayerWeights& layer = weights_.layers[l];
  const int64_t dim = config_.hidden_size;
  const int64_t head_dim = config_.head_dim();
  const int64_t q_dim = part.heads.size() * head_dim;
  const int64_t kv_dim = part.kv_heads.size() * head_dim;
  const int64_t seq_len = context_length_;
  const int64_t n_heads = part.heads.size();
  const int64_t heads_per_kv = config_.num_attention_heads / config_.num_key_value_heads;
  const int64_t qkv_dim = q_dim + 2 * kv_dim;
  const int64_t half = head_dim / 2;
  const float eps = config_.rms_norm_eps;
  const float norm_offset = config_.norm_weight_offset;
  const float score_divisor = std::sqrt(config_.query_pre_attn_scalar > 0.0f ? config_.query_pre_attn_scalar
                                                                             : static_cast<float>(head_dim));
  const bool slides = config_.LayerSlides(part.layers.begin + l);
  const int64_t capacity = state_.cache_capacity[l];
  // The keys (capacity, kv_dim) of layer l of the sequence in `slot`; its
  // values at the same offset of the value cache.
  const auto cache_offset = [&](int slot) {
    return static_cast<int64_t>(slot) * state_.cache_layer_begin.back() + state_.cache_layer_begin[l];
  };
  const bool local_rope = slides && !state_.rope_local_cos.empty();
  const std::vector<float>& rope_cos = local_rope ? state_.rope_local_cos : state_.rope_cos;
  const std::vector<float>& rope_sin = local_rope ? state_.rope_local_sin : state_.rope_sin;

  // Attention: normed = rmsnorm(x); qkv = normed · [wq; wk; wv]ᵀ (+ biases); each
  // head of q and k RMS-normed (qk_norm); RoPE on q and k; k and v go to the
  // cache of their slot at their positions.
  for (int64_t t = 0; t < n; ++t) {
    RmsNorm(std::span<float>(state_.normed).subspan(t * dim, dim), x.subspan(t * dim, dim),
            layer.attention_norm, eps, norm_offset);
  }
  const WeightMatrix wqkv[] = {layer.wq.Matrix(), layer.wk.Matrix(), layer.wv.Matrix()};
  MatMul(state_.qkv, state_.normed, wqkv, n, qkv_dim, dim, pool_);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t p = state_.row_pos[t];
    const int64_t offset = cache_offset(state_.row_slot[t]);
    std::span<float> row = std::span<float>(state_.qkv).subspan(t * qkv_dim, qkv_dim);
    if (!layer.bq.empty()) {
      for (int64_t i = 0; i < q_dim; ++i) row[i] += layer.bq[i];
      for (int64_t i = 0; i < kv_dim; ++i) row[q_dim + i] += layer.bk[i];
      for (int64_t i = 0; i < kv_dim; ++i) row[q_dim + kv_dim + i] += layer.bv[i];
    }
    if (!layer.q_norm.empty()) {  // Qwen3, Gemma: each head of q and k RMS-normed before RoPE
      for (int64_t h = 0; h < q_dim; h += head_dim)
        RmsNorm(row.subspan(h, head_dim), row.subspan(h, head_dim), layer.q_norm, eps, norm_offset);
      for (int64_t h = q_dim; h < q_dim + kv_dim; h += head_dim)
        RmsNorm(row.subspan(h, head_dim), row.subspan(h, head_dim), layer.k_norm, eps, norm_offset);
    }
    const std::span<const float> cos = std::span<const float>(rope_cos).subspan(p * half, half);
    const std::span<const float> sin = std::span<const float>(rope_sin).subspan(p * half, half);
    ApplyRope(row.first(q_dim), head_dim, cos, sin);
    ApplyRope(row.subspan(q_dim, kv_dim), head_dim, cos, sin);
    const int64_t cached = offset + (p % capacity) * kv_dim;
    std::copy_n(row.data() + q_dim, kv_dim, state_.key_cache.data() + cached);
    std::copy_n(row.data() + q_dim + kv_dim, kv_dim, state_.value_cache.data() + cached);
  }
  pool_.ParallelFor(n * n_heads, [&](int64_t begin, int64_t end, int thread) {
    std::span<float> scores = std::span<float>(state_.scores).subspan(thread * seq_len, seq_len);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / n_heads;
      const int64_t head = i % n_heads;  // of the part's heads
      const int64_t kv_head = (part.heads.begin + head) / heads_per_kv - part.kv_heads.begin;
      const int64_t offset = cache_offset(state_.row_slot[t]);
      const int64_t last = state_.row_pos[t];
      const AttentionSpan span{slides ? std::max<int64_t>(0, last - config_.sliding_window + 1) : 0, last,
                               capacity};
      AttendOneHead(std::span<float>(state_.attention).subspan(t * q_dim + head * head_dim, head_dim),
                    std::span<const float>(state_.qkv).subspan(t * qkv_dim + head * head_dim, head_dim),
                    state_.key_cache.data() + offset, state_.value_cache.data() + offset, span, kv_dim,
                    kv_head, head_dim, score_divisor, scores);
      ProgressAdvanced();  // a long prompt's chunk is many heads' work
    }
  });
}

Status TransformerStage::Forward(std::span<const SlotPositions> batch, std::span<float> x, Timeline* timeline,
                                 int sequence) {
  const RankShard& part = weights_.part;
  const int64_t dim = config_.hidden_size;
  const int64_t head_dim = config_.head_dim();
  const int64_t q_dim = part.heads.size() * head_dim;
  const int64_t hidden = part.hidden_units.size();
  const int64_t seq_len = context_length_;
  const int64_t n = static_cast<int64_t>(x.size()) / dim;
  CHECK_EQ(n * dim, static_cast<int64_t>(x.size()));
  CHECK(n >= 1 && n <= max_positions_per_call()) << n << " positions";
  // Row t of x is position row_pos[t] of the sequence in slot row_slot[t].
  int64_t rows = 0;
  for (const SlotPositions& positions : batch) {
    CHECK(positions.slot >= 0 && positions.slot < num_slots_) << "slot " << positions.slot;
    CHECK(positions.n >= 1 && positions.pos >= 0 && positions.pos + positions.n <= seq_len)
        << "positions [" << positions.pos << ", " << positions.pos + positions.n << ")";
    CHECK_LE(rows + positions.n, n) << "more positions than rows of x";
    for (const SlotPositions& other : batch.first(&positions - batch.data())) {
      CHECK_NE(other.slot, positions.slot) << "slot twice in one batch";
    }
    for (int64_t i = 0; i < positions.n; ++i, ++rows) {
      state_.row_slot[rows] = positions.slot;
      state_.row_pos[rows] = positions.pos + i;
    }
  }
  CHECK_EQ(rows, n) << "positions of the batch and rows of x";
  const float eps = config_.rms_norm_eps;
  const float norm_offset = config_.norm_weight_offset;
  const std::span<const float> x_const(x);

  const std::span<float> projected = std::span<float>(state_.projected).first(n * dim);
  Timeline::Clock::time_point compute_begin = Timeline::Clock::now();
  const auto end_compute = [&] {
    if (timeline != nullptr) {
      timeline->Add(SpanKind::kCompute, compute_begin, Timeline::Clock::now(), "forward", sequence);
    }
  };
  // Under tensor parallelism: projected = the sum of every rank's projected.
  const auto sum_over_group = [&](int64_t l, const char* what) -> Status {
    if (!tensor_parallel_) return {};
    end_compute();
    const Timeline::Clock::time_point begin = Timeline::Clock::now();
    Status reduced = tensor_parallel_->Sum(projected);
    compute_begin = Timeline::Clock::now();
    if (timeline != nullptr) timeline->Add(SpanKind::kWait, begin, compute_begin, "all_reduce", sequence);
    if (!reduced) {
      return reduced.error().Prefixed("tensor-parallel all_reduce of layer " +
                                      std::to_string(part.layers.begin + l) + "'s " + what + ": ");
    }
    return {};
  };
  // x += projected, each row RMS-normed first by `post_norm` (Gemma's norms
  // after attention and after the feed-forward) unless it is empty.
  const auto add_to_residual = [&](const WeightTensor& post_norm) {
    for (int64_t t = 0; !post_norm.empty() && t < n; ++t) {
      const std::span<float> row = projected.subspan(t * dim, dim);
      RmsNorm(row, row, post_norm, eps, norm_offset);
    }
    for (int64_t i = 0; i < n * dim; ++i) x[i] += projected[i];
  };
  for (int64_t l = 0; l < part.layers.size(); ++l) {
    const LayerWeights& layer = weights_.layers[l];
    Attend(l, x_const, n);
    const WeightMatrix wo[] = {layer.wo.Matrix()};
    MatMul(projected, state_.attention, wo, n, dim, q_dim, pool_);
    if (Status s = sum_over_group(l, "attention output"); !s) return s;
    if (!layer.bo.empty()) {
      for (int64_t i = 0; i < n * dim; ++i) projected[i] += layer.bo[i % dim];
    }
    add_to_residual(layer.post_attention_norm);

    // Feed-forward: x += w_down · (act(w_gate · normed) * (w_up · normed)),
    // act silu (SwiGLU) or GELU (GeGLU).
    for (int64_t t = 0; t < n; ++t) {
      RmsNorm(std::span<float>(state_.normed).subspan(t * dim, dim), x_const.subspan(t * dim, dim),
              layer.ffn_norm, eps, norm_offset);
    }
    if (!layer.experts.empty()) {  // a mixture of experts (engine/moe_feed_forward.h)
      const HeldExperts held{part.ExpertsOf(part.layers.begin + l),
                             part.expert_holders.empty() ? std::span<const std::vector<int32_t>>()
                                                         : part.expert_holders[static_cast<size_t>(l)],
                             part.tp_index};
      moe_.Forward(layer, held, state_.normed, n, projected,
                   std::span<int64_t>(routed_).subspan(l * config_.num_experts, config_.num_experts), pool_);
    } else {
      const WeightMatrix w_gate_up[] = {layer.w_gate.Matrix(), layer.w_up.Matrix()};
      MatMul(state_.gate_up, state_.normed, w_gate_up, n, 2 * hidden, dim, pool_);
      // Positions split among the threads: a prefill's exponentials took
      // 6% of a 2-thread TinyLlama-4 prefill on one thread.
      pool_.ParallelFor(n, [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          const std::span<float> activated = std::span<float>(state_.activated).subspan(t * hidden, hidden);
          const std::span<const float> gate_up =
              std::span<const float>(state_.gate_up).subspan(t * 2 * hidden, 2 * hidden);
          if (config_.activation == Activation::kGeluTanh) {
            GeGlu(activated, gate_up);
          } else {
            SwiGlu(activated, gate_up);
          }
        }
      });
      const WeightMatrix w_down[] = {layer.w_down.Matrix()};
      MatMul(projected, state_.activated, w_down, n, dim, hidden, pool_);
    }
    if (Status s = sum_over_group(l, "MLP output"); !s) return s;
    add_to_residual(layer.post_ffn_norm);
  }
  end_compute();
  return {};
}

void TransformerStage::FinalNorm(std::span<const float> hidden, std::span<float> normed) const {
  CHECK(is_last());
  const int64_t dim = config_.hidden_size;
  CHECK_EQ(static_cast<int64_t>(hidden.size()), dim);
  RmsNorm(normed, hidden, weights_.final_norm, config_.rms_norm_eps, config_.norm_weight_offset);
}

void TransformerStage::ClassifierSlice(std::span<const float> normed, std::span<float> logits) {
  const int64_t dim = config_.hidden_size;
  const int64_t rows = classifier_rows().size();
  const int64_t n = static_cast<int64_t>(normed.size()) / dim;
  CHECK_EQ(n * dim, static_cast<int64_t>(normed.size()));
  CHECK_EQ(static_cast<int64_t>(logits.size()), n * rows);
  const WeightMatrix classifier[] = {weights_.ClassifierMatrix()};
  if (rows > 0 && n > 0) MatMul(logits, normed, classifier, n, rows, dim, pool_);
  if (const float cap = config_.final_logit_softcapping; cap > 0.0f) {
    for (float& logit : logits) logit = std::tanh(logit / cap) * cap;
  }
}

template <typename Copy>
void TransformerStage::ForEachKvRow(int slot, int64_t pos, int64_t n, Copy copy) const {
  const int64_t kv_dim = part().kv_heads.size() * config_.head_dim();
  int64_t at = 0;  // kv's float
  for (size_t l = 0; l < state_.cache_capacity.size(); ++l) {
    const int64_t offset =
        static_cast<int64_t>(slot) * state_.cache_layer_begin.back() + state_.cache_layer_begin[l];
    for (bool values : {false, true}) {
      for (int64_t p = pos; p < pos + n; ++p, at += kv_dim) {
        copy(offset + (p % state_.cache_capacity[l]) * kv_dim, at, kv_dim, values);
      }
    }
  }
}

void TransformerStage::CopyKvOut(int slot, int64_t pos, int64_t n, std::span<float> kv) const {
  CHECK_EQ(static_cast<int64_t>(kv.size()), n * KvFloatsPerPosition());
  ForEachKvRow(slot, pos, n, [&](int64_t cached, int64_t at, int64_t count, bool values) {
    const std::vector<float>& cache = values ? state_.value_cache : state_.key_cache;
    std::copy_n(cache.data() + cached, count, kv.data() + at);
  });
}

void TransformerStage::CopyKvIn(int slot, int64_t pos, std::span<const float> kv) {
  const int64_t n = static_cast<int64_t>(kv.size()) / KvFloatsPerPosition();
  CHECK_EQ(static_cast<int64_t>(kv.size()), n * KvFloatsPerPosition());
  CHECK_LE(pos + n, context_length_);
  ForEachKvRow(slot, pos, n, [&](int64_t cached, int64_t at, int64_t count, bool values) {
    std::vector<float>& cache = values ? state_.value_cache : state_.key_cache;
    std::copy_n(kv.data() + at, count, cache.data() + cached);
  });
}

int64_t TransformerStage::SmallestWindow() const {
  int64_t window = context_length_;
  for (int64_t l = 0; l < part().layers.size(); ++l) {
    if (config_.LayerSlides(part().layers.begin + l)) window = std::min(window, config_.sliding_window);
  }
  return window;
}

}  // namespace inferno
