// AddedTokenMatcher: finds a tokenizer.json's added tokens ("added_tokens":
// <|eot_id|>, </s>, <|im_start|> …) in text before the model runs, as
// Hugging Face tokenizers' AddedVocabulary does: leftmost match first, the
// longest token among those starting there, `single_word` tokens only between
// non-word characters, and `lstrip` / `rstrip` tokens absorbing the
// whitespace to their left / right.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferno::hf {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of text: either plain text (token_id < 0) or one added token.
struct TextSegment {
  std::string_view text;
  int32_t token_id = -1;
};

class AddedTokenMatcher {
 public:
  // Tokens with empty content never match.
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // `text` cut into plain-text segments and matched tokens, in order; plain
  // segments are never empty. The segments view `text`.
  std::vector<TextSegment> Split(std::string_view text) const;

  bool empty() const { return tokens_.empty(); }

 private:
  // The longest acceptable token starting at `pos`, or -1 (index into tokens_).
  int LongestMatchAt(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  // For each first byte, indices into tokens_ in decreasing content length.
  std::vector<std::vector<int>> by_first_byte_;
};

}  // namespace inferno::hf
