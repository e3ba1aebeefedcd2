#include "loader/digest_memo.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::string Folder(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

// The digests of `size` bytes of a pattern.
PieceDigests DigestsOf(uint64_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7);
  PiecewiseHash hash;
  hash.Update(bytes);
  PieceDigests digests;
  digests.bytes = size;
  digests.digest = hash.Finish();
  digests.pieces = hash.pieces();
  return digests;
}

TEST(DigestMemo, FindsWhatWasStoredUnderItsKeyOnly) {
  Result<DigestMemo> memo = DigestMemo::Open(Folder("memo/nested"));
  ASSERT_TRUE(memo) << memo.error().message;
  const PieceDigests stored = DigestsOf(kContentPieceBytes * 2 + 5);
  EXPECT_FALSE(memo->Find("file 1:2:3\nrank 1").has_value());
  ASSERT_TRUE(memo->Store("file 1:2:3\nrank 1", stored));
  const std::optional<PieceDigests> found = memo->Find("file 1:2:3\nrank 1");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->bytes, stored.bytes);
  EXPECT_EQ(found->digest, stored.digest);
  EXPECT_EQ(found->pieces, stored.pieces);
  EXPECT_FALSE(memo->Find("file 1:2:4\nrank 1").has_value());  // the file changed since
  EXPECT_FALSE(memo->Find("file 1:2:3\nrank 2").has_value());
}

TEST(DigestMemo, DamagedEntryIsTakenForAnAbsentOne) {
  Result<DigestMemo> memo = DigestMemo::Open(Folder("damaged"));
  ASSERT_TRUE(memo);
  const std::string key = "k";
  ASSERT_TRUE(memo->Store(key, DigestsOf(100)));
  const std::string path = memo->PathOf(key);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t at : {size_t{0}, size_t{20}, bytes.size() - 1}) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 1);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    EXPECT_FALSE(memo->Find(key).has_value()) << "byte " << at << " flipped";
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 32);
  EXPECT_FALSE(memo->Find(key).has_value()) << "a piece digest short";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_TRUE(memo->Find(key).has_value());
}

}  // namespace
}  // namespace inferno
