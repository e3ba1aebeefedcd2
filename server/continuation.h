// The continuation protocol between `serve_front` (server/failover_front.h)
// and a `serve --failover` leader: how a front end learns which tokens a
// streamed answer has sent, and how it asks a new leader to continue that
// answer after the old leader was lost.
//
// - A streamed request whose body has the field "inferno_continue" gets,
//   before each chunk of tokens, an SSE comment block naming those tokens'
//   ids: ": inferno-tokens 17,2045,9\n\n" (clients ignore comments).
// - "inferno_continue": {"tokens": [ids], "id": "cmpl-3", "created": 1733...}
//   asks the leader to continue the answer: its prompt is the request's
//   prompt followed by `tokens`, its max_tokens is less their count, its text
//   starts after theirs (stop strings and UTF-8 held back as if it had sent
//   them), and its chunks carry `id` and `created` (when given) so that the
//   client sees one answer. "tokens": [] is a request not continued yet.
//
// Only a leader started with --failover accepts the field (any other gets
// the usual 400 "unrecognized field").
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace inferno {

// The body field that carries a continuation.
inline constexpr char kContinueField[] = "inferno_continue";

struct Continuation {
  std::vector<int32_t> tokens;     // sent already, in order
  std::optional<std::string> id;   // the answer's id as the client saw it
  std::optional<int64_t> created;  // and its `created`
};

// Removes "inferno_continue" from the JSON object `body` (rewritten without
// it) and returns it; nullopt (body unchanged) when absent or when `body` is
// not a JSON object (the request parser then names the problem). Errors:
// InvalidArgument naming the malformed part ("'inferno_continue.tokens' must
// be an array of token ids").
Result<std::optional<Continuation>> TakeContinuation(std::string& body);

// `body` (a JSON object) with "inferno_continue" set to `continuation`.
// Errors: InvalidArgument when `body` is not a JSON object.
Result<std::string> WithContinuation(std::string_view body, const Continuation& continuation);

// The SSE comment block naming `tokens`: ": inferno-tokens 1,2,3\n\n".
std::string TokenComment(std::span<const int32_t> tokens);

// The ids of a block TokenComment wrote (without its blank line or with
// it); nullopt for any other block.
std::optional<std::vector<int32_t>> ParseTokenComment(std::string_view block);

}  // namespace inferno
