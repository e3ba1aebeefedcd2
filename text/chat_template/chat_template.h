// ChatTemplate: a Hugging Face chat template (the Jinja `chat_template` of
// tokenizer_config.json), parsed once and rendered for conversations — the
// text a chat model expects as its prompt.
//
//   Result<TokenizerChatConfig> config = ReadTokenizerChatConfig(dir + "/tokenizer_config.json");
//   if (!config) return config.error();
//   if (!config->chat_template) ...  // e.g. Mistral 7B v0.1 base: none; ask for --chat-template FILE
//   Result<ChatTemplate> chat = ChatTemplate::Parse(*config->chat_template);
//   if (!chat) return chat.error();  // "chat template: line 3, column 9: unknown or unsupported filter 'x'"
//   ChatRequest request;
//   request.messages = {{"system", "Be brief."}, {"user", "Hi"}};
//   request.bos_token = config->bos_token;
//   request.eos_token = config->eos_token;
//   Result<std::string> prompt = chat->Render(request);
//
// Rendering follows transformers' apply_chat_template (Jinja with
// trim_blocks and lstrip_blocks): the template sees `messages` (a list of
// {"role", "content"} dicts), `add_generation_prompt`, `bos_token` and
// `eos_token` (undefined when absent), `tools` and `documents` (none unless
// the request's extra variables give them, as transformers passes a
// request's tools: the list of {"type": "function", "function": {...}}), the
// global functions raise_exception, namespace, range and strftime_now (local
// time, so Llama 3.2's template prints today's date unless the request gives
// `date_string`), and any extra variables of the request. The output is
// text; tokenize it without adding special tokens again (the template adds
// its own BOS when it wants one).
//
// Checked against an independent implementation (golden_test) on the
// templates of Llama 2, Llama 3 (base), Llama 3.1/3.2 Instruct (with
// tools), Qwen 3 (with tools, enable_thinking), ChatML, Mistral Instruct
// v0.1/v0.2 and Zephyr/TinyLlama.
//
// The supported Jinja subset is listed in parser.h and builtins.h. Parse
// refuses anything outside it with a one-line error naming the construct and
// its line and column (Unimplemented; InvalidArgument for a malformed
// template), so a template never renders silently wrong. Render fails with
// InvalidArgument when the template calls raise_exception() (e.g. roles that
// do not alternate: "chat template: line 11, column 13: raise_exception:
// After the optional system message, conversation roles must alternate ...")
// or hits a type error. Every message of Parse and Render starts with
// "chat template: ".
//
// Thread-safety: a ChatTemplate is immutable; Render may be called from
// several threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "text/chat_template/ast.h"
#include "text/chat_template/value.h"

namespace inferno {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", ...
  std::string content;
  // Further keys of the message's dict, after role and content (an
  // assistant's "tool_calls", a tool answer's "tool_call_id", "name"); a
  // key named role or content replaces that one.
  chat::ValueDict fields = {};
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  // Whether to end with the header that opens the assistant's reply.
  bool add_generation_prompt = true;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // Further variables the template may read (e.g. "enable_thinking" for
  // Qwen 3, "tools"); these replace the defaults above of the same name.
  chat::ValueDict extra_variables;
};

class ChatTemplate {
 public:
  // Parses `source`; errors as described above.
  static Result<ChatTemplate> Parse(std::string_view source);

  Result<std::string> Render(const ChatRequest& request) const;

  // The template's text (what a server looks into for its family's
  // tool-call markers).
  const std::string& source() const { return *source_; }

 private:
  ChatTemplate(std::shared_ptr<const chat::NodeList> nodes, std::shared_ptr<const std::string> source)
      : nodes_(std::move(nodes)), source_(std::move(source)) {}

  std::shared_ptr<const chat::NodeList> nodes_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace inferno
