// Replays the manifest fuzzer's seed corpus (and any crash reproducers added
// to it) in the default build.
#include <gtest/gtest.h>

#include "distributed/testing/fuzz_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace inferno {
namespace {

TEST(ManifestFuzzer, SeedCorpusPassesTheFuzzerChecks) {
  EXPECT_GE(ReplayFuzzCorpus("loader/testdata/fuzz/manifest", LLVMFuzzerTestOneInput), 5);
}

}  // namespace
}  // namespace inferno
