#include "loader/content_hash.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::span<const std::byte> Bytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(ContentHash, PieceDigestIsBlake2b256) {
  // RFC 7693's BLAKE2b with a 32-byte digest, of the empty string.
  EXPECT_EQ(DigestHex(DigestOf({})), "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
  EXPECT_NE(DigestOf(Bytes("hello world")), DigestOf(Bytes("hello worle")));
}

TEST(ContentHash, DigestDependsOnTheBytesNotOnHowUpdateCutsThem) {
  std::vector<std::byte> bytes(2 * kContentPieceBytes + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + i / 4096);
  PiecewiseHash whole;
  whole.Update(bytes);
  const ContentDigest expected = whole.Finish();
  ASSERT_EQ(whole.pieces().size(), 3u);
  EXPECT_EQ(whole.pieces()[1], DigestOf(std::span(bytes).subspan(kContentPieceBytes, kContentPieceBytes)));
  EXPECT_EQ(whole.pieces()[2], DigestOf(std::span(bytes).subspan(2 * kContentPieceBytes)));
  EXPECT_EQ(expected, DigestOfPieces(whole.pieces()));
  PiecewiseHash cut;
  for (size_t at = 0; at < bytes.size(); at += 1000003) {
    cut.Update(std::span(bytes).subspan(at, std::min<size_t>(1000003, bytes.size() - at)));
  }
  EXPECT_EQ(cut.Finish(), expected);
  bytes[kContentPieceBytes + 5] ^= std::byte{1};
  PiecewiseHash changed;
  changed.Update(bytes);
  EXPECT_NE(changed.Finish(), expected);
}

}  // namespace
}  // namespace inferno
