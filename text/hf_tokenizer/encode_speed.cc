// Encoding throughput of an HfTokenizer: loads TOKENIZER_JSON, encodes
// TEXT_FILE REPEAT times (the first pass fills the word cache) and prints
// MB/s and tokens.
//
//   bazel run -c opt //text/hf_tokenizer:encode_speed -- tokenizer.json text.txt 5
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "text/hf_tokenizer/hf_tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: encode_speed TOKENIZER_JSON TEXT_FILE [REPEAT]\n");
    return 2;
  }
  inferno::Result<std::unique_ptr<inferno::HfTokenizer>> tokenizer = inferno::HfTokenizer::Load(argv[1]);
  if (!tokenizer) {
    std::fprintf(stderr, "encode_speed: %s\n", tokenizer.error().ToString().c_str());
    return 1;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "encode_speed: %s: cannot open\n", argv[2]);
    return 1;
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  const std::string text = contents.str();
  const int repeat = argc == 4 ? std::atoi(argv[3]) : 3;
  for (int pass = 0; pass < repeat; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    const size_t tokens = (*tokenizer)->Encode(text).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("pass %d: %zu bytes -> %zu tokens in %.3f s: %.2f MB/s\n", pass, text.size(), tokens, seconds,
                text.size() / seconds / 1e6);
  }
  return 0;
}
