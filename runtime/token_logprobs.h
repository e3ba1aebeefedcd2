// TokenLogprobs: the log-probabilities the OpenAI API reports for a sampled
// token (`logprobs`, `top_logprobs`): the log-softmax of the model's logits
// at the position the token was sampled from — before penalties,
// temperature and the top-k / top-p cuts — for the token itself and for the
// most likely tokens.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace inferno {

// The most top alternatives a request may ask for (OpenAI's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TopLogprob {
  int32_t token = 0;
  float logprob = 0;

  bool operator==(const TopLogprob&) const = default;
};

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;            // log-softmax(logits)[token]
  std::vector<TopLogprob> top;  // the most likely first, ties by the lower id
};

// The order of (value, id) candidates that greedy sampling and the top
// alternatives share: the larger value first, ties by the lower id.
inline bool MoreLikely(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// Fills `out` for `token` from `logits` (vocab) with the `top_n` (0 to
// kMaxTopLogprobs, at most vocab) most likely tokens. `scratch` is resized
// to vocab and overwritten; `out.top` reuses its capacity, so a caller that
// keeps both allocates only on the first call.
void ComputeTokenLogprobs(std::span<const float> logits, int32_t token, int32_t top_n,
                          std::vector<std::pair<float, int32_t>>& scratch, TokenLogprobs& out);

}  // namespace inferno
