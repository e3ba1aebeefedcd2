#include "loader/weight_cache.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace inferno {
namespace {

std::span<const std::byte> Bytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

WeightCache TestCache(const std::string& name) {
  Result<WeightCache> cache =
      WeightCache::Open(std::string(std::getenv("TEST_TMPDIR")) + "/" + name + "/sub");
  EXPECT_TRUE(cache) << cache.error().message;
  return *std::move(cache);
}

const std::string kWeights = "the weights of one rank";  // one piece

ContentDigest DigestOfContent(const std::string& text) {
  PiecewiseHash hash;
  hash.Update(Bytes(text));
  return hash.Finish();
}

TEST(WeightCache, CommittedEntryVerifiesAndPartialFileIsGone) {
  const WeightCache cache = TestCache("committed");
  const ContentDigest digest = DigestOfContent(kWeights);
  EXPECT_EQ(cache.Verify(digest, kWeights.size()).error().kind, ErrorKind::kNotFound);
  Result<WeightCacheWriter> writer = cache.Begin(digest, kWeights.size());
  ASSERT_TRUE(writer) << writer.error().message;
  ASSERT_TRUE(writer->Append(Bytes(kWeights)));
  EXPECT_EQ(writer->pieces().back(), DigestOf(Bytes(kWeights)));
  EXPECT_FALSE(Exists(cache.PathOf(digest)));
  ASSERT_TRUE(writer->Commit());
  EXPECT_TRUE(Exists(cache.PathOf(digest)));
  EXPECT_FALSE(Exists(cache.PathOf(digest) + ".partial"));
  EXPECT_TRUE(cache.Verify(digest, kWeights.size()));
}

TEST(WeightCache, BytesOfAnotherDigestAreRefusedAndLeaveNothing) {
  const WeightCache cache = TestCache("mismatch");
  const ContentDigest digest = DigestOfContent(kWeights);
  std::string altered = kWeights;
  altered[3] ^= 1;
  {
    Result<WeightCacheWriter> writer = cache.Begin(digest, altered.size());
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->Append(Bytes(altered)));
    const Status committed = writer->Commit();
    ASSERT_FALSE(committed);
    EXPECT_EQ(committed.error().kind, ErrorKind::kCorruption);
    EXPECT_NE(committed.error().message.find(DigestHex(digest)), std::string::npos)
        << committed.error().message;
  }
  EXPECT_FALSE(Exists(cache.PathOf(digest)));
  EXPECT_FALSE(Exists(cache.PathOf(digest) + ".partial"));
}

TEST(WeightCache, CutTransferLeavesNothingUnderTheFinalName) {
  const WeightCache cache = TestCache("cut");
  const ContentDigest digest = DigestOfContent(kWeights);
  {
    Result<WeightCacheWriter> writer = cache.Begin(digest, kWeights.size());
    ASSERT_TRUE(writer);
    const Status short_piece = writer->Append(Bytes(kWeights.substr(0, 5)));
    ASSERT_FALSE(short_piece);
    EXPECT_NE(short_piece.error().message.find("a piece of 5 bytes"), std::string::npos)
        << short_piece.error().message;
    const Status committed = writer->Commit();
    ASSERT_FALSE(committed);
    EXPECT_NE(committed.error().message.find("0 of the 23 bytes"), std::string::npos)
        << committed.error().message;
  }
  EXPECT_FALSE(Exists(cache.PathOf(digest)));
  EXPECT_FALSE(Exists(cache.PathOf(digest) + ".partial"));
}

TEST(WeightCache, MoreBytesThanAnnouncedAreRefused) {
  const WeightCache cache = TestCache("long");
  Result<WeightCacheWriter> writer = cache.Begin(DigestOfContent(kWeights), 4);
  ASSERT_TRUE(writer);
  const Status appended = writer->Append(Bytes(kWeights));
  ASSERT_FALSE(appended);
  EXPECT_EQ(appended.error().kind, ErrorKind::kCorruption);
}

TEST(WeightCache, DamagedEntryIsCorruptionNamingTheFile) {
  const WeightCache cache = TestCache("damaged");
  const ContentDigest digest = DigestOfContent(kWeights);
  Result<WeightCacheWriter> writer = cache.Begin(digest, kWeights.size());
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->Append(Bytes(kWeights)));
  ASSERT_TRUE(writer->Commit());
  {
    std::fstream file(cache.PathOf(digest), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(7);
    file.put('X');
  }
  const Status altered = cache.Verify(digest, kWeights.size());
  ASSERT_FALSE(altered);
  EXPECT_EQ(altered.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(altered.error().message.find(cache.PathOf(digest)), std::string::npos);
  { std::ofstream truncated(cache.PathOf(digest), std::ios::binary | std::ios::trunc); }
  const Status short_file = cache.Verify(digest, kWeights.size());
  ASSERT_FALSE(short_file);
  EXPECT_NE(short_file.error().message.find("holds 0 bytes"), std::string::npos)
      << short_file.error().message;
}

}  // namespace
}  // namespace inferno
