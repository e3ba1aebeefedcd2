#include "distributed/tcp/frame_seal.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

// A sealed frame carrying `text`.
std::vector<std::byte> Sealed(FrameSealer& sealer, const std::string& text) {
  std::vector<std::byte> frame(kSealedLengthBytes + text.size() + kSealTagBytes);
  std::memcpy(frame.data() + kSealedLengthBytes, text.data(), text.size());
  sealer.Seal(frame);
  return frame;
}

std::string Text(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(FrameSeal, OpensWhatTheSenderSealedInOrder) {
  const DataKey receiver = DataKey::Random();
  FrameSealer sealer(receiver, 3);
  FrameOpener opener(receiver, 3);
  std::vector<std::byte> first = Sealed(sealer, "first frame");
  std::vector<std::byte> second = Sealed(sealer, "second");
  EXPECT_NE(Text(std::span(first).subspan(kSealedLengthBytes, 11)), "first frame");  // encrypted
  Result<std::span<std::byte>> opened = opener.Open(first);
  ASSERT_TRUE(opened) << opened.error().ToString();
  EXPECT_EQ(Text(*opened), "first frame");
  opened = opener.Open(second);
  ASSERT_TRUE(opened) << opened.error().ToString();
  EXPECT_EQ(Text(*opened), "second");
}

TEST(FrameSeal, RefusesAnAlteredFrame) {
  const DataKey receiver = DataKey::Random();
  FrameSealer sealer(receiver, 0);
  FrameOpener opener(receiver, 0);
  std::vector<std::byte> frame = Sealed(sealer, "payload");
  frame[kSealedLengthBytes + 2] ^= std::byte{1};
  Result<std::span<std::byte>> opened = opener.Open(frame);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("frame 0 from rank 0 failed authentication"), std::string::npos)
      << opened.error().message;
}

TEST(FrameSeal, RefusesAReplayedFrame) {
  const DataKey receiver = DataKey::Random();
  FrameSealer sealer(receiver, 1);
  FrameOpener opener(receiver, 1);
  const std::vector<std::byte> frame = Sealed(sealer, "once");
  std::vector<std::byte> copy = frame;
  ASSERT_TRUE(opener.Open(copy));
  copy = frame;
  EXPECT_FALSE(opener.Open(copy));
}

TEST(FrameSeal, RefusesAFrameOfAnotherDirection) {
  const DataKey key_of_0 = DataKey::Random();
  const DataKey key_of_1 = DataKey::Random();
  // Rank 0 seals to rank 1; neither rank 1 as if from rank 2, nor rank 0
  // (the frame reflected back), opens it.
  FrameSealer to_1(key_of_1, 0);
  std::vector<std::byte> frame = Sealed(to_1, "for rank 1 from rank 0");
  std::vector<std::byte> copy = frame;
  EXPECT_FALSE(FrameOpener(key_of_1, 2).Open(copy));
  copy = frame;
  EXPECT_FALSE(FrameOpener(key_of_0, 1).Open(copy));
  copy = frame;
  EXPECT_TRUE(FrameOpener(key_of_1, 0).Open(copy));
}

TEST(FrameSeal, RefusesALengthFieldThatDisagrees) {
  const DataKey receiver = DataKey::Random();
  FrameSealer sealer(receiver, 0);
  std::vector<std::byte> frame = Sealed(sealer, "abc");
  frame.push_back(std::byte{0});
  EXPECT_FALSE(FrameOpener(receiver, 0).Open(frame));
}

TEST(DataKey, ParsesItsHexAndRefusesOtherText) {
  const DataKey key = DataKey::Random();
  Result<DataKey> parsed = DataKey::Parse("data_key", key.ToHex());
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(parsed->bytes(), key.bytes());
  Result<DataKey> bad = DataKey::Parse("data_key", "xyz");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "data_key: a data key is 64 hex digits, got 3 characters");
  EXPECT_FALSE(DataKey::Parse("data_key", std::string(64, 'g')));
}

}  // namespace
}  // namespace inferno
