#include "distributed/testing/fuzz_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {

int ReplayFuzzCorpus(const std::string& folder, FuzzEntryPoint entry) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(folder, error)) {
    if (item.is_regular_file()) files.push_back(item.path());
  }
  if (error) {
    ADD_FAILURE() << folder << ": cannot list the corpus: " << error.message();
    return 0;
  }
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      ADD_FAILURE() << path << ": cannot read";
      return 0;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(path.string());
    entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  return static_cast<int>(files.size());
}

}  // namespace inferno
