// The limits a chat template render keeps, so a runaway template stops with
// an error instead of exhausting memory or time (renderer.h, where they are
// described, and the expression evaluation and operators it uses).
//
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inferno::chat {

inline constexpr size_t kMaxOutputBytes = 64 << 20;
inline constexpr size_t kMaxListItems = 1 << 20;
inline constexpr int64_t kMaxLoopIterations = 100'000;

}  // namespace inferno::chat
