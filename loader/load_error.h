// LoadError: why reading a checkpoint, a shard or a manifest failed, as a value.
//
// The message is one line naming the file, the tensor and the offending value,
// e.g. "model.safetensors: tensor 'lm_head.weight': data offsets [0, 96) do not
// match shape [4, 8] x F32 = 128 bytes".
//
// Thread-safety: a plain value type.
#pragma once

#include <string>

#include "distributed/expected.h"

namespace inferno {

struct LoadError {
  std::string message;
};

template <typename T>
using LoadResult = Expected<T, LoadError>;
using LoadStatus = Expected<void, LoadError>;

}  // namespace inferno
