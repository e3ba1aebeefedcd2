// Sampler: picks the next token from a vector of logits — greedy (argmax,
// the first on ties) when temperature is 0, otherwise from the softmax of
// logits / temperature, restricted to the top_k most likely tokens and then
// to the smallest set whose probability reaches top_p (nucleus).
//
// The random stream is a xorshift64* generator seeded by `seed`, one draw per
// sampled token, so a sequence's tokens depend only on its logits and seed —
// not on the world size, the thread count or other sequences.
//
// Thread-safety: not thread-safe; one Sampler per sequence.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace inferno {

// The smallest temperature a sampler takes besides 0: logits divided by less
// could overflow to infinity and make every probability NaN.
inline constexpr float kMinTemperature = 1e-3f;

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: no limit
  float top_p = 1.0f;        // 1: no nucleus cut
  uint64_t seed = 42;

  bool operator==(const SamplingOptions&) const = default;
};

class Sampler {
 public:
  // Preconditions: temperature is 0 or >= kMinTemperature, top_k >= 0, 0 < top_p <= 1,
  // vocab_size >= 1.
  Sampler(const SamplingOptions& options, int32_t vocab_size);

  // The next token id. `logits` (vocab) is used as scratch and overwritten.
  // Allocates nothing.
  int32_t Sample(std::span<float> logits);

 private:
  // Uniform in [0, 1).
  float NextUniform();

  SamplingOptions options_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> candidates_;  // (vocab) probability, id
};

}  // namespace inferno
