#include "text/chat_template/chat_template.h"

#include <utility>

#include "text/chat_template/parser.h"
#include "text/chat_template/renderer.h"

namespace inferno {

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  Result<chat::NodeList> nodes = chat::ParseTemplate(source);
  if (!nodes) return nodes.error().Prefixed("chat template: ");
  return ChatTemplate(std::make_shared<const chat::NodeList>(std::move(*nodes)),
                      std::make_shared<const std::string>(source));
}

Result<std::string> ChatTemplate::Render(const ChatRequest& request) const {
  using chat::Value;
  chat::ValueList messages;
  for (const ChatMessage& message : request.messages) {
    chat::ValueDict entries = {{"role", Value::String(message.role)},
                               {"content", Value::String(message.content)}};
    entries.insert(entries.end(), message.fields.begin(), message.fields.end());
    messages.push_back(Value::Dict(std::move(entries)));
  }
  chat::ValueDict variables = {
      {"messages", Value::List(std::move(messages))},
      {"add_generation_prompt", Value::Bool(request.add_generation_prompt)},
      {"tools", Value::None()},
      {"documents", Value::None()},
  };
  if (request.bos_token) variables.emplace_back("bos_token", Value::String(*request.bos_token));
  if (request.eos_token) variables.emplace_back("eos_token", Value::String(*request.eos_token));
  for (const auto& extra : request.extra_variables) {
    std::erase_if(variables, [&](const auto& entry) { return entry.first == extra.first; });
    variables.push_back(extra);
  }
  Result<std::string> text = chat::RenderTemplate(*nodes_, variables);
  if (!text) return text.error().Prefixed("chat template: ");
  return text;
}

}  // namespace inferno
