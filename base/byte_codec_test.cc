#include "base/byte_codec.h"

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(ByteCodec, IntegersAreStoredLeastSignificantByteFirst) {
  std::array<std::byte, 4> out{};
  StoreLittleEndian<uint32_t>(out, 0x11223344u);
  EXPECT_EQ(out[0], std::byte{0x44});
  EXPECT_EQ(out[1], std::byte{0x33});
  EXPECT_EQ(out[2], std::byte{0x22});
  EXPECT_EQ(out[3], std::byte{0x11});
}

TEST(ByteCodec, FloatsAreStoredAsTheirIeeeBitsLittleEndian) {
  std::array<std::byte, 4> out{};
  StoreLittleEndian<float>(out, 1.0f);  // 0x3f800000
  EXPECT_EQ(out[0], std::byte{0x00});
  EXPECT_EQ(out[3], std::byte{0x3f});
  EXPECT_EQ(out[2], std::byte{0x80});
}

TEST(ByteCodec, EveryScalarRoundTripsThroughWriterAndReader) {
  std::vector<std::byte> bytes(1 + 2 + 4 + 8 + 4 + 8 + 4 + 3);
  ByteWriter writer(bytes);
  writer.Put<uint8_t>(0xab);
  writer.Put<int16_t>(-2);
  writer.Put<int32_t>(std::numeric_limits<int32_t>::min());
  writer.Put<uint64_t>(0x0102030405060708ull);
  writer.Put<float>(-0.375f);
  writer.Put<double>(1e300);
  writer.Put<int32_t>(-1);
  writer.PutString("abc");
  EXPECT_EQ(writer.offset(), bytes.size());

  ByteReader reader(bytes);
  uint8_t u8 = 0;
  int16_t i16 = 0;
  int32_t i32 = 0, minus_one = 0;
  uint64_t u64 = 0;
  float f = 0;
  double d = 0;
  std::span<const std::byte> text;
  ASSERT_TRUE(reader.Get(u8) && reader.Get(i16) && reader.Get(i32) && reader.Get(u64) && reader.Get(f) &&
              reader.Get(d) && reader.Get(minus_one) && reader.GetBytes(3, text));
  EXPECT_EQ(u8, 0xab);
  EXPECT_EQ(i16, -2);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::min());
  EXPECT_EQ(u64, 0x0102030405060708ull);
  EXPECT_EQ(f, -0.375f);
  EXPECT_EQ(d, 1e300);
  EXPECT_EQ(minus_one, -1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(text.data()), text.size()), "abc");
  EXPECT_EQ(reader.remaining(), 0u);
}

TEST(ByteCodec, ReadPastTheEndFailsAndConsumesNothing) {
  const std::array<std::byte, 3> bytes{std::byte{1}, std::byte{2}, std::byte{3}};
  ByteReader reader(bytes);
  uint32_t value = 7;
  EXPECT_FALSE(reader.Get(value));
  EXPECT_EQ(value, 7u);
  EXPECT_EQ(reader.offset(), 0u);
  std::span<const std::byte> view;
  EXPECT_FALSE(reader.GetBytes(4, view));
  uint16_t first = 0;
  EXPECT_TRUE(reader.Get(first));
  EXPECT_EQ(first, 0x0201);
  EXPECT_EQ(reader.rest().size(), 1u);
}

TEST(ByteCodecDeathTest, WritingPastTheEndIsAProgrammerError) {
  std::array<std::byte, 2> bytes{};
  ByteWriter writer(bytes);
  EXPECT_DEATH(writer.Put<uint32_t>(1), "past the end");
}

}  // namespace
}  // namespace inferno
