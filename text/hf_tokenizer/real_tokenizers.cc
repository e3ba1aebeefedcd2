#include "text/hf_tokenizer/real_tokenizers.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace inferno::hf {

std::string RealTokenizersDir() {
  if (const char* dir = std::getenv("INFERNO_TOKENIZERS_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* cache = std::getenv("INFERNO_CACHE"); cache != nullptr && *cache != '\0') {
    return std::string(cache) + "/tokenizers";
  }
  const passwd* user = getpwuid(getuid());
  const std::string home = user != nullptr && user->pw_dir != nullptr ? user->pw_dir : "/root";
  return home + "/.cache/inferno/tokenizers";
}

std::optional<std::string> FindRealTokenizer(const std::string& name) {
  const std::string path = RealTokenizersDir() + "/" + name + "/models/tokenizer.json";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
  return path;
}

}  // namespace inferno::hf
