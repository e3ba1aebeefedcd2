#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "runtime/sampling_options.h"
#include "text/chat_template/json_value.h"

namespace inferno {
namespace {

// Ordered, so that tools reach the chat template with their keys in the
// client's order, as transformers passes them.
using Json = nlohmann::ordered_json;

Error Invalid(const std::string& message) { return Error::InvalidArgument(message); }

// The deepest nesting of arrays and objects in `text`, counting brackets
// outside strings; JSON parsing and destruction recurse that deep.
int MaxDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Result<std::string> String(const Json& value, const std::string& name) {
  if (!value.is_string()) return Invalid("'" + name + "' must be a string");
  return value.get<std::string>();
}

Result<double> Number(const Json& value, const std::string& name, double low, double high, bool low_open) {
  if (!value.is_number()) return Invalid("'" + name + "' must be a number");
  const double x = value.get<double>();
  if (!std::isfinite(x) || x > high || x < low || (low_open && x == low)) {
    return Invalid("'" + name + "' must be " + (low_open ? "above " : "at least ") + std::to_string(low) +
                   " and at most " + std::to_string(high));
  }
  return x;
}

Result<int64_t> Integer(const Json& value, const std::string& name, int64_t low) {
  if (!value.is_number_integer()) return Invalid("'" + name + "' must be an integer");
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Invalid("'" + name + "' is too large");
  }
  const int64_t x = value.get<int64_t>();
  if (x < low) return Invalid("'" + name + "' must be at least " + std::to_string(low));
  return x;
}

Result<bool> Boolean(const Json& value, const std::string& name) {
  if (!value.is_boolean()) return Invalid("'" + name + "' must be a boolean");
  return value.get<bool>();
}

// A message's content: a string, or text parts joined.
Result<std::string> Content(const Json& value, const std::string& name) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return Invalid("'" + name + "' must be a string or an array of text parts");
  std::string text;
  for (const Json& part : value) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string() || part.size() != 2) {
      return Invalid("'" + name + "' parts must be {\"type\": \"text\", \"text\": string}");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// `value` as a template value, or an error naming `name`.
Result<chat::Value> TemplateValue(const Json& value, const std::string& name) {
  Result<chat::Value> converted = chat::ValueFromJson(value);
  if (!converted) return Invalid("'" + name + "': " + converted.error().message);
  return converted;
}

// Fails naming the first key of object `value` (named `name`) not in `known`.
Status KnownKeys(const Json& value, const std::string& name, std::initializer_list<std::string_view> known) {
  for (const auto& [key, field] : value.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Invalid("unrecognized field '" + name + "." + PrintableInMessage(key) + "'");
    }
  }
  return {};
}

// An assistant message's tool_calls as the template sees them: each
// {"id", "type": "function", "function": {"name", "arguments"}}, the
// arguments' JSON text parsed into a dict (transformers' templates print
// them with tojson).
Result<chat::Value> ToolCalls(const Json& value, const std::string& name) {
  if (!value.is_array()) return Invalid("'" + name + "' must be an array");
  chat::ValueList calls;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string call_name = name + "[" + std::to_string(i) + "]";
    const Json& call = value[i];
    if (!call.is_object()) return Invalid("'" + call_name + "' must be an object");
    if (Status known = KnownKeys(call, call_name, {"id", "type", "function"}); !known) return known.error();
    if (!call.contains("function") || !call["function"].is_object()) {
      return Invalid("'" + call_name + ".function' must be an object");
    }
    if (call.contains("type") && call["type"] != "function") {
      return Invalid("'" + call_name + ".type' must be \"function\"");
    }
    const Json& function = call["function"];
    if (Status known = KnownKeys(function, call_name + ".function", {"name", "arguments"}); !known) {
      return known.error();
    }
    Result<std::string> function_name = String(function.value("name", Json()), call_name + ".function.name");
    if (!function_name) return function_name.error();
    Result<std::string> arguments_text =
        String(function.value("arguments", Json()), call_name + ".function.arguments");
    if (!arguments_text) return arguments_text.error();
    const Json arguments = Json::parse(*arguments_text, nullptr, /*allow_exceptions=*/false);
    if (arguments.is_discarded() || !arguments.is_object() || MaxDepth(*arguments_text) > kMaxJsonDepth) {
      return Invalid("'" + call_name + ".function.arguments' must be a JSON object's text");
    }
    Result<chat::Value> arguments_value = TemplateValue(arguments, call_name + ".function.arguments");
    if (!arguments_value) return arguments_value.error();
    chat::ValueDict entry;
    if (call.contains("id")) {
      Result<std::string> id = String(call["id"], call_name + ".id");
      if (!id) return id.error();
      entry.emplace_back("id", chat::Value::String(*id));
    }
    entry.emplace_back("type", chat::Value::String("function"));
    entry.emplace_back("function", chat::Value::Dict({{"name", chat::Value::String(*function_name)},
                                                      {"arguments", std::move(*arguments_value)}}));
    calls.push_back(chat::Value::Dict(std::move(entry)));
  }
  return chat::Value::List(std::move(calls));
}

Result<std::vector<ChatMessage>> Messages(const Json& value) {
  if (!value.is_array() || value.empty()) return Invalid("'messages' must be a non-empty array");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string name = "messages[" + std::to_string(i) + "]";
    const Json& message = value[i];
    if (!message.is_object()) return Invalid("'" + name + "' must be an object");
    ChatMessage out;
    bool has_content = false, has_tool_calls = false;
    for (const auto& [key, field] : message.items()) {
      if (key == "role") {
        Result<std::string> role = String(field, name + ".role");
        if (!role) return role.error();
        out.role = *role;
      } else if (key == "content") {
        // An assistant's content may be null when it calls tools; the
        // template then sees "" (Qwen's looks for "</think>" in it).
        if (field.is_null()) continue;
        Result<std::string> content = Content(field, name + ".content");
        if (!content) return content.error();
        out.content = *content;
        has_content = true;
      } else if (key == "name" || key == "tool_call_id") {
        Result<std::string> text = String(field, name + "." + key);
        if (!text) return text.error();
        out.fields.emplace_back(key, chat::Value::String(*text));
      } else if (key == "tool_calls") {
        Result<chat::Value> calls = ToolCalls(field, name + ".tool_calls");
        if (!calls) return calls.error();
        has_tool_calls = !calls->as_list().empty();
        out.fields.emplace_back(key, std::move(*calls));
      } else {
        return Invalid("unrecognized field '" + name + "." + PrintableInMessage(key) + "'");
      }
    }
    if (out.role.empty()) return Invalid("'" + name + ".role' is required");
    if (has_tool_calls && out.role != "assistant") {
      return Invalid("'" + name + ".tool_calls' is allowed only in an assistant message");
    }
    if (!has_content && !(out.role == "assistant" && has_tool_calls)) {
      return Invalid("'" + name + ".content' is required");
    }
    if (out.role == "tool" && std::none_of(out.fields.begin(), out.fields.end(),
                                           [](const auto& f) { return f.first == "tool_call_id"; })) {
      return Invalid("'" + name + ".tool_call_id' is required in a tool message");
    }
    messages.push_back(std::move(out));
  }
  return messages;
}

// The request's tools as the template sees them (the list of
// {"type": "function", "function": {"name", "description", "parameters"}}),
// and their names.
Status Tools(const Json& value, OpenAiRequest& request) {
  if (!value.is_array()) return Invalid("'tools' must be an array");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string name = "tools[" + std::to_string(i) + "]";
    const Json& tool = value[i];
    if (!tool.is_object() || tool.value("type", Json()) != "function" || !tool.contains("function") ||
        !tool["function"].is_object()) {
      return Invalid("'" + name + "' must be {\"type\": \"function\", \"function\": {...}}");
    }
    if (Status known = KnownKeys(tool, name, {"type", "function"}); !known) return known.error();
    const Json& function = tool["function"];
    if (Status known =
            KnownKeys(function, name + ".function", {"name", "description", "parameters", "strict"});
        !known) {
      return known.error();
    }
    Result<std::string> function_name = String(function.value("name", Json()), name + ".function.name");
    if (!function_name) return function_name.error();
    if (function_name->empty() || function_name->size() > 64 ||
        function_name->find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos) {
      return Invalid("'" + name + ".function.name' must be 1 to 64 letters, digits, '_' or '-'");
    }
    if (function.contains("description") && !function["description"].is_string()) {
      return Invalid("'" + name + ".function.description' must be a string");
    }
    if (function.contains("parameters") && !function["parameters"].is_object()) {
      return Invalid("'" + name + ".function.parameters' must be an object (a JSON schema)");
    }
    if (function.contains("strict") && !function["strict"].is_boolean()) {
      return Invalid("'" + name + ".function.strict' must be a boolean");
    }
    request.tool_names.push_back(*function_name);
    request.tool_parameters.push_back(function.value("parameters", Json::object()));
  }
  Result<chat::Value> tools = TemplateValue(value, "tools");
  if (!tools) return tools.error();
  request.tools = std::move(*tools);
  return {};
}

Status ResponseFormat(const Json& value, OpenAiRequest& request) {
  const std::string kinds =
      "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
      "{\"type\": \"json_schema\", \"json_schema\": {...}}";
  if (!value.is_object() || !value.contains("type") || !value["type"].is_string()) return Invalid(kinds);
  const std::string type = value["type"].get<std::string>();
  if (type == "text" || type == "json_object") {
    if (value.size() != 1) return Invalid(kinds);
    if (type == "json_object") request.response_schema = JsonSchema::AnyObject();
    return {};
  }
  if (type != "json_schema" || value.size() != 2 || !value.contains("json_schema") ||
      !value["json_schema"].is_object()) {
    return Invalid(kinds);
  }
  const Json& spec = value["json_schema"];
  if (Status known =
          KnownKeys(spec, "response_format.json_schema", {"name", "schema", "strict", "description"});
      !known) {
    return known.error();
  }
  if (!spec.contains("name") || !spec["name"].is_string()) {
    return Invalid("'response_format.json_schema.name' must be a string");
  }
  if (spec.contains("strict") && !spec["strict"].is_boolean()) {
    return Invalid("'response_format.json_schema.strict' must be a boolean");
  }
  Result<JsonSchema> schema =
      JsonSchema::Compile(spec.value("schema", Json::object()), "response_format.json_schema.schema");
  if (!schema) return Invalid(schema.error().message);
  request.response_schema = std::move(*schema);
  return {};
}

Status ToolChoiceOf(const Json& value, OpenAiRequest& request) {
  if (value.is_string()) {
    const std::string choice = value.get<std::string>();
    if (choice == "none") {
      request.tool_choice = ToolChoice::kNone;
    } else if (choice == "auto") {
      request.tool_choice = ToolChoice::kAuto;
    } else if (choice == "required") {
      request.tool_choice = ToolChoice::kRequired;
    } else {
      return Invalid("'tool_choice' must be \"none\", \"auto\", \"required\" or a function");
    }
    return {};
  }
  if (!value.is_object() || value.value("type", Json()) != "function" || !value.contains("function") ||
      !value["function"].is_object() || !value["function"].contains("name") ||
      !value["function"]["name"].is_string() || value.size() != 2 || value["function"].size() != 1) {
    return Invalid(
        "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
        "\"function\": {\"name\": string}}");
  }
  request.tool_choice = ToolChoice::kFunction;
  request.tool_choice_name = value["function"]["name"].get<std::string>();
  return {};
}

Result<std::vector<std::string>> Stop(const Json& value) {
  std::vector<std::string> stop;
  if (value.is_null()) return stop;
  if (value.is_string()) {
    stop.push_back(value.get<std::string>());
  } else if (value.is_array() && value.size() <= 4) {
    for (const Json& item : value) {
      if (!item.is_string()) return Invalid("'stop' must be a string or an array of at most 4 strings");
      stop.push_back(item.get<std::string>());
    }
  } else {
    return Invalid("'stop' must be a string or an array of at most 4 strings");
  }
  for (const std::string& s : stop) {
    if (s.empty()) return Invalid("'stop' strings must not be empty");
  }
  return stop;
}

// Fails unless `value` is null or `expected`: a field this server supports
// only at its default.
Status DefaultOnly(const Json& value, const std::string& name, const Json& expected) {
  if (value.is_null() || value == expected) return {};
  return Error::Unimplemented("'" + name + "' is supported only as " + expected.dump());
}

}  // namespace

Result<OpenAiRequest> ParseOpenAiRequest(std::string_view body, Endpoint endpoint) {
  if (MaxDepth(body) > kMaxJsonDepth) {
    return Invalid("the body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Invalid("the body is not valid JSON");
  if (!json.is_object()) return Invalid("the body must be a JSON object");
  OpenAiRequest request;
  request.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChatCompletions;
  bool has_tool_choice = false;
  bool wants_logprobs = false;          // chat's logprobs
  std::optional<int32_t> top_logprobs;  // chat's top_logprobs
  for (const auto& [key, value] : json.items()) {
    Status status;
    if (key == "model") {
      Result<std::string> model = String(value, key);
      if (!model) return model.error();
      request.model = *model;
    } else if (key == "prompt" && !chat) {
      const Json* text = &value;
      if (value.is_array() && value.size() == 1) text = &value[0];
      if (!text->is_string()) return Invalid("'prompt' must be a string (or an array of one string)");
      request.prompt = text->get<std::string>();
    } else if (key == "messages" && chat) {
      Result<std::vector<ChatMessage>> messages = Messages(value);
      if (!messages) return messages.error();
      request.messages = std::move(*messages);
    } else if (key == "max_tokens" || (key == "max_completion_tokens" && chat)) {
      if (value.is_null()) continue;
      Result<int64_t> max_tokens = Integer(value, key, 1);
      if (!max_tokens) return max_tokens.error();
      request.max_tokens = *max_tokens;
    } else if (key == "temperature") {
      if (value.is_null()) continue;
      Result<double> temperature = Number(value, key, 0.0, 2.0, false);
      if (!temperature) return temperature.error();
      request.temperature =
          *temperature == 0.0 ? 0.0f : std::max(kMinTemperature, static_cast<float>(*temperature));
    } else if (key == "top_p") {
      if (value.is_null()) continue;
      Result<double> top_p = Number(value, key, 0.0, 1.0, true);
      if (!top_p) return top_p.error();
      request.top_p = static_cast<float>(*top_p);
    } else if (key == "seed") {
      if (value.is_null()) continue;
      Result<int64_t> seed = Integer(value, key, std::numeric_limits<int64_t>::min());
      if (!seed) return seed.error();
      request.seed = *seed;
    } else if (key == "stop") {
      Result<std::vector<std::string>> stop = Stop(value);
      if (!stop) return stop.error();
      request.stop = std::move(*stop);
    } else if (key == "stream") {
      if (value.is_null()) continue;
      Result<bool> stream = Boolean(value, key);
      if (!stream) return stream.error();
      request.stream = *stream;
    } else if (key == "stream_options") {
      if (value.is_null()) continue;
      if (!value.is_object()) return Invalid("'stream_options' must be an object");
      for (const auto& [option, setting] : value.items()) {
        if (option != "include_usage")
          return Invalid("unrecognized field 'stream_options." + PrintableInMessage(option) + "'");
        Result<bool> include = Boolean(setting, "stream_options.include_usage");
        if (!include) return include.error();
        request.include_usage = *include;
      }
    } else if (key == "user") {
      if (!value.is_string() && !value.is_null()) return Invalid("'user' must be a string");
    } else if (key == "n" || key == "best_of") {
      status = DefaultOnly(value, key, 1);
    } else if (key == "presence_penalty" || key == "frequency_penalty") {
      if (value.is_null()) continue;
      Result<double> penalty =
          Number(value, key, -kMaxPresenceFrequencyPenalty, kMaxPresenceFrequencyPenalty, false);
      if (!penalty) return penalty.error();
      (key == "presence_penalty" ? request.presence_penalty : request.frequency_penalty) =
          static_cast<float>(*penalty);
    } else if (key == "repetition_penalty") {
      if (value.is_null()) continue;
      Result<double> penalty = Number(value, key, 0.0, kMaxRepetitionPenalty, true);
      if (!penalty) return penalty.error();
      request.repetition_penalty = static_cast<float>(*penalty);
    } else if (key == "logprobs" && chat) {
      if (value.is_null()) continue;
      Result<bool> logprobs = Boolean(value, key);
      if (!logprobs) return logprobs.error();
      wants_logprobs = *logprobs;
    } else if (key == "top_logprobs" && chat) {
      if (value.is_null()) continue;
      Result<int64_t> top = Integer(value, key, 0);
      if (!top) return top.error();
      if (*top > kMaxTopLogprobs) {
        return Invalid("'top_logprobs' must be at most " + std::to_string(kMaxTopLogprobs));
      }
      top_logprobs = static_cast<int32_t>(*top);
    } else if (key == "logprobs") {
      if (value.is_null()) continue;
      Result<int64_t> logprobs = Integer(value, key, 0);
      if (!logprobs) return logprobs.error();
      if (*logprobs > kMaxCompletionLogprobs) {
        return Invalid("'logprobs' must be at most " + std::to_string(kMaxCompletionLogprobs));
      }
      request.logprobs = static_cast<int32_t>(*logprobs);
    } else if (key == "tools" && chat) {
      if (value.is_null()) continue;
      status = Tools(value, request);
    } else if (key == "tool_choice" && chat) {
      if (value.is_null()) continue;
      status = ToolChoiceOf(value, request);
      has_tool_choice = true;
    } else if (key == "response_format" && chat) {
      if (value.is_null()) continue;
      status = ResponseFormat(value, request);
    } else if (key == "parallel_tool_calls" && chat) {
      if (value.is_null()) continue;
      Result<bool> parallel = Boolean(value, key);
      if (!parallel) return parallel.error();
      request.parallel_tool_calls = *parallel;
    } else if (key == "echo") {
      status = DefaultOnly(value, key, false);
    } else {
      return Invalid("unrecognized field '" + PrintableInMessage(key) + "'");
    }
    if (!status) return status.error();
  }
  if (!json.contains("model")) return Invalid("'model' is required");
  if (chat && !json.contains("messages")) return Invalid("'messages' is required");
  if (!chat && !json.contains("prompt")) return Invalid("'prompt' is required");
  if (has_tool_choice && !request.tools && request.tool_choice != ToolChoice::kNone) {
    return Invalid("'tool_choice' needs 'tools'");
  }
  if (request.tool_choice == ToolChoice::kFunction &&
      std::find(request.tool_names.begin(), request.tool_names.end(), request.tool_choice_name) ==
          request.tool_names.end()) {
    return Invalid("'tool_choice' names the function '" + PrintableInMessage(request.tool_choice_name) +
                   "', which 'tools' does not hold");
  }
  if (top_logprobs && !wants_logprobs) return Invalid("'top_logprobs' needs 'logprobs': true");
  if (wants_logprobs) request.logprobs = top_logprobs.value_or(0);
  if (request.stream == false && request.include_usage) {
    return Invalid("'stream_options' is only allowed with 'stream': true");
  }
  return request;
}

}  // namespace inferno
