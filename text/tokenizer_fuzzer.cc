// libFuzzer target over BpeTokenizer::Load (llama2.c's tokenizer.bin reader)
// and the encoder and decoder of whatever vocabulary it accepts. Any input
// either fails with a one-line error naming the file, or loads a tokenizer
// whose Encode returns only ids inside its vocabulary and whose Decode takes
// every id (and a few outside) without crashing.
//
//   bazel build --config=fuzz //text:tokenizer_fuzzer
//   tokenizer_fuzzer text/testdata/fuzz/tokenizer -max_total_time=30
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <glog/logging.h>

#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  // Load reads a path: the input goes through an in-memory file.
  static const int fd = memfd_create("tokenizer_fuzzer", 0);
  CHECK_GE(fd, 0) << "memfd_create failed";
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  CHECK_EQ(ftruncate(fd, 0), 0);
  CHECK_EQ(pwrite(fd, data, size, 0), static_cast<ssize_t>(size));
  Result<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::Load(path);
  if (!tokenizer) {
    CHECK_EQ(tokenizer.error().message.find('\n'), std::string::npos) << tokenizer.error().message;
    CHECK_NE(tokenizer.error().message.find(path), std::string::npos) << tokenizer.error().message;
    return 0;
  }
  const int32_t vocab = (*tokenizer)->vocab_size();
  for (const char* text : {"Once upon a time", "a", " \xC3\xBC\xE6\x97\xA5 <0x41>\x01", "\xFF\xFE"}) {
    for (const int32_t id : (*tokenizer)->Encode(text)) {
      CHECK(id >= 0 && id < vocab) << "Encode(\"" << text << "\") gave id " << id << " of a " << vocab
                                   << "-token vocabulary";
    }
  }
  for (int32_t id = -1; id <= vocab; ++id) (void)(*tokenizer)->Decode(kLlama2cBosId, id);
  return 0;
}
