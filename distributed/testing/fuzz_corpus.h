// ReplayFuzzCorpus: runs a libFuzzer entry point (LLVMFuzzerTestOneInput) over
// every file of a seed-corpus folder, so that builds without libFuzzer (the
// default gcc build) exercise the same checks as the fuzzer. A failing input
// aborts (CHECK) exactly as it would under the fuzzer.
//
//   TEST(FrameHeaderFuzzer, SeedCorpusPasses) {
//     EXPECT_GT(ReplayFuzzCorpus("distributed/testdata/fuzz/frame_header",
//                                LLVMFuzzerTestOneInput), 0);
//   }
//
// Thread-safety: a free function; safe from any thread if `entry` is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace inferno {

using FuzzEntryPoint = int (*)(const uint8_t* data, size_t size);

// Calls `entry` on the bytes of each regular file in `folder` (a path
// relative to the test's working directory, i.e. the workspace root under
// Bazel), in name order. Returns how many files were replayed; fails the
// current gtest (and returns 0) if the folder cannot be listed or a file
// cannot be read.
int ReplayFuzzCorpus(const std::string& folder, FuzzEntryPoint entry);

}  // namespace inferno
