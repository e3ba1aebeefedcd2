// Replays the tokenizer fuzzer's seed corpus (and any crash reproducers added
// to it) in the default build.
#include <gtest/gtest.h>

#include "distributed/testing/fuzz_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace inferno {
namespace {

TEST(TokenizerFuzzer, SeedCorpusPassesTheFuzzerChecks) {
  EXPECT_GE(ReplayFuzzCorpus("engine/testdata/fuzz/tokenizer", LLVMFuzzerTestOneInput), 4);
}

}  // namespace
}  // namespace inferno
