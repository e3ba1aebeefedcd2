#include "server/tool_calls.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

// Feeds `pieces` to a parser of `format` one by one, then finishes; returns
// the content and the calls, and the content released before the end.
struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
  std::string content_before_finish;
};
Parsed Feed(ToolCallFormat format, const std::vector<std::string>& pieces) {
  ToolCallParser parser(format);
  Parsed parsed;
  for (const std::string& piece : pieces) {
    ToolCallParser::Output out = parser.Add(piece);
    parsed.content += out.content;
    parsed.calls.insert(parsed.calls.end(), out.calls.begin(), out.calls.end());
  }
  parsed.content_before_finish = parsed.content;
  ToolCallParser::Output out = parser.Finish();
  parsed.content += out.content;
  parsed.calls.insert(parsed.calls.end(), out.calls.begin(), out.calls.end());
  return parsed;
}

// `text` in pieces of one character: every split point is crossed.
std::vector<std::string> Chars(const std::string& text) {
  std::vector<std::string> pieces;
  for (char c : text) pieces.emplace_back(1, c);
  return pieces;
}

TEST(DetectToolCallFormat, FromTheTemplatesMarkers) {
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}<tool_call>{% endif %}"), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}[TOOL_CALLS]{% endif %}"), ToolCallFormat::kMistral);
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}<|python_tag|>{% endif %}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}Respond in the format {\"name\": function name, "
                                 "\"parameters\": dictionary}{% endif %}"),
            ToolCallFormat::kLlama3Json)
      << "Llama 3.2";
  EXPECT_EQ(DetectToolCallFormat("{{ messages }}<tool_call>"), ToolCallFormat::kNone) << "never reads tools";
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}{{ tools }}{% endif %}"), ToolCallFormat::kNone);
}

TEST(ToolCallParser, HermesCallsAmidContentAtEverySplit) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  for (const std::vector<std::string>& pieces : {std::vector<std::string>{text}, Chars(text)}) {
    const Parsed parsed = Feed(ToolCallFormat::kHermes, pieces);
    EXPECT_EQ(parsed.content, "Let me check.\n");
    EXPECT_EQ(parsed.calls, (std::vector<ToolCall>{{"get_weather", R"({"city":"Paris"})"}, {"now", "{}"}}));
  }
}

TEST(ToolCallParser, HermesReleasesContentThatCannotStartACall) {
  const Parsed parsed = Feed(ToolCallFormat::kHermes, {"a < b", " and <tool", "_x"});
  EXPECT_EQ(parsed.content_before_finish, "a < b and <tool_x");
  EXPECT_TRUE(parsed.calls.empty());
}

TEST(ToolCallParser, HermesMalformedOrUnfinishedCallIsContent) {
  Parsed parsed = Feed(ToolCallFormat::kHermes, {"<tool_call>{\"name\": 3}</tool_call>ok"});
  EXPECT_EQ(parsed.content, "<tool_call>{\"name\": 3}</tool_call>ok");
  EXPECT_TRUE(parsed.calls.empty());
  parsed = Feed(ToolCallFormat::kHermes, {"<tool_call>{\"name\": \"f\", \"argu"});
  EXPECT_EQ(parsed.content_before_finish, "");
  EXPECT_EQ(parsed.content, "<tool_call>{\"name\": \"f\", \"argu");
}

TEST(ToolCallParser, Llama3JsonWholeAnswerOneOrSeveralCalls) {
  Parsed parsed = Feed(ToolCallFormat::kLlama3Json,
                       Chars("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"a;b\"}}"));
  EXPECT_EQ(parsed.content, "");
  EXPECT_EQ(parsed.calls, (std::vector<ToolCall>{{"get_weather", R"({"city":"a;b"})"}}));
  parsed = Feed(ToolCallFormat::kLlama3Json, {"<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; ",
                                              "{\"name\": \"g\", \"arguments\": {\"x\": 1}}"});
  EXPECT_EQ(parsed.calls, (std::vector<ToolCall>{{"f", "{}"}, {"g", R"({"x":1})"}}));
}

TEST(ToolCallParser, Llama3JsonContentIsReleasedAtOnceAndBadJsonIsContent) {
  Parsed parsed = Feed(ToolCallFormat::kLlama3Json, {"  Hello", " there"});
  EXPECT_EQ(parsed.content_before_finish, "  Hello there");
  parsed = Feed(ToolCallFormat::kLlama3Json, {"{not json} really"});
  EXPECT_EQ(parsed.content_before_finish, "");
  EXPECT_EQ(parsed.content, "{not json} really");
  EXPECT_TRUE(parsed.calls.empty());
}

TEST(ToolCallParser, MistralArrayWithOrWithoutThePrintedTag) {
  for (const std::string prefix : {"[TOOL_CALLS] ", ""}) {
    const Parsed parsed = Feed(
        ToolCallFormat::kMistral,
        Chars(prefix + R"([{"name": "f", "arguments": {"a": [1, 2]}}, {"name": "g", "arguments": {}}])"));
    EXPECT_EQ(parsed.content, "") << prefix;
    EXPECT_EQ(parsed.calls, (std::vector<ToolCall>{{"f", R"({"a":[1,2]})"}, {"g", "{}"}})) << prefix;
  }
  EXPECT_EQ(Feed(ToolCallFormat::kMistral, {"[1, 2] is a list"}).content, "[1, 2] is a list");
}

TEST(ToolCallParser, NoFormatPassesTextThrough) {
  const Parsed parsed = Feed(ToolCallFormat::kNone, {"<tool_call>{}</tool_call>"});
  EXPECT_EQ(parsed.content_before_finish, "<tool_call>{}</tool_call>");
}

}  // namespace
}  // namespace inferno
