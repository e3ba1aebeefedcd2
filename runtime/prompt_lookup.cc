#include "runtime/prompt_lookup.h"

#include <algorithm>
#include <cstddef>

namespace inferno {

void DraftByPromptLookup(std::span<const int32_t> tokens, int64_t k, std::vector<int32_t>& draft) {
  draft.clear();
  const int64_t size = static_cast<int64_t>(tokens.size());
  if (k <= 0) return;
  for (int64_t n = std::min(kMaxDraftNgram, size - 1); n >= kMinDraftNgram; --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    // Occurrences ending before the last token, latest first: [start, start + n).
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t follow = start + n;
      const int64_t period = size - follow;
      for (int64_t i = 0; i < k; ++i) draft.push_back(tokens[static_cast<size_t>(follow + i % period)]);
      return;
    }
  }
}

}  // namespace inferno
