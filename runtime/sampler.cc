#include "runtime/sampler.h"

#include <algorithm>

#include <glog/logging.h>

#include "kernels/kernels.h"

namespace inferno {
namespace {

bool MoreLikely(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

Sampler::Sampler(const SamplingOptions& options, int32_t vocab_size)
    : options_(options), state_(options.seed == 0 ? 0x9E3779B97F4A7C15ull : options.seed) {
  CHECK(options.temperature == 0.0f || options.temperature >= kMinTemperature) << options.temperature;
  CHECK_GE(options.top_k, 0);
  CHECK(options.top_p > 0.0f && options.top_p <= 1.0f) << options.top_p;
  CHECK_GE(vocab_size, 1);
  candidates_.resize(vocab_size);
}

float Sampler::NextUniform() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t bits = static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return static_cast<float>(bits >> 8) / 16777216.0f;
}

int32_t Sampler::Sample(std::span<float> logits) {
  CHECK_EQ(logits.size(), candidates_.size());
  if (options_.temperature == 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  for (float& logit : logits) logit /= options_.temperature;
  Softmax(logits);
  const float coin = NextUniform();
  const size_t vocab = logits.size();
  const bool limit_k = options_.top_k > 0 && static_cast<size_t>(options_.top_k) < vocab;
  if (!limit_k && options_.top_p >= 1.0f) {
    float cumulative = 0.0f;
    for (size_t i = 0; i < vocab; ++i) {
      cumulative += logits[i];
      if (coin < cumulative) return static_cast<int32_t>(i);
    }
    return static_cast<int32_t>(vocab - 1);  // rounding left the sum below the coin
  }
  // With a nucleus cut, tokens below (1 - top_p) / (vocab - 1) cannot be in
  // it (together they hold less than 1 - top_p), so they are not sorted.
  const float cutoff = options_.top_p < 1.0f && vocab > 1 ? (1.0f - options_.top_p) / (vocab - 1) : 0.0f;
  size_t count = 0;
  for (size_t i = 0; i < vocab; ++i) {
    if (logits[i] >= cutoff) candidates_[count++] = {logits[i], static_cast<int32_t>(i)};
  }
  size_t kept = limit_k ? std::min<size_t>(options_.top_k, count) : count;
  std::partial_sort(candidates_.begin(), candidates_.begin() + kept, candidates_.begin() + count, MoreLikely);
  float mass = 0.0f;
  for (size_t i = 0; i < kept; ++i) {
    mass += candidates_[i].first;
    if (mass > options_.top_p) {
      kept = i + 1;
      break;
    }
  }
  const float target = coin * mass;
  float cumulative = 0.0f;
  for (size_t i = 0; i < kept; ++i) {
    cumulative += candidates_[i].first;
    if (target < cumulative) return candidates_[i].second;
  }
  return candidates_[kept - 1].second;
}

}  // namespace inferno
