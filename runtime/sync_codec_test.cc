#include "runtime/sync_codec.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

// 70 values: two whole Q8_0 blocks and a tail of 6.
std::vector<float> Values() {
  std::vector<float> values(70);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + i % 5);
  return values;
}

// Encodes `values` and adds the decoding to `base`.
std::vector<float> RoundTrip(SyncDType dtype, const std::vector<float>& values, std::vector<float> base) {
  std::vector<std::byte> bytes(SyncBytes(dtype, static_cast<int64_t>(values.size())));
  EncodeSync(dtype, values, bytes);
  AddDecodedSync(dtype, bytes, base);
  return base;
}

TEST(SyncCodec, BytesPerType) {
  EXPECT_EQ(SyncBytes(SyncDType::kF32, 70), 280u);
  EXPECT_EQ(SyncBytes(SyncDType::kBF16, 70), 140u);
  EXPECT_EQ(SyncBytes(SyncDType::kQ8_0, 70), 3 * 34u);
  EXPECT_EQ(SyncBytes(SyncDType::kQ8_0, 64), 2 * 34u);
}

TEST(SyncCodec, F32IsExact) {
  const std::vector<float> values = Values();
  EXPECT_EQ(RoundTrip(SyncDType::kF32, values, std::vector<float>(values.size(), 0.0f)), values);
}

TEST(SyncCodec, BF16AndQ8_0StayWithinTheirRounding) {
  const std::vector<float> values = Values();
  for (SyncDType dtype : {SyncDType::kBF16, SyncDType::kQ8_0}) {
    const std::vector<float> decoded = RoundTrip(dtype, values, std::vector<float>(values.size(), 0.0f));
    for (size_t i = 0; i < values.size(); ++i) {
      // bf16: 8 significant bits; q8_0: half a step of the block's largest / 127.
      float bound = std::fabs(values[i]) / 256;
      if (dtype == SyncDType::kQ8_0) {
        const size_t block = i / 32 * 32;
        const size_t end = std::min(values.size(), block + 32);
        float largest = 0;
        for (size_t j = block; j < end; ++j) largest = std::max(largest, std::fabs(values[j]));
        bound = largest / 127 * 0.51f + largest / 1024;  // plus the f16 scale's rounding
      }
      EXPECT_LE(std::fabs(decoded[i] - values[i]), bound) << SyncDTypeName(dtype) << " element " << i;
    }
  }
}

TEST(SyncCodec, DecodingAddsToTheSum) {
  const std::vector<float> values(40, 0.5f);  // exact in bf16
  const std::vector<float> sum = RoundTrip(SyncDType::kBF16, values, std::vector<float>(40, 1.0f));
  EXPECT_EQ(sum, std::vector<float>(40, 1.5f));
}

TEST(SyncCodec, ParsesTheThreeNamesAndNamesTheFlagOtherwise) {
  for (SyncDType dtype : {SyncDType::kF32, SyncDType::kBF16, SyncDType::kQ8_0}) {
    Result<SyncDType> parsed = ParseSyncDType(SyncDTypeName(dtype));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, dtype);
  }
  Result<SyncDType> bad = ParseSyncDType("f16");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--sync-dtype: 'f16' is not f32, bf16 or q8_0");
}

}  // namespace
}  // namespace inferno
