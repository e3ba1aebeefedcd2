// Prompt lookup: the draft of speculative decoding taken from the sequence
// itself. A sequence that repeats its context (code being edited, a text
// being summarised or quoted) often continues as it went on after the last
// time its latest tokens occurred; the draft proposes those tokens, and one
// batched pass of the model verifies them all (one_stage_loop.h).
//
// DraftByPromptLookup: for n from kMaxDraftNgram down to 1, finds the most
// recent earlier occurrence of the last n tokens of `tokens` (prompt and
// generated so far) and returns up to `k` tokens that followed it — at
// least one — or nothing when no suffix occurs earlier. The draft is a pure
// function of the tokens, so every rank that knows them proposes the same.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inferno {

// The longest suffix looked up.
inline constexpr int64_t kMaxDraftNgram = 3;

// Fills `draft` (cleared first) with up to `k` tokens. Preconditions: k >= 0.
void DraftByPromptLookup(std::span<const int32_t> tokens, int64_t k, std::vector<int32_t>& draft);

}  // namespace inferno
