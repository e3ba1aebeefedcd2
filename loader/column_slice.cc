#include "loader/column_slice.h"

#include <algorithm>
#include <vector>

namespace inferno {

Status ReadColumnSlice(int64_t rows, int64_t row_bytes, int64_t column_offset, int64_t column_bytes,
                       std::span<std::byte> out, const ReadRowRange& read_rows, int64_t max_read_bytes) {
  const int64_t run = std::max<int64_t>(1, max_read_bytes / std::max<int64_t>(1, row_bytes));
  std::vector<std::byte> chunk(static_cast<size_t>(std::min(run, rows) * row_bytes));
  for (int64_t begin = 0; begin < rows; begin += run) {
    const int64_t end = std::min(rows, begin + run);
    const std::span<std::byte> read(chunk.data(), static_cast<size_t>((end - begin) * row_bytes));
    if (Status status = read_rows(begin, end, read); !status) return status;
    for (int64_t r = begin; r < end; ++r) {
      std::copy_n(read.data() + (r - begin) * row_bytes + column_offset, column_bytes,
                  out.data() + r * column_bytes);
    }
  }
  return {};
}

}  // namespace inferno
