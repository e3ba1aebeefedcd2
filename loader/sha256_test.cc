#include "loader/sha256.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::string Digest(const std::string& text) {
  Sha256 hash;
  hash.Update(std::as_bytes(std::span(text.data(), text.size())));
  return hash.HexDigest();
}

TEST(Sha256, MatchesFipsTestVectors) {
  EXPECT_EQ(Digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Digest(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, DigestDoesNotDependOnHowUpdatesSplitTheBytes) {
  std::mt19937 random(7);
  std::vector<std::byte> data(5000);
  for (std::byte& b : data) b = static_cast<std::byte>(random());
  for (size_t length : {0, 1, 55, 56, 63, 64, 65, 127, 128, 1000, 5000}) {
    Sha256 whole;
    whole.Update(std::span(data.data(), length));
    Sha256 pieces;
    for (size_t begin = 0; begin < length;) {
      const size_t size = std::min<size_t>(length - begin, 1 + random() % 150);
      pieces.Update(std::span(data.data() + begin, size));
      begin += size;
    }
    EXPECT_EQ(whole.HexDigest(), pieces.HexDigest()) << "length " << length;
  }
}

}  // namespace
}  // namespace inferno
