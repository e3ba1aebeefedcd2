// PreTokenizer: the "pre_tokenizer" of a tokenizer.json — cuts normalized
// text into the words the BPE model encodes one by one. Supported types:
// Split (a Regex or String pattern run through PCRE2, behaviors Isolated,
// Removed, MergedWithPrevious and MergedWithNext, not inverted), ByteLevel
// (add_prefix_space, use_regex with GPT-2's pattern), Metaspace (replacement,
// prepend_scheme or add_prefix_space, split) and Sequence; null keeps the
// text as one word.
//
// ByteLevel's byte-to-character mapping is not applied here: a byte-level
// tokenizer's model works on raw bytes (see BpeModel), so words stay bytes.
//
// Thread-safety: immutable after construction.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/hf_tokenizer/regex.h"

namespace inferno::hf {

class PreTokenizer {
 public:
  // From the "pre_tokenizer" value. An unsupported type or option is an
  // Unimplemented error naming it; a bad regex is InvalidArgument. Throws
  // nlohmann::json::exception when a field has the wrong type
  // (HfTokenizer::Load turns that into an error).
  static Result<PreTokenizer> FromJson(const nlohmann::json& config);

  // Appends the words of `text` (valid UTF-8) to `words`. `starts_input`:
  // the text begins the encoded input (Metaspace's prepend_scheme "first").
  void Split(std::string_view text, bool starts_input, std::vector<std::string>& words) const;

  // Whether the pipeline holds a ByteLevel step (the model is byte-level).
  bool byte_level() const { return byte_level_; }

 private:
  enum class Kind { kSplit, kByteLevelPrefixSpace, kMetaspace };
  enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext };
  enum class Prepend { kAlways, kFirst, kNever };
  struct Step {
    explicit Step(Kind step_kind) : kind(step_kind) {}
    Kind kind;
    std::optional<Regex> regex;  // kSplit
    Behavior behavior = Behavior::kIsolated;
    std::string replacement;  // kMetaspace
    Prepend prepend = Prepend::kAlways;
    bool split_on_replacement = false;  // kMetaspace
  };
  Status AddSteps(const nlohmann::json& config);
  // Applies `step` to every piece of `pieces`.
  static std::vector<std::string> Apply(const Step& step, std::vector<std::string> pieces, bool starts_input);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace inferno::hf
