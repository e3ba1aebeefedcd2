#include "loader/column_slice.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

// Byte (r, c) of the test matrix.
std::byte Cell(int64_t r, int64_t c) { return static_cast<std::byte>(r * 16 + c); }

// Serves rows of a (rows, row_bytes) matrix of Cell values, recording the
// ranges it was asked for.
struct RowSource {
  int64_t row_bytes;
  std::vector<std::pair<int64_t, int64_t>> asked;
  Status operator()(int64_t begin, int64_t end, std::span<std::byte> into) {
    asked.emplace_back(begin, end);
    EXPECT_EQ(into.size(), static_cast<size_t>((end - begin) * row_bytes));
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t c = 0; c < row_bytes; ++c) into[(r - begin) * row_bytes + c] = Cell(r, c);
    }
    return {};
  }
};

TEST(ColumnSliceTest, ReadsRunsOfRowsInOrderAndKeepsTheColumns) {
  RowSource source{8, {}};
  std::vector<std::byte> out(5 * 3);
  ASSERT_TRUE(ReadColumnSlice(5, 8, 2, 3, out, std::ref(source), /*max_read_bytes=*/16));
  const std::vector<std::pair<int64_t, int64_t>> runs = {{0, 2}, {2, 4}, {4, 5}};
  EXPECT_EQ(source.asked, runs);
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(out[r * 3 + c], Cell(r, 2 + c)) << r << "," << c;
  }
}

TEST(ColumnSliceTest, ReadsOneRowAtATimeWhenARowIsLargerThanTheBound) {
  RowSource source{8, {}};
  std::vector<std::byte> out(3 * 8);
  ASSERT_TRUE(ReadColumnSlice(3, 8, 0, 8, out, std::ref(source), /*max_read_bytes=*/5));
  const std::vector<std::pair<int64_t, int64_t>> runs = {{0, 1}, {1, 2}, {2, 3}};
  EXPECT_EQ(source.asked, runs);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out[r * 8 + c], Cell(r, c));
  }
}

TEST(ColumnSliceTest, ReturnsTheFirstReadErrorAndStops) {
  int calls = 0;
  std::vector<std::byte> out(4 * 2);
  const Status status = ReadColumnSlice(
      4, 4, 1, 2, out,
      [&](int64_t begin, int64_t, std::span<std::byte>) -> Status {
        ++calls;
        if (begin > 0) return Error::Corruption("row " + std::to_string(begin) + " is unreadable");
        return {};
      },
      /*max_read_bytes=*/8);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, "row 2 is unreadable");
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace inferno
