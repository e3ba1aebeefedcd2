#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include <glog/logging.h>

#include "kernels/kernels.h"

namespace inferno {

namespace {

bool Penalized(const SamplingOptions& o) {
  return o.presence_penalty != 0.0f || o.frequency_penalty != 0.0f || o.repetition_penalty != 1.0f;
}

}  // namespace

Sampler::Sampler(const SamplingOptions& options, int32_t vocab_size, std::span<const int32_t> prompt,
                 std::shared_ptr<TokenConstraint> constraint)
    : options_(options),
      constraint_(std::move(constraint)),
      state_(options.seed == 0 ? 0x9E3779B97F4A7C15ull : options.seed) {
  CHECK(ValidSamplingOptions(options)) << "temperature " << options.temperature << " top_p " << options.top_p;
  CHECK_GE(vocab_size, 1);
  candidates_.resize(vocab_size);
  if (Penalized(options)) {
    generated_count_.assign(vocab_size, 0);
    seen_.assign(vocab_size, false);
    for (int32_t token : prompt) See(token, false);
  }
  if (options.logprobs >= 0) {
    raw_.resize(vocab_size);
    logprobs_.top.reserve(kMaxTopLogprobs);
  }
}

bool Sampler::ArgMaxOnly() const {
  return options_.temperature == 0.0f && !Penalized(options_) && options_.logprobs < 0 &&
         constraint_ == nullptr;
}

float Sampler::NextUniform() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t bits = static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return static_cast<float>(bits >> 8) / 16777216.0f;
}

void Sampler::See(int32_t token, bool generated) {
  CHECK(token >= 0 && static_cast<size_t>(token) < seen_.size()) << token;
  if (!seen_[token]) {
    seen_[token] = true;
    seen_ids_.push_back(token);
  }
  if (generated) ++generated_count_[token];
}

void Sampler::Penalize(std::span<float> logits) const {
  for (int32_t token : seen_ids_) {
    float& logit = logits[token];
    if (options_.repetition_penalty != 1.0f) {
      logit = logit > 0.0f ? logit / options_.repetition_penalty : logit * options_.repetition_penalty;
    }
    const int32_t count = generated_count_[token];
    if (count > 0)
      logit -= options_.frequency_penalty * static_cast<float>(count) + options_.presence_penalty;
  }
}

size_t Sampler::Distribution(std::span<float> logits, float& mass) {
  for (float& logit : logits) logit /= options_.temperature;
  Softmax(logits);
  const size_t vocab = logits.size();
  const bool limit_k = options_.top_k > 0 && static_cast<size_t>(options_.top_k) < vocab;
  size_t kept = vocab;
  mass = 1.0f;
  if (!limit_k && options_.top_p >= 1.0f) {
    for (size_t i = 0; i < vocab; ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
    return kept;
  }
  // With a nucleus cut, tokens below (1 - top_p) / (vocab - 1) cannot be in
  // it (together they hold less than 1 - top_p), so they are not sorted.
  const float cutoff = options_.top_p < 1.0f && vocab > 1 ? (1.0f - options_.top_p) / (vocab - 1) : 0.0f;
  size_t count = 0;
  for (size_t i = 0; i < vocab; ++i) {
    if (logits[i] >= cutoff) candidates_[count++] = {logits[i], static_cast<int32_t>(i)};
  }
  kept = limit_k ? std::min<size_t>(options_.top_k, count) : count;
  std::partial_sort(candidates_.begin(), candidates_.begin() + kept, candidates_.begin() + count, MoreLikely);
  mass = 0.0f;
  for (size_t i = 0; i < kept; ++i) {
    mass += candidates_[i].first;
    if (mass > options_.top_p) {
      kept = i + 1;
      break;
    }
  }
  return kept;
}

int32_t Sampler::Sample(std::span<float> logits, int32_t draft, std::span<const float> draft_probs) {
  CHECK_EQ(logits.size(), candidates_.size());
  CHECK(draft >= -1 && static_cast<size_t>(draft + 1) <= logits.size()) << draft;
  CHECK(draft_probs.empty() || (draft >= 0 && draft_probs.size() == logits.size())) << draft;
  if (options_.logprobs >= 0) std::copy(logits.begin(), logits.end(), raw_.begin());
  const bool penalized = Penalized(options_);
  if (penalized) Penalize(logits);
  if (constraint_ != nullptr) constraint_->Mask(logits);
  int32_t token = -1;
  if (options_.temperature == 0.0f) {
    token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  } else {
    // p: the `kept` (probability, id) pairs of candidates_, of total `mass`.
    float mass = 1.0f;
    const size_t kept = Distribution(logits, mass);
    const float coin = NextUniform();
    // q, the draft's distribution: draft_probs, or all on the draft.
    const auto q = [&](int32_t id) {
      if (draft_probs.empty()) return id == draft ? 1.0f : 0.0f;
      return draft_probs[static_cast<size_t>(id)];
    };
    float draft_p = 0.0f;
    for (size_t i = 0; draft >= 0 && i < kept; ++i) {
      if (candidates_[i].second == draft) draft_p = candidates_[i].first / mass;
    }
    // The draft is kept with probability min(1, p / q); the rest of the
    // coin, uniform over the rejections, picks from max(0, p - q).
    const float draft_q = draft >= 0 ? q(draft) : 0.0f;
    const float accept = draft_q > 0.0f ? std::min(1.0f, draft_p / draft_q) : 0.0f;
    if (coin < accept) {
      token = draft;
    } else {
      float residual = 0.0f;
      for (size_t i = 0; i < kept; ++i) {
        residual += std::max(0.0f, candidates_[i].first / mass - q(candidates_[i].second));
      }
      const float target = (coin - accept) / (1.0f - accept) * residual;
      float cumulative = 0.0f;
      for (size_t i = 0; i < kept; ++i) {
        const float weight = std::max(0.0f, candidates_[i].first / mass - q(candidates_[i].second));
        if (weight <= 0.0f) continue;
        token = candidates_[i].second;  // the last one if rounding left the sum below the target
        cumulative += weight;
        if (target < cumulative) break;
      }
      if (token < 0) token = draft >= 0 ? draft : candidates_[0].second;  // p is q (up to rounding)
    }
  }
  if (penalized) See(token, true);
  if (constraint_ != nullptr) constraint_->Accept(token);
  if (options_.logprobs >= 0) ComputeTokenLogprobs(raw_, token, options_.logprobs, candidates_, logprobs_);
  return token;
}

int32_t Sampler::Propose(std::span<float> logits) {
  CHECK_EQ(logits.size(), candidates_.size());
  if (options_.temperature == 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  float mass = 1.0f;
  const size_t kept = Distribution(logits, mass);
  const float target = NextUniform() * mass;
  std::fill(logits.begin(), logits.end(), 0.0f);
  int32_t token = candidates_[0].second;
  float cumulative = 0.0f;
  bool picked = false;
  for (size_t i = 0; i < kept; ++i) {
    logits[static_cast<size_t>(candidates_[i].second)] = candidates_[i].first / mass;
    cumulative += candidates_[i].first;
    if (!picked && candidates_[i].first > 0.0f) {
      token = candidates_[i].second;  // the last one if rounding left the sum below the target
      picked = target < cumulative;
    }
  }
  return token;
}

}  // namespace inferno
