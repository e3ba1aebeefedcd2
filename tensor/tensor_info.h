// TensorInfo: the description (name, dtype, shape) of one stored tensor, and
// its byte size in a file.
//
// Thread-safety: a plain value type and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/dtype.h"

namespace inferno {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Product of the shape (1 for a scalar). Precondition: the product fits in
  // int64 (checked when a file is parsed).
  int64_t num_elements() const;
};

// Bytes of a whole stored tensor. InvalidArgument, naming the shape and dtype
// (callers add the tensor's name and file), when its rows (last dimension; a
// scalar is one row of one element) are not whole blocks, or the size
// overflows int64.
Result<int64_t> StoredBytes(const TensorInfo& tensor);

// "[4, 8]" — for error messages.
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace inferno
