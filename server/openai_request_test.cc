#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::string ErrorOf(const std::string& body, Endpoint endpoint = Endpoint::kCompletions) {
  Result<OpenAiRequest> parsed = ParseOpenAiRequest(body, endpoint);
  return parsed ? "no error" : parsed.error().message;
}

TEST(ParseOpenAiRequest, ReadsEveryCompletionField) {
  Result<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"model": "m", "prompt": "Once", "max_tokens": 20, "temperature": 0.5, "top_p": 0.9,
          "seed": -3, "stop": ["\n", "END"], "stream": true, "stream_options": {"include_usage": true},
          "user": "u", "n": 1, "presence_penalty": -0.5, "frequency_penalty": 1.5,
          "repetition_penalty": 1.1, "logprobs": 3})",
      Endpoint::kCompletions);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->prompt, "Once");
  EXPECT_EQ(r->max_tokens, 20);
  EXPECT_FLOAT_EQ(r->temperature, 0.5f);
  EXPECT_FLOAT_EQ(r->top_p, 0.9f);
  EXPECT_EQ(r->seed, -3);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_FLOAT_EQ(r->presence_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r->frequency_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r->repetition_penalty, 1.1f);
  EXPECT_EQ(r->logprobs, 3);
}

TEST(ParseOpenAiRequest, ChatLogprobsIsABooleanWithTopLogprobs) {
  const auto logprobs = [](const std::string& fields) {
    Result<OpenAiRequest> r =
        ParseOpenAiRequest(R"({"model": "m", "messages": [{"role": "user", "content": "x"}])" + fields + "}",
                           Endpoint::kChatCompletions);
    return r ? std::to_string(r->logprobs) : r.error().message;
  };
  EXPECT_EQ(logprobs(""), "-1");
  EXPECT_EQ(logprobs(R"(, "logprobs": false)"), "-1");
  EXPECT_EQ(logprobs(R"(, "logprobs": true)"), "0");
  EXPECT_EQ(logprobs(R"(, "logprobs": true, "top_logprobs": 20)"), "20");
  EXPECT_EQ(logprobs(R"(, "logprobs": true, "top_logprobs": 21)"), "'top_logprobs' must be at most 20");
  EXPECT_EQ(logprobs(R"(, "top_logprobs": 2)"), "'top_logprobs' needs 'logprobs': true");
  EXPECT_EQ(logprobs(R"(, "logprobs": 2)"), "'logprobs' must be a boolean");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "logprobs": 6})"), "'logprobs' must be at most 5");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "logprobs": true})"), "'logprobs' must be an integer");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "top_logprobs": 1})"),
            "unrecognized field 'top_logprobs'");
}

std::string ChatError(const std::string& fields) {
  return ErrorOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}])" + fields + "}",
                 Endpoint::kChatCompletions);
}

TEST(ParseOpenAiRequest, ToolsReachTheTemplateInTheClientsKeyOrder) {
  Result<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"model": "m", "messages": [
          {"role": "user", "content": "Weather?"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
          "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
                    {"type": "object", "properties": {"city": {"type": "string"}}}}}],
          "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
          "parallel_tool_calls": false})",
      Endpoint::kChatCompletions);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->tools.has_value());
  const chat::Value function = r->tools->as_list()[0].Get("function");
  EXPECT_EQ(function.as_dict()[0].first, "name");
  EXPECT_EQ(function.as_dict()[1].first, "parameters");
  EXPECT_EQ(r->tool_names, std::vector<std::string>{"get_weather"});
  EXPECT_EQ(r->tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(r->tool_choice_name, "get_weather");
  EXPECT_FALSE(r->parallel_tool_calls);
  const ChatMessage& call = r->messages[1];
  EXPECT_EQ(call.content, "");
  ASSERT_EQ(call.fields.size(), 1u);
  const chat::Value arguments = call.fields[0].second.as_list()[0].Get("function").Get("arguments");
  EXPECT_EQ(arguments.as_dict()[0].first, "city");
  EXPECT_EQ(arguments.Get("days").as_int(), 2);
  EXPECT_EQ(r->messages[2].fields[0].first, "tool_call_id");
}

TEST(ParseOpenAiRequest, MalformedToolsAndToolCallsAreNamed) {
  EXPECT_EQ(ChatError(R"(, "tools": [{"type": "function", "function": {"name": "a b"}}])"),
            "'tools[0].function.name' must be 1 to 64 letters, digits, '_' or '-'");
  EXPECT_EQ(ChatError(R"(, "tools": [{"type": "retrieval"}])"),
            "'tools[0]' must be {\"type\": \"function\", \"function\": {...}}");
  EXPECT_EQ(ChatError(R"(, "tools": [{"type": "function", "function": {"name": "f", "extra": 1}}])"),
            "unrecognized field 'tools[0].function.extra'");
  EXPECT_EQ(ChatError(R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters":
                        {"type": "number", "minimum": 0.5}}}])"),
            "'tools': a number 0.5 at /0/function/parameters/minimum, which chat templates here cannot hold "
            "(integers only)");
  EXPECT_EQ(ChatError(R"(, "tool_choice": "auto")"), "'tool_choice' needs 'tools'");
  EXPECT_EQ(
      ChatError(R"(, "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "any")"),
      "'tool_choice' must be \"none\", \"auto\", \"required\" or a function");
  EXPECT_EQ(ChatError(R"(, "tools": [{"type": "function", "function": {"name": "f"}}],
                        "tool_choice": {"type": "function", "function": {"name": "g"}})"),
            "'tool_choice' names the function 'g', which 'tools' does not hold");
  const auto message_error = [](const std::string& message) {
    return ErrorOf(R"({"model": "m", "messages": [)" + message + "]}", Endpoint::kChatCompletions);
  };
  EXPECT_EQ(message_error(R"({"role": "tool", "content": "x"})"),
            "'messages[0].tool_call_id' is required in a tool message");
  EXPECT_EQ(message_error(R"({"role": "assistant", "content": null})"), "'messages[0].content' is required");
  EXPECT_EQ(message_error(R"({"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f",
                            "arguments": "{}"}}]})"),
            "'messages[0].tool_calls' is allowed only in an assistant message");
  EXPECT_EQ(message_error(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f",
                            "arguments": "not json"}}]})"),
            "'messages[0].tool_calls[0].function.arguments' must be a JSON object's text");
}

TEST(ParseOpenAiRequest, ResponseFormatCompilesItsSchemaAndNamesWhatItRefuses) {
  Result<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "n", "strict": true, "schema": {"type": "object", "properties":
          {"a": {"type": "integer"}}, "required": ["a"]}}}})",
      Endpoint::kChatCompletions);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->response_schema.has_value());
  JsonSchemaMatcher matcher(*r->response_schema);
  EXPECT_TRUE(matcher.Feed(R"({"a": 1})"));
  EXPECT_TRUE(matcher.Complete());
  EXPECT_EQ(ChatError(R"(, "response_format": {"type": "text"})"), "no error");
  EXPECT_EQ(ChatError(R"(, "response_format": {"type": "yaml"})"),
            "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": "
            "\"json_schema\", \"json_schema\": {...}}");
  EXPECT_EQ(ChatError(R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}})"),
            "'response_format.json_schema.name' must be a string");
  EXPECT_EQ(ChatError(R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "n",
                        "schema": {"type": "string", "pattern": "a+"}}})"),
            "'response_format.json_schema.schema': unsupported keyword 'pattern'");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "response_format": {"type": "text"}})"),
            "unrecognized field 'response_format'");
}

TEST(ParseOpenAiRequest, PenaltiesOutOfRangeAreNamed) {
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "presence_penalty": 2.5})"),
            "'presence_penalty' must be at least -2.000000 and at most 2.000000");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "frequency_penalty": -3})"),
            "'frequency_penalty' must be at least -2.000000 and at most 2.000000");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "repetition_penalty": 0})"),
            "'repetition_penalty' must be above 0.000000 and at most 10.000000");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "repetition_penalty": "1"})"),
            "'repetition_penalty' must be a number");
}

TEST(ParseOpenAiRequest, ReadsChatMessagesWithStringOrTextPartContent) {
  Result<OpenAiRequest> r = ParseOpenAiRequest(
      R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
          "max_completion_tokens": 5})",
      Endpoint::kChatCompletions);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[1].role, "user");
  EXPECT_EQ(r->messages[1].content, "Hi there");
  EXPECT_EQ(r->max_tokens, 5);
  EXPECT_FLOAT_EQ(r->temperature, 1.0f) << "OpenAI's default";
}

TEST(ParseOpenAiRequest, MalformedOrNonObjectBodyIsRefused) {
  EXPECT_EQ(ErrorOf("{\"model\": "), "the body is not valid JSON");
  EXPECT_EQ(ErrorOf(""), "the body is not valid JSON");
  EXPECT_EQ(ErrorOf("[1]"), "the body must be a JSON object");
  EXPECT_EQ(ErrorOf(std::string(100, '[') + std::string(100, ']')), "the body nests deeper than 32 levels");
}

TEST(ParseOpenAiRequest, FieldsOfTheWrongTypeOrRangeAreNamed) {
  EXPECT_EQ(ErrorOf(R"({"model": 3, "prompt": "x"})"), "'model' must be a string");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": 5})"),
            "'prompt' must be a string (or an array of one string)");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "max_tokens": "9"})"),
            "'max_tokens' must be an integer");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "max_tokens": 0})"), "'max_tokens' must be at least 1");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "temperature": 3})"),
            "'temperature' must be at least 0.000000 and at most 2.000000");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "top_p": 0})"),
            "'top_p' must be above 0.000000 and at most 1.000000");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "stream": "yes"})"), "'stream' must be a boolean");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "stop": ["a", "b", "c", "d", "e"]})"),
            "'stop' must be a string or an array of at most 4 strings");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "seed": 1.5})"), "'seed' must be an integer");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "messages": [{"role": "user"}]})", Endpoint::kChatCompletions),
            "'messages[0].content' is required");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "messages": []})", Endpoint::kChatCompletions),
            "'messages' must be a non-empty array");
}

TEST(ParseOpenAiRequest, UnknownAndUnsupportedFieldsAreRefusedNotIgnored) {
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "bogus": 1})"), "unrecognized field 'bogus'");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "n": 2})"), "'n' is supported only as 1");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "echo": true})"), "'echo' is supported only as false");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})"),
            "unrecognized field 'messages'");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x"})", Endpoint::kChatCompletions),
            "unrecognized field 'prompt'");
}

TEST(ParseOpenAiRequest, AnUnrecognizedFieldNameWithControlCharactersStaysOnOneLine) {
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "bo\ngus": 1})"), "unrecognized field 'bo?gus'");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "messages": [{"role": "user", "con\ntent": "x"}]})",
                    Endpoint::kChatCompletions),
            "unrecognized field 'messages[0].con?tent'");
  EXPECT_EQ(ErrorOf(R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"a\tb": true}})"),
            "unrecognized field 'stream_options.a?b'");
}

TEST(ParseOpenAiRequest, RequiredFieldsAreNamed) {
  EXPECT_EQ(ErrorOf(R"({"prompt": "x"})"), "'model' is required");
  EXPECT_EQ(ErrorOf(R"({"model": "m"})"), "'prompt' is required");
  EXPECT_EQ(ErrorOf(R"({"model": "m"})", Endpoint::kChatCompletions), "'messages' is required");
}

}  // namespace
}  // namespace inferno
