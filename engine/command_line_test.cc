#include "engine/command_line.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

EngineResult<CommandLine> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tool");
  return CommandLine::Parse(static_cast<int>(args.size()), args.data(), {"model", "prompt", "threads", "top-p"});
}

TEST(CommandLine, ParsesBothFormsAndKeepsRepeatsInOrder) {
  auto parsed = Parse({"--model", "m.bin", "--prompt=a b", "--prompt", "c", "--threads", "2"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->Last("model"), "m.bin");
  EXPECT_EQ(parsed->All("prompt"), (std::vector<std::string>{"a b", "c"}));
  EXPECT_EQ(*parsed->Int("threads", 1, 1, 8), 2);
  EXPECT_EQ(*parsed->Double("top-p", 0.5, 0.0, 1.0), 0.5);
  EXPECT_FALSE(parsed->Has("top-p"));
}

TEST(CommandLine, UnknownFlagFailsNamingIt) {
  auto parsed = Parse({"--model", "m", "--bogus", "1"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message, "unknown flag --bogus");
}

TEST(CommandLine, MissingValueAndBareArgumentFail) {
  EXPECT_FALSE(Parse({"--model"}).ok());
  EXPECT_FALSE(Parse({"model.bin"}).ok());
}

TEST(CommandLine, OutOfRangeOrMalformedNumbersFailNamingTheFlag) {
  auto parsed = Parse({"--threads", "0", "--top-p", "x"});
  ASSERT_TRUE(parsed.ok());
  auto threads = parsed->Int("threads", 1, 1, 8);
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.error().message.find("--threads"), std::string::npos);
  EXPECT_FALSE(parsed->Double("top-p", 1.0, 0.0, 1.0).ok());
}

TEST(ParseIntList, AcceptsSpacesAndCommasAndRejectsWords) {
  EXPECT_EQ(*ParseIntList(" 1 300,45 ", "--prompt-ids"), (std::vector<int64_t>{1, 300, 45}));
  auto bad = ParseIntList("1 two", "--prompt-ids");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--prompt-ids: 'two' is not an integer");
}

}  // namespace
}  // namespace inferno
