// Regex: a compiled PCRE2 pattern in UTF mode with Unicode properties (UCP),
// so \p{L}, \p{N} and \s mean what they mean in the Oniguruma regexes of
// tokenizer.json pre-tokenizers. JIT-compiled when the platform allows.
//
// Thread-safety: immutable after Compile; FindAll may be called from several
// threads at once (each call has its own match data).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace inferno::hf {

class Regex {
 public:
  // `literal`: match `pattern` as plain text. Fails with InvalidArgument
  // giving PCRE2's reason and the offset in the pattern.
  static Result<Regex> Compile(std::string_view pattern, bool literal);

  // Non-overlapping matches in `text` as (offset, length), leftmost first.
  // An empty match advances by one character. Precondition: `text` is valid
  // UTF-8.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;

 private:
  struct Code;
  explicit Regex(std::shared_ptr<const Code> code) : code_(std::move(code)) {}
  std::shared_ptr<const Code> code_;
};

}  // namespace inferno::hf
