#include "tensor/tensor_info.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(StoredBytes, RowsMustBeWholeBlocks) {
  EXPECT_EQ(StoredBytes({"w", DType::kQ8_0, {3, 64}}).value(), 3 * 68);
  EXPECT_EQ(StoredBytes({"s", DType::kF32, {}}).value(), 4);
  // 96 elements in all, but rows of 48 elements split blocks.
  const Result<int64_t> split = StoredBytes({"w", DType::kQ8_0, {2, 48}});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.error().message.find("shape [2, 48] x Q8_0"), std::string::npos) << split.error().message;
  EXPECT_FALSE(StoredBytes({"w", DType::kF32, {INT64_MAX / 2, 4}}).ok());
}

}  // namespace
}  // namespace inferno
