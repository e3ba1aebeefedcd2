// SamplingOptions: what a request asks of its sampler (runtime/sampler.h),
// and the ranges a Sampler takes. Kept apart from the Sampler so that a
// request parser needs neither the sampler nor the kernels it runs on.
//
// Thread-safety: a value type and a pure function.
#pragma once

#include <cstdint>

#include "runtime/token_logprobs.h"

namespace inferno {

// The smallest temperature a sampler takes besides 0: logits divided by less
// could overflow to infinity and make every probability NaN.
inline constexpr float kMinTemperature = 1e-3f;

// The ranges of the penalties: OpenAI's for presence and frequency; the
// repetition penalty is a factor in (0, kMaxRepetitionPenalty].
inline constexpr float kMaxPresenceFrequencyPenalty = 2.0f;
inline constexpr float kMaxRepetitionPenalty = 10.0f;

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: no limit
  float top_p = 1.0f;        // 1: no nucleus cut
  uint64_t seed = 42;
  float presence_penalty = 0.0f;    // [-2, 2], 0: none
  float frequency_penalty = 0.0f;   // [-2, 2], 0: none
  float repetition_penalty = 1.0f;  // (0, 10], 1: none
  // -1: no logprobs; 0 to kMaxTopLogprobs: the sampled token's logprob and
  // that many most likely alternatives.
  int32_t logprobs = -1;

  bool operator==(const SamplingOptions&) const = default;
};

// Whether a Sampler takes `options` (each field in its range above; NaN is
// in none).
bool ValidSamplingOptions(const SamplingOptions& options);

}  // namespace inferno
