#include "text/chat_template/chat_template.h"

#include <ctime>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in("text/chat_template/testdata/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ChatRequest Request(std::vector<ChatMessage> messages) {
  ChatRequest request;
  request.messages = std::move(messages);
  request.bos_token = "<s>";
  request.eos_token = "</s>";
  return request;
}

TEST(ChatTemplate, RendersChatMLWithAndWithoutGenerationPrompt) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(ReadTestdata("chatml.jinja"));
  ASSERT_TRUE(chat) << chat.error().ToString();
  ChatRequest request = Request({{"system", "Be brief."}, {"user", "Hi"}});
  EXPECT_EQ(
      *chat->Render(request),
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  request.add_generation_prompt = false;
  EXPECT_EQ(*chat->Render(request),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, SeesTheVariablesTransformersPasses) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(
      "{{ bos_token is defined }}{{ eos_token }}{{ tools is none }}{{ documents is none }}"
      "{{ add_generation_prompt }}{{ messages|length }}");
  ASSERT_TRUE(chat);
  ChatRequest request;
  request.messages = {{"user", "a"}, {"assistant", "b"}};
  request.eos_token = "<|im_end|>";
  EXPECT_EQ(*chat->Render(request), "False<|im_end|>TrueTrueTrue2");
}

TEST(ChatTemplate, MessageFieldsReachTheTemplateAndMayReplaceContent) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content is none }}:{% if m.tool_calls %}{{ m.tool_calls | "
      "tojson }}{% endif %}"
      "{{ m.tool_call_id }};{% endfor %}");
  ASSERT_TRUE(chat) << chat.error().ToString();
  ChatRequest request;
  ChatMessage call{"assistant", "", {{"content", chat::Value::None()}}};
  call.fields.emplace_back("tool_calls",
                           chat::Value::List({chat::Value::Dict(
                               {{"name", chat::Value::String("f")}, {"id", chat::Value::Int(1)}})}));
  request.messages = {call, {"tool", "42", {{"tool_call_id", chat::Value::String("c1")}}}};
  EXPECT_EQ(*chat->Render(request), "assistant:True:[{\"name\": \"f\", \"id\": 1}];tool:False:c1;");
}

TEST(ChatTemplate, ExtraVariablesReplaceTheDefaults) {
  Result<ChatTemplate> chat =
      ChatTemplate::Parse("{% if enable_thinking is false %}no-think{% endif %}{{ tools | tojson }}");
  ASSERT_TRUE(chat);
  ChatRequest request;
  request.extra_variables = {{"enable_thinking", chat::Value::Bool(false)},
                             {"tools", chat::Value::List({chat::Value::String("f")})}};
  EXPECT_EQ(*chat->Render(request), "no-think[\"f\"]");
}

// Python's '' != False: an empty system message still opens a <<SYS>> block
// (the JavaScript reference, whose '' == false, renders none; see make_golden.mjs).
TEST(ChatTemplate, Llama2EmptySystemMessageRendersLikePython) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(ReadTestdata("llama2.jinja"));
  ASSERT_TRUE(chat) << chat.error().ToString();
  EXPECT_EQ(*chat->Render(Request({{"system", ""}, {"user", "Hi"}})),
            "<s>[INST] <<SYS>>\n\n<</SYS>>\n\nHi [/INST]");
}

// Llama 3.2's template prints today's date (strftime_now) unless given date_string.
TEST(ChatTemplate, Llama32PrintsTodaysDateUnlessGivenOne) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(ReadTestdata("llama3_2.jinja"));
  ASSERT_TRUE(chat) << chat.error().ToString();
  ChatRequest request = Request({{"user", "Hi"}});
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char today[64];
  std::strftime(today, sizeof(today), "Today Date: %d %b %Y\n", &local);
  Result<std::string> text = chat->Render(request);
  ASSERT_TRUE(text) << text.error().ToString();
  EXPECT_NE(text->find(today), std::string::npos) << *text;
  request.extra_variables = {{"date_string", chat::Value::String("01 Jan 2030")}};
  EXPECT_NE(chat->Render(request)->find("Today Date: 01 Jan 2030\n"), std::string::npos);
}

TEST(ChatTemplate, RaisedExceptionIsAnErrorNamingTheTemplateLine) {
  Result<ChatTemplate> chat = ChatTemplate::Parse(ReadTestdata("mistral_v2.jinja"));
  ASSERT_TRUE(chat) << chat.error().ToString();
  const Result<std::string> text = chat->Render(Request({{"user", "one"}, {"user", "two"}}));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(
      text.error().message,
      "chat template: line 11, column 13: raise_exception: After the optional system message, conversation "
      "roles must alternate user/assistant/user/assistant/...");
}

TEST(ChatTemplate, ParseErrorsAreOneLineAndPrefixed) {
  const Result<ChatTemplate> chat =
      ChatTemplate::Parse("{% for m in messages %}\n{{ m.content | wordwrap }}");
  ASSERT_FALSE(chat);
  EXPECT_EQ(chat.error().kind, ErrorKind::kUnimplemented);
  EXPECT_EQ(chat.error().message,
            "chat template: line 2, column 16: unknown or unsupported filter 'wordwrap'");
  EXPECT_EQ(chat.error().message.find('\n'), std::string::npos);
}

// Malformed templates are errors, never crashes: every prefix of the test
// templates, and each with single bytes replaced by template syntax, either
// fails with a one-line error or parses and renders (or fails to render)
// cleanly.
TEST(ChatTemplate, TruncatedAndMutatedTemplatesFailCleanly) {
  const ChatRequest request = Request({{"system", "s"}, {"user", "u"}, {"assistant", "a"}, {"user", "v"}});
  const auto check = [&](const std::string& source) {
    Result<ChatTemplate> chat = ChatTemplate::Parse(source);
    if (!chat) {
      EXPECT_EQ(chat.error().message.find('\n'), std::string::npos) << chat.error().message;
      return;
    }
    Result<std::string> text = chat->Render(request);
    if (!text) {
      EXPECT_EQ(text.error().message.find('\n'), std::string::npos) << text.error().message;
    }
  };
  for (const char* name : {"llama2.jinja", "mistral_v2.jinja", "zephyr.jinja"}) {
    const std::string source = ReadTestdata(name);
    ASSERT_FALSE(source.empty()) << name;
    for (size_t length = 0; length <= source.size(); ++length) check(source.substr(0, length));
    for (size_t i = 0; i < source.size(); i += 5) {
      for (const char replacement : {'{', '}', '%', '-', '\'', '(', ']', '|', '.', '\\'}) {
        std::string mutated = source;
        mutated[i] = replacement;
        check(mutated);
      }
    }
  }
}

TEST(ChatTemplate, CopiesShareTheParsedTemplate) {
  Result<ChatTemplate> chat = ChatTemplate::Parse("{{ messages[0].content }}");
  ASSERT_TRUE(chat);
  const ChatTemplate copy = *chat;
  EXPECT_EQ(*copy.Render(Request({{"user", "x"}})), "x");
}

}  // namespace
}  // namespace inferno
