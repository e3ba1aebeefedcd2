// TokenDecoder: the "decoder" of a tokenizer.json, as a per-token transform
// from a vocabulary piece to the bytes it prints, so that text can be
// produced one token at a time. Supported types: ByteLevel, ByteFallback,
// Replace with a String pattern, Metaspace, Fuse, Strip, and a Sequence of
// these; null prints pieces as they are.
//
// Fuse joins all tokens into one string in the library; every later Strip
// therefore acts on the whole text, and is supported for its start (the
// leading characters of the decoded sequence) only.
//
// Output is bytes, not necessarily valid UTF-8 (a character may span
// tokens: <0xE4><0xB8><0xAD>, or byte-level pieces); StreamingDecoder
// assembles characters.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace inferno::hf {

class TokenDecoder {
 public:
  // From the "decoder" value. An unsupported type or option is an
  // Unimplemented error naming it. Throws nlohmann::json::exception when a
  // field has the wrong type (HfTokenizer::Load turns that into an error).
  static Result<TokenDecoder> FromJson(const nlohmann::json& config);

  // The bytes `piece` prints. `starts_sequence`: it is the first token
  // decoded (Metaspace drops its leading space, a Strip after Fuse its
  // leading characters).
  std::string Decode(std::string_view piece, bool starts_sequence) const;

 private:
  enum class Kind { kByteLevel, kByteFallback, kReplace, kMetaspace, kStrip };
  struct Step {
    explicit Step(Kind step_kind) : kind(step_kind) {}
    Kind kind;
    std::string pattern;          // kReplace: what to replace; kMetaspace: the replacement character
    std::string content;          // kReplace: what to put in; kStrip: the character to strip
    bool whole_sequence = false;  // kStrip after Fuse; kMetaspace with a prefix space to drop
    int start = 0;                // kStrip: how many leading characters
    int stop = 0;                 // kStrip: how many trailing characters
  };
  Status AddSteps(const nlohmann::json& config);

  std::vector<Step> steps_;
  bool fused_ = false;
};

}  // namespace inferno::hf
