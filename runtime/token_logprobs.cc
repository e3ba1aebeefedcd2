#include "runtime/token_logprobs.h"

#include <algorithm>
#include <cmath>

#include <glog/logging.h>

namespace inferno {

void ComputeTokenLogprobs(std::span<const float> logits, int32_t token, int32_t top_n,
                          std::vector<std::pair<float, int32_t>>& scratch, TokenLogprobs& out) {
  CHECK(!logits.empty());
  CHECK(token >= 0 && static_cast<size_t>(token) < logits.size()) << token;
  CHECK(top_n >= 0 && top_n <= kMaxTopLogprobs) << top_n;
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max);
  const double log_sum = max + std::log(sum);
  out.token = token;
  out.logprob = static_cast<float>(logits[token] - log_sum);
  out.top.clear();
  const size_t n = std::min<size_t>(static_cast<size_t>(top_n), logits.size());
  if (n == 0) return;
  scratch.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) scratch[i] = {logits[i], static_cast<int32_t>(i)};
  std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n), scratch.end(),
                    MoreLikely);
  for (size_t i = 0; i < n; ++i) {
    out.top.push_back({scratch[i].second, static_cast<float>(scratch[i].first - log_sum)});
  }
}

}  // namespace inferno
