// TEST ONLY: how the liveness tests (tests/rank_fault_test.sh) make one
// rank's generator thread hang, as a deadlock in the middle of a step would.
// Never set the variable outside a test.
//
// INFERNO_TEST_ONLY_HANG=R:S: rank R's generator thread, as it begins its
// S-th forward pass (S >= 1), prints one line to stderr and then blocks
// forever in a wait that nothing ends: inside its step (base/progress.h's
// ProgressExpected), making no progress and waiting on no peer, while the
// rest of the process (its transport's heartbeats) runs on. Read in one
// place, by RunGenerator.
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "base/error.h"

namespace inferno {

inline constexpr char kTestOnlyHangVariable[] = "INFERNO_TEST_ONLY_HANG";

// The forward pass at which rank `rank` must hang, from
// getenv(kTestOnlyHangVariable) (nullptr: unset); nullopt when unset or
// naming another rank. Errors: InvalidArgument naming the variable and
// quoting its value when it is not R:S with R >= 0 and S >= 1.
Result<std::optional<int64_t>> TestOnlyHangStep(const std::function<const char*(const char*)>& getenv,
                                                int rank);

// Prints "rank R: INFERNO_TEST_ONLY_HANG: hanging at forward pass S at
// <unix time in ms>" to stderr, then blocks the calling thread forever.
[[noreturn]] void TestOnlyHangForever(int rank, int64_t step);

}  // namespace inferno
