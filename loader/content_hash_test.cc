#include "loader/content_hash.h"

#include <string>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::span<const std::byte> Bytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(ContentHash, EmptyInputIsBlake2b256OfNothing) {
  // RFC 7693's BLAKE2b with a 32-byte digest, of the empty string.
  EXPECT_EQ(DigestHex(DigestOf({})), "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
}

TEST(ContentHash, PiecesHashAsTheWhole) {
  ContentHash hash;
  hash.Update(Bytes("hello "));
  hash.Update(Bytes("world"));
  EXPECT_EQ(hash.Finish(), DigestOf(Bytes("hello world")));
  EXPECT_NE(DigestOf(Bytes("hello world")), DigestOf(Bytes("hello worle")));
}

}  // namespace
}  // namespace inferno
