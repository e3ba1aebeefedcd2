// OpenAiRequest: the body of a POST /v1/completions or /v1/chat/completions
// request (the OpenAI API's request shapes), parsed and checked.
//
// Accepted fields: model (string, required); prompt (completions: a string or
// an array of one string); messages (chat: an array of {role, content, name,
// tool_call_id, tool_calls}, where content is a string or an array of
// {"type": "text", "text"} parts, and may be null in an assistant message
// with tool_calls; a tool message needs tool_call_id; tool_calls are
// [{id, type: "function", function: {name, arguments}}] with arguments a
// JSON object's text); tools (chat: [{type: "function", function: {name,
// description, parameters, strict}}]), tool_choice (chat: "none", "auto",
// "required" or {type: "function", function: {name}} naming one of the
// tools; needs tools), parallel_tool_calls (chat: boolean); response_format
// (chat: {type: "text"}, {type: "json_object"} or {type: "json_schema",
// json_schema: {name, schema, strict, description}}, the schema compiled by
// server/json_schema.h, whose unsupported keywords are refused by name);
// max_tokens (and max_completion_tokens for chat; an integer >= 1);
// temperature [0, 2] (default 1; values below kMinTemperature but above 0
// sample at kMinTemperature); top_p (0, 1] (default 1); seed (an integer);
// stop (a string or an array of at most 4 non-empty strings); stream
// (boolean); stream_options {include_usage: boolean}; user (string, ignored);
// n, best_of (1 only); presence_penalty, frequency_penalty [-2, 2] (OpenAI's,
// over the generated tokens); repetition_penalty (0, 10] (Hugging Face's,
// over the prompt and generated tokens); logprobs (completions: an integer
// 0 to 5, the alternatives per token; chat: a boolean) and top_logprobs
// (chat: an integer 0 to 20; needs logprobs true); echo (false only). Any
// other field, or one of the wrong type or out of range, is an error naming
// it: the server never ignores what would change the answer.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "server/json_schema.h"
#include "text/chat_template/chat_template.h"

namespace inferno {

enum class Endpoint { kCompletions, kChatCompletions };

// Whether and which tool the model must call (OpenAI's tool_choice).
enum class ToolChoice {
  kAuto,      // it may answer or call tools
  kNone,      // it answers: the template gets no tools, the output is not parsed for calls
  kRequired,  // it must call one or more tools
  kFunction,  // it must call tool_choice_name
};

// The most nested arrays and objects a body may hold.
inline constexpr int kMaxJsonDepth = 32;

// The most alternatives per token /v1/completions' logprobs may ask for.
inline constexpr int32_t kMaxCompletionLogprobs = 5;

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::string prompt;                 // completions
  std::vector<ChatMessage> messages;  // chat
  std::optional<int64_t> max_tokens;
  float temperature = 1.0f;
  float top_p = 1.0f;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  // -1: no logprobs; otherwise the sampled tokens' logprobs with this many
  // alternatives (SamplingOptions::logprobs).
  int32_t logprobs = -1;
  // Chat: the request's tools as the chat template sees them (a list), and
  // their names in order; none without tools.
  std::optional<chat::Value> tools;
  std::vector<std::string> tool_names;
  std::vector<nlohmann::ordered_json> tool_parameters;  // each tool's (an empty object when absent)
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;  // kFunction
  bool parallel_tool_calls = true;
  // Chat's response_format json_object or json_schema: the schema the
  // answer must match (server/json_schema.h).
  std::optional<JsonSchema> response_schema;
};

// Parses `body` for `endpoint`. Errors (InvalidArgument, one line): "the
// body is not valid JSON", "the body nests deeper than 32 levels", "'x' must
// be ...", "unrecognized field 'x'", "'model' is required".
Result<OpenAiRequest> ParseOpenAiRequest(std::string_view body, Endpoint endpoint);

}  // namespace inferno
