#include "text/hf_tokenizer/byte_level.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "text/utf8.h"

namespace inferno::hf {
namespace {

TEST(ByteLevel, PrintableBytesStandForThemselvesOthersForU0100Onwards) {
  EXPECT_EQ(ByteLevelCharOf('a'), U'a');
  EXPECT_EQ(ByteLevelCharOf(0), U'\u0100');
  EXPECT_EQ(ByteLevelCharOf(' '), U'Ġ');   // U+0120
  EXPECT_EQ(ByteLevelCharOf('\n'), U'Ċ');  // U+010A
  EXPECT_EQ(ByteLevelCharOf(0xAD), U'\u0143');
}

TEST(ByteLevel, EveryByteRoundTrips) {
  std::set<char32_t> seen;
  for (int byte = 0; byte < 256; ++byte) {
    const char32_t cp = ByteLevelCharOf(static_cast<uint8_t>(byte));
    EXPECT_TRUE(seen.insert(cp).second) << byte;
    std::string text;
    Utf8Append(cp, text);
    EXPECT_EQ(ByteLevelToBytes(text), std::string(1, static_cast<char>(byte)));
  }
}

TEST(ByteLevel, TextOutsideTheAlphabetHasNoBytes) {
  EXPECT_EQ(ByteLevelToBytes("ĠhelloĊ"), " hello\n");
  EXPECT_EQ(ByteLevelToBytes("中"), std::nullopt);
  EXPECT_EQ(ByteLevelToBytes(" "), std::nullopt);  // a space is written Ġ
  EXPECT_EQ(ByteLevelToBytes("\xFF"), std::nullopt);
}

}  // namespace
}  // namespace inferno::hf
