#include "text/hf_tokenizer/added_tokens.h"

#include <algorithm>
#include <cstdint>

namespace inferno::hf {
namespace {

bool IsAsciiWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Letters, digits and '_' count as word characters; every non-ASCII
// character counts as one too (most are letters).
bool IsWordByte(char c) {
  const auto b = static_cast<uint8_t>(c);
  return b >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : by_first_byte_(256) {
  std::erase_if(tokens, [](const AddedToken& token) { return token.content.empty(); });
  tokens_ = std::move(tokens);
  for (int i = 0; i < static_cast<int>(tokens_.size()); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& candidates : by_first_byte_) {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
  }
}

int AddedTokenMatcher::LongestMatchAt(std::string_view text, size_t pos) const {
  for (int index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const AddedToken& token = tokens_[index];
    if (text.substr(pos, token.content.size()) != token.content) continue;
    if (token.single_word) {
      const size_t end = pos + token.content.size();
      const bool word_before = pos > 0 && IsWordByte(text[pos - 1]);
      const bool word_after = end < text.size() && IsWordByte(text[end]);
      if (word_before || word_after) continue;
    }
    return index;
  }
  return -1;
}

std::vector<TextSegment> AddedTokenMatcher::Split(std::string_view text) const {
  std::vector<TextSegment> segments;
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const int index = LongestMatchAt(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos;
    size_t end = pos + token.content.size();
    if (token.lstrip) {
      while (start > plain_start && IsAsciiWhitespace(text[start - 1])) --start;
    }
    if (token.rstrip) {
      while (end < text.size() && IsAsciiWhitespace(text[end])) ++end;
    }
    if (start > plain_start) segments.push_back({text.substr(plain_start, start - plain_start), -1});
    segments.push_back({text.substr(start, end - start), token.id});
    plain_start = pos = end;
  }
  if (plain_start < text.size()) segments.push_back({text.substr(plain_start), -1});
  return segments;
}

}  // namespace inferno::hf
