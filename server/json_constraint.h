// JsonConstraint: the TokenConstraint (runtime/sampler.h) that keeps a
// chat answer a JSON document of a schema (server/json_schema.h) — for
// response_format json_object / json_schema, and for tool_choice "required"
// or a named function, between the literal text a model's tool-call format
// puts around it (`prefix`, `suffix`). At each step it leaves the tokens
// whose text keeps the answer a prefix of such a text; once the text is
// complete, only the stop tokens. A token that prints nothing is never
// left, so every step moves the text on.
//
// Thread-safety: one sequence's, used from the generator thread; the token
// texts are shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "server/json_schema.h"
#include "text/tokenizer.h"

namespace inferno {

// Each token's text as the tokenizer prints it in running text (after an
// ordinary token), for ids [0, vocab); ids the tokenizer lacks print "".
std::vector<std::string> TokenTexts(const Tokenizer& tokenizer, int64_t vocab);

class JsonConstraint : public TokenConstraint {
 public:
  // `texts`: TokenTexts of the model's tokenizer; `stop_ids`: the tokens
  // that end a sequence. `schema` is kept.
  JsonConstraint(std::shared_ptr<const std::vector<std::string>> texts, std::vector<int32_t> stop_ids,
                 JsonSchema schema, std::string prefix = "", std::string suffix = "");

  void Mask(std::span<float> logits) override;
  void Accept(int32_t token) override;

  // Whether the text so far is complete: prefix, a valid document, suffix.
  bool Complete() const;

 private:
  // Where the text stands: in the prefix, the document or the suffix.
  struct State {
    size_t literal = 0;  // characters of prefix (then of suffix) matched
    bool in_suffix = false;
    JsonSchemaMatcher document;
  };
  // Appends `text` to `state`; false if the result cannot grow into a valid text.
  bool Feed(State& state, std::string_view text) const;
  bool Complete(const State& state) const;

  std::shared_ptr<const std::vector<std::string>> texts_;
  std::vector<int32_t> stop_ids_;
  JsonSchema schema_;
  std::string prefix_, suffix_;
  State state_;
};

}  // namespace inferno
