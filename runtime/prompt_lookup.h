// Prompt lookup: the draft of speculative decoding taken from the sequence
// itself. A sequence that repeats its context (code being edited, a text
// being summarised or quoted) often continues as it went on after the last
// time its latest tokens occurred; the draft proposes those tokens, and one
// batched pass of the model verifies them all (one_stage_loop.h).
//
// DraftByPromptLookup: for n from kMaxDraftNgram down to kMinDraftNgram,
// finds the most recent earlier occurrence of the last n tokens of `tokens`
// (prompt and generated so far) and returns the `k` tokens that followed
// it, or nothing when no such suffix occurs earlier. When the occurrence
// ends P tokens before the end, the tokens repeat with period P, and so
// does the draft past the end (a loop of P tokens is drafted whole). A
// 1-token suffix is not looked up: it matches often and is seldom followed
// the same way (measured on stories260K: most such drafts were not kept,
// and a draft costs its positions). The draft is a pure function of the
// tokens, so every rank that knows them proposes the same.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inferno {

// The longest and the shortest suffix looked up.
inline constexpr int64_t kMaxDraftNgram = 3;
inline constexpr int64_t kMinDraftNgram = 2;

// Fills `draft` (cleared first) with up to `k` tokens. Preconditions: k >= 0.
void DraftByPromptLookup(std::span<const int32_t> tokens, int64_t k, std::vector<int32_t>& draft);

}  // namespace inferno
