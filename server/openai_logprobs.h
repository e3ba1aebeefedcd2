// OpenAiLogprobs: the `logprobs` of a completion choice in the OpenAI API's
// shapes, built from the generated tokens' TokenLogprobs
// (runtime/token_logprobs.h) as they come.
//
// Chat (/v1/chat/completions):
//   {"content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105],
//                 "top_logprobs": [{"token", "logprob", "bytes"}, ...]}, ...],
//    "refusal": null}
// Completions (/v1/completions):
//   {"tokens": ["Hi", ...], "token_logprobs": [-0.1, ...],
//    "top_logprobs": [{"Hi": -0.1, ...}, ...], "text_offset": [0, ...]}
// A token's text is what the tokenizer decodes for it after the token before
// it (Tokenizer::Decode), so a token holding part of a UTF-8 character has
// its bytes in "bytes" and U+FFFD in the JSON text; text_offset counts bytes
// of the completion's text.
//
// Thread-safety: one per request; not thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "runtime/token_logprobs.h"
#include "text/tokenizer.h"

namespace inferno {

class OpenAiLogprobs {
 public:
  // `tokenizer` must outlive this.
  OpenAiLogprobs(const Tokenizer& tokenizer, bool chat);

  // The logprobs object of `tokens` (`previous` is the token before the
  // first), each with its `logprobs` (the same length), for a streamed
  // chunk; they are appended to total().
  nlohmann::json Add(int32_t previous, std::span<const int32_t> tokens,
                     std::span<const TokenLogprobs> logprobs);

  // The logprobs object of every token added so far.
  const nlohmann::json& total() const { return total_; }

 private:
  const Tokenizer& tokenizer_;
  const bool chat_;
  int64_t text_offset_ = 0;  // completions: the bytes of the text so far
  nlohmann::json total_;
};

}  // namespace inferno
