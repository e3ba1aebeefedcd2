// Normalizer: the "normalizer" of a tokenizer.json, applied to each stretch
// of text between added tokens before pre-tokenization. Supported types: NFC,
// NFD, NFKC, NFKD (through ICU), Prepend, Replace with a String pattern, and a
// Sequence of these; null is the identity.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace inferno::hf {

class Normalizer {
 public:
  // From the "normalizer" value. An unsupported type is an Unimplemented
  // error naming it. Throws nlohmann::json::exception when a field has the
  // wrong type (HfTokenizer::Load turns that into an error).
  static Result<Normalizer> FromJson(const nlohmann::json& config);

  // `text` (valid UTF-8) normalized.
  std::string Normalize(std::string_view text) const;

 private:
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kPrepend, kReplace };
  struct Step {
    Kind kind;
    std::string pattern;  // kReplace: what to replace
    std::string content;  // kPrepend, kReplace: what to put in
  };
  static Status AddSteps(const nlohmann::json& config, std::vector<Step>& steps);

  std::vector<Step> steps_;
};

}  // namespace inferno::hf
