#include "base/command_line.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

const CommandSpec kSpec{"tool",
                        "--model PATH [flags]",
                        "Does a thing.",
                        {{"model", "PATH", "the model"},
                         {"prompt", "TEXT", "a prompt (repeatable)"},
                         {"threads", "N", "threads"},
                         {"top-p", "P", "nucleus mass"},
                         {"secure", "", "encrypt"},
                         {"ranks", "N", "ranks", 'n'}}};

CommandSpec WithCommand() {
  CommandSpec spec = kSpec;
  spec.takes_command = true;
  return spec;
}

Result<CommandLine> Parse(std::vector<const char*> args, const CommandSpec& spec = kSpec) {
  args.insert(args.begin(), "tool");
  return CommandLine::Parse(static_cast<int>(args.size()), args.data(), spec);
}

TEST(CommandLine, ParsesBothFormsAndKeepsRepeatsInOrder) {
  auto parsed = Parse({"--model", "m.bin", "--prompt=a b", "--prompt", "c", "--threads", "2"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->Last("model"), "m.bin");
  EXPECT_EQ(parsed->All("prompt"), (std::vector<std::string>{"a b", "c"}));
  EXPECT_EQ(*parsed->Int("threads", 1, 1, 8), 2);
  EXPECT_EQ(*parsed->Double("top-p", 0.5, 0.0, 1.0), 0.5);
  EXPECT_FALSE(parsed->Has("top-p"));
  EXPECT_FALSE(parsed->help_requested());
}

TEST(CommandLine, UnknownFlagFailsNamingIt) {
  auto parsed = Parse({"--model", "m", "--bogus", "1"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(parsed.error().message, "unknown flag --bogus");
}

TEST(CommandLine, MissingValueAndBareArgumentFail) {
  EXPECT_FALSE(Parse({"--model"}).ok());
  EXPECT_FALSE(Parse({"model.bin"}).ok());
}

TEST(CommandLine, SwitchesTakeNoValue) {
  auto parsed = Parse({"--secure", "--model", "m"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed->Has("secure"));
  auto bad = Parse({"--secure=yes"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--secure takes no value");
}

TEST(CommandLine, ShortNameIsTheSameFlag) {
  auto parsed = Parse({"-n", "3", "--ranks=4"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->All("ranks"), (std::vector<std::string>{"3", "4"}));
}

TEST(CommandLine, HelpStopsParsingEvenAfterABadFlag) {
  auto parsed = Parse({"--model", "m", "--help", "--bogus"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed->help_requested());
  EXPECT_TRUE(Parse({"-h"})->help_requested());
}

TEST(CommandLine, CommandStartsAtTheFirstBareArgumentOrAfterDoubleDash) {
  auto bare = Parse({"-n", "2", "prog", "--model", "x"}, WithCommand());
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_EQ(bare->command(), (std::vector<std::string>{"prog", "--model", "x"}));
  EXPECT_FALSE(bare->Has("model"));
  auto dashed = Parse({"--secure", "--", "--weird-prog", "-h"}, WithCommand());
  ASSERT_TRUE(dashed.ok()) << dashed.error().message;
  EXPECT_EQ(dashed->command(), (std::vector<std::string>{"--weird-prog", "-h"}));
  EXPECT_FALSE(dashed->help_requested());
}

TEST(CommandLine, OutOfRangeOrMalformedNumbersFailNamingTheFlag) {
  auto parsed = Parse({"--threads", "0", "--top-p", "x"});
  ASSERT_TRUE(parsed.ok());
  auto threads = parsed->Int("threads", 1, 1, 8);
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.error().message.find("--threads"), std::string::npos);
  EXPECT_FALSE(parsed->Double("top-p", 1.0, 0.0, 1.0).ok());
}

TEST(CommandLine, MissingRequiredFlagsFailNamingEachMissingOne) {
  const CommandSpec spec{"t",   "",
                         "",    {{"model", "PATH", "m"}, {"pp", "N", "p"}, {"out", "DIR", "o"}},
                         false, {"model", "pp", "out"}};
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"t", "--pp", "2"}, "--model and --out are required"},
      {{"t"}, "--model, --pp and --out are required"},
      {{"t", "--model", "m", "--pp", "1"}, "--out is required"},
  };
  for (const auto& [argv, message] : cases) {
    Result<CommandLine> parsed = CommandLine::Parse(static_cast<int>(argv.size()), argv.data(), spec);
    ASSERT_FALSE(parsed) << message;
    EXPECT_EQ(parsed.error().message, message);
  }
  const std::vector<const char*> all = {"t", "--model", "m", "--pp", "1", "--out", "o"};
  EXPECT_TRUE(CommandLine::Parse(static_cast<int>(all.size()), all.data(), spec));
  const std::vector<const char*> help = {"t", "--help"};
  Result<CommandLine> asked = CommandLine::Parse(static_cast<int>(help.size()), help.data(), spec);
  ASSERT_TRUE(asked);
  EXPECT_TRUE(asked->help_requested());
  EXPECT_NE(Usage(spec).find(" o (required)\n"), std::string::npos) << Usage(spec);
}

TEST(Usage, ListsEveryFlagWithItsValueAndHelp) {
  const std::string usage = Usage(kSpec);
  EXPECT_EQ(usage.rfind("usage: tool --model PATH [flags]\n", 0), 0u) << usage;
  EXPECT_NE(usage.find("Does a thing."), std::string::npos);
  EXPECT_NE(usage.find("--model PATH"), std::string::npos);
  EXPECT_NE(usage.find("-n, --ranks N"), std::string::npos);
  EXPECT_NE(usage.find("--secure "), std::string::npos);
  EXPECT_NE(usage.find("-h, --help"), std::string::npos);
}

TEST(ParseIntList, AcceptsSpacesAndCommasAndRejectsWords) {
  EXPECT_EQ(*ParseIntList(" 1 300,45 ", "--prompt-ids"), (std::vector<int64_t>{1, 300, 45}));
  auto bad = ParseIntList("1 two", "--prompt-ids");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--prompt-ids: 'two' is not an integer");
}

}  // namespace
}  // namespace inferno
