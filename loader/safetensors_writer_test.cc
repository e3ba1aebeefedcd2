#include "loader/safetensors_writer.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "loader/safetensors_format.h"

namespace inferno {
namespace {

std::string TempPath(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

std::vector<std::byte> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

TEST(WriteSafetensorsF32, WritesAPaddedHeaderMetadataAndData) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {-1.5f};
  const std::string path = TempPath("w.safetensors");
  Status s = WriteSafetensorsF32(path, {{"a.weight", {2, 3}, a}, {"b", {1}, b}}, {{"producer", "test"}});
  ASSERT_TRUE(s) << s.error().message;

  const std::vector<std::byte> file = ReadAll(path);
  Result<SafetensorsHeader> header = ParseSafetensorsHeader(file, path);
  ASSERT_TRUE(header) << header.error().message;
  EXPECT_EQ(header->data_begin % 8, 0u);
  EXPECT_EQ(header->metadata.at("producer"), "test");
  ASSERT_EQ(header->tensors.size(), 2u);
  EXPECT_EQ(header->tensors[0].info.name, "a.weight");
  EXPECT_EQ(header->tensors[0].info.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(header->tensors[1].info.name, "b");
  std::vector<float> read_a(6);
  std::memcpy(read_a.data(), file.data() + header->tensors[0].begin, 24);
  EXPECT_EQ(read_a, a);
  float read_b;
  std::memcpy(&read_b, file.data() + header->tensors[1].begin, 4);
  EXPECT_EQ(read_b, -1.5f);
}

TEST(WriteSafetensorsF32, DataSizeNotMatchingShapeIsAnErrorNamingTheTensor) {
  const std::vector<float> a = {1, 2, 3};
  Status s = WriteSafetensorsF32(TempPath("bad.safetensors"), {{"a", {2, 2}, a}}, {});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("'a'"), std::string::npos);
}

TEST(WriteSafetensorsF32, DuplicateNameIsAnError) {
  const std::vector<float> a = {1};
  EXPECT_FALSE(WriteSafetensorsF32(TempPath("dup.safetensors"), {{"a", {1}, a}, {"a", {1}, a}}, {}));
}

}  // namespace
}  // namespace inferno
