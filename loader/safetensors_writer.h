// Writes f32 tensors as one safetensors file (see safetensors_format.h), e.g.
// toy models for tests. The file appears under `path` only once complete
// (AtomicFile).
//
// Thread-safety: pure function; concurrent calls must use distinct paths.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace inferno {

struct NamedTensorF32 {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> data;  // row-major, product(shape) elements
};

// Writes `tensors` in the given order, with `metadata` as "__metadata__".
// Fails on I/O errors, naming the file, and on a tensor whose data size does
// not match its shape or a duplicate name, naming the tensor.
Status WriteSafetensorsF32(const std::string& path, const std::vector<NamedTensorF32>& tensors,
                           const std::map<std::string, std::string>& metadata);

}  // namespace inferno
