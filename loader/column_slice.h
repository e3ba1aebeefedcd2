// ReadColumnSlice: a column slice of a row-major matrix, read a run of rows
// at a time, so that taking a tensor-parallel rank's columns of a weight
// matrix never holds the whole matrix in memory.
//
// Thread-safety: a pure function of its arguments; `read_rows` is called
// from the caller's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "base/error.h"

namespace inferno {

// Reads rows [row_begin, row_end) of the matrix, row_bytes each, back to back
// into `into` (exactly their bytes).
using ReadRowRange = std::function<Status(int64_t row_begin, int64_t row_end, std::span<std::byte> into)>;

// How many bytes of rows ReadColumnSlice reads at once by default.
inline constexpr int64_t kColumnSliceReadBytes = int64_t{16} << 20;

// out (rows, column_bytes) = bytes [column_offset, column_offset +
// column_bytes) of each of the `rows` rows of row_bytes bytes that
// `read_rows` gives, reading at most max(row_bytes, max_read_bytes) bytes at
// a time, in row order. Returns read_rows' first error. Preconditions:
// column_offset + column_bytes <= row_bytes; out.size() == rows *
// column_bytes.
Status ReadColumnSlice(int64_t rows, int64_t row_bytes, int64_t column_offset, int64_t column_bytes,
                       std::span<std::byte> out, const ReadRowRange& read_rows,
                       int64_t max_read_bytes = kColumnSliceReadBytes);

}  // namespace inferno
