// The main of every *_corpus_test: runs a libFuzzer target's
// LLVMFuzzerTestOneInput (linked into the same test) over each regular file
// of a seed-corpus folder, in name order, so that builds without libFuzzer
// (the default gcc build) exercise the same checks as the fuzzer. A failing
// input aborts (CHECK) exactly as it would under the fuzzer.
//
// Usage: CORPUS_FOLDER MIN_INPUTS (the folder relative to the workspace root,
// the test's working directory). Exits non-zero if the folder cannot be read
// or holds fewer than MIN_INPUTS files.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_FOLDER MIN_INPUTS\n", argv[0]);
    return 2;
  }
  const std::string folder = argv[1];
  const int min_inputs = std::atoi(argv[2]);
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(folder, error)) {
    if (item.is_regular_file()) files.push_back(item.path());
  }
  if (error) {
    std::fprintf(stderr, "%s: cannot list the corpus: %s\n", folder.c_str(), error.message().c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("%s\n", path.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("ran %zu inputs (at least %d expected)\n", files.size(), min_inputs);
  return static_cast<int>(files.size()) >= min_inputs ? 0 : 1;
}
