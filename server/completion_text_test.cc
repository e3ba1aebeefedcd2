#include "server/completion_text.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

// ByteTokenizer ids of `text`.
std::vector<int32_t> Ids(const std::string& text) { return ByteTokenizer().Encode(text); }

TEST(CompletionText, SendsDecodedTextAsItComes) {
  ByteTokenizer tokenizer;
  CompletionText text(tokenizer, {});
  EXPECT_EQ(text.Add(kLlama2cBosId, Ids("Hello")), "Hello");
  EXPECT_EQ(text.Add(Ids("o").back(), Ids(" you")), " you");
  EXPECT_EQ(text.Finish(), "");
}

// Token i decodes to pieces[i] (ByteTokenizer prints no byte above 0x7f
// alone, as llama2.c does).
class PieceTokenizer final : public Tokenizer {
 public:
  explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::vector<int32_t> Encode(std::string_view) const override { return {}; }
  std::string Decode(int32_t, int32_t token) const override { return pieces_[static_cast<size_t>(token)]; }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
};

TEST(CompletionText, NeverSplitsAUtf8Character) {
  PieceTokenizer tokenizer({"a", "\xC3", "\xBC", "\xE6\x97",
                            "\xA5"
                            "b"});
  CompletionText text(tokenizer, {});
  const std::vector<int32_t> ids = {0, 1};
  EXPECT_EQ(text.Add(0, ids), "a");
  EXPECT_EQ(text.Add(1, std::vector<int32_t>{2, 3}), "\xC3\xBC");
  EXPECT_EQ(text.Add(3, std::vector<int32_t>{4}),
            "\xE6\x97\xA5"
            "b");
}

TEST(CompletionText, CutsBeforeTheFirstStopStringEvenAcrossTokenGroups) {
  ByteTokenizer tokenizer;
  CompletionText text(tokenizer, {"END", "xyz"});
  // "ab" is sent; "E" and "N" could begin "END" and are held back.
  EXPECT_EQ(text.Add(kLlama2cBosId, Ids("abEN")), "ab");
  EXPECT_FALSE(text.stopped());
  EXPECT_EQ(text.Add(Ids("N").back(), Ids("Dmore")), "");
  EXPECT_TRUE(text.stopped());
  EXPECT_EQ(text.Add(Ids("e").back(), Ids("tail")), "");
  EXPECT_EQ(text.Finish(), "");
}

TEST(CompletionText, FinishSendsWhatWasHeldBack) {
  ByteTokenizer tokenizer;
  CompletionText text(tokenizer, {"STOP"});
  EXPECT_EQ(text.Add(kLlama2cBosId, Ids("okST")), "o");
  EXPECT_EQ(text.Finish(), "kST");
  EXPECT_FALSE(text.stopped());
}

}  // namespace
}  // namespace inferno
