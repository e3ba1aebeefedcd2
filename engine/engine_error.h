// EngineError: why building, running or driving the transformer failed, as a
// value — a bad flag, a prompt that does not fit the context, a token id
// outside the vocabulary, a checkpoint that does not match the shard, or a
// peer that failed mid-generation.
//
// The message is one line naming the flag, file, rank or op and the offending
// value, e.g. "--prompt-ids: token id 600 is outside the vocabulary [0, 512)".
//
// Thread-safety: a plain value type.
#pragma once

#include <string>

#include "distributed/expected.h"

namespace inferno {

struct EngineError {
  std::string message;
};

template <typename T>
using EngineResult = Expected<T, EngineError>;
using EngineStatus = Expected<void, EngineError>;

}  // namespace inferno
