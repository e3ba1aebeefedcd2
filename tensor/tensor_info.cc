#include "tensor/tensor_info.h"

#include <string>

namespace inferno {

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<int64_t> StoredBytes(const TensorInfo& tensor) {
  const std::string what =
      "shape " + ShapeToString(tensor.shape) + " x " + std::string(DTypeName(tensor.dtype));
  const int64_t row_elements = tensor.shape.empty() ? 1 : tensor.shape.back();
  Result<int64_t> row_bytes = DTypeBytes(tensor.dtype, row_elements);
  if (!row_bytes) return Error::InvalidArgument(what + ": rows of " + row_bytes.error().message);
  int64_t bytes = *row_bytes;
  for (size_t d = 0; d + 1 < tensor.shape.size(); ++d) {
    if (tensor.shape[d] < 0 || __builtin_mul_overflow(bytes, tensor.shape[d], &bytes)) {
      return Error::InvalidArgument(what + " overflows 64 bits");
    }
  }
  return bytes;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace inferno
