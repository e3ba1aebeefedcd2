#include "loader/crc32c.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

uint32_t Checksum(const std::string& text, Crc32c::Backend backend) {
  Crc32c crc(backend);
  crc.Update(std::as_bytes(std::span(text.data(), text.size())));
  return crc.value();
}

TEST(Crc32c, MatchesKnownValuesOnEveryBackend) {
  for (Crc32c::Backend backend : {Crc32c::Backend::kBest, Crc32c::Backend::kPortable}) {
    EXPECT_EQ(Checksum("", backend), 0u);
    EXPECT_EQ(Checksum("123456789", backend), 0xE3069283u);            // the CRC-32C check value
    EXPECT_EQ(Checksum(std::string(32, '\0'), backend), 0x8A9136AAu);  // RFC 3720 B.4
    EXPECT_EQ(Checksum(std::string(32, '\xff'), backend), 0x62A8AB43u);
  }
  Crc32c crc;
  crc.Update(std::as_bytes(std::span("123456789", 9)));
  EXPECT_EQ(crc.HexDigest(), "e3069283");
}

TEST(Crc32c, BackendsAgreeWhateverTheUpdateSplits) {
  std::mt19937 random(3);
  std::vector<std::byte> data(3000);
  for (std::byte& b : data) b = static_cast<std::byte>(random());
  for (size_t length : {1, 7, 8, 9, 63, 64, 1000, 3000}) {
    Crc32c whole(Crc32c::Backend::kPortable);
    whole.Update(std::span(data.data(), length));
    Crc32c pieces(Crc32c::Backend::kBest);
    for (size_t begin = 0; begin < length;) {
      const size_t size = std::min<size_t>(length - begin, 1 + random() % 37);
      pieces.Update(std::span(data.data() + begin, size));
      begin += size;
    }
    EXPECT_EQ(whole.value(), pieces.value()) << "length " << length;
  }
}

TEST(Crc32c, DetectsASingleFlippedBit) {
  std::string text(4096, 'x');
  const uint32_t before = Checksum(text, Crc32c::Backend::kBest);
  text[2000] ^= 0x10;
  EXPECT_NE(Checksum(text, Crc32c::Backend::kBest), before);
}

}  // namespace
}  // namespace inferno
