// Tool calls in a chat model's output: which format a model family writes
// them in, and the parser that splits a streamed completion into the text
// to send as content and the calls (server/openai_server.h answers them as
// OpenAI's `tool_calls`).
//
// Formats, told apart by the chat template's source (DetectToolCallFormat):
// - kHermes (Qwen2.5, Qwen3, Hermes): each call is
//   `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` anywhere in
//   the text; the text around the calls is content.
// - kLlama3Json (Llama 3.1+, the template's JSON tool calling): the whole
//   answer is `{"name": ..., "parameters": {...}}` (or "arguments"), or
//   several separated by ';' — after <|python_tag|> when the tokenizer
//   prints it; an answer that starts otherwise is content.
// - kMistral: the whole answer is `[TOOL_CALLS]` (a special token, which the
//   tokenizer may not print) and a JSON array of {"name", "arguments"}.
// Text that looks like a call but does not parse as one (bad JSON, no
// name, arguments not an object) is content, as it came.
//
// Streaming: content is released as soon as it cannot be part of a call —
// kHermes holds back only a tail that could begin "<tool_call>", and a call
// until its "</tool_call>"; kLlama3Json and kMistral hold the whole answer
// when its first non-space character could begin a call, else release
// everything.
//
// Thread-safety: DetectToolCallFormat is pure; a parser is one request's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inferno {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

// The format of the template's model family, from markers in its source:
// "<tool_call>" kHermes, "[TOOL_CALLS]" kMistral, "<|python_tag|>" or a
// `"parameters": ` in the instructions (Llama 3.1, 3.2) kLlama3Json;
// kNone when it has none or never reads `tools`.
ToolCallFormat DetectToolCallFormat(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text

  bool operator==(const ToolCall&) const = default;
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format) : format_(format) {}

  struct Output {
    std::string content;          // text to send now
    std::vector<ToolCall> calls;  // calls completed now, in order
  };

  // Takes the next piece of the answer's text.
  Output Add(std::string_view text);
  // The answer has ended: what was held back, as calls or content.
  Output Finish();

 private:
  // kHermes: moves what can be decided from pending_ to `out`.
  void ScanHermes(Output& out, bool final);

  const ToolCallFormat format_;
  std::string pending_;      // held back
  bool after_call_ = false;  // kHermes: space after a call is dropped
  // kLlama3Json, kMistral: whether the answer's start decided between calls
  // (hold everything) and content (release everything).
  enum class Start { kUndecided, kCalls, kContent } start_ = Start::kUndecided;
};

}  // namespace inferno
