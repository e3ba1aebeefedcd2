#include "base/testing/shared_models.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace inferno {

std::optional<std::string> FindSharedModel(const std::string& file, const std::string& anchor) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path folder;
  if (const char* env = std::getenv("INFERNO_SHARED_MODELS"); env != nullptr && *env != '\0') {
    folder = env;
  } else {
    fs::path runfile = anchor;
    if (const char* srcdir = std::getenv("TEST_SRCDIR"); srcdir != nullptr) {
      const char* workspace = std::getenv("TEST_WORKSPACE");
      runfile = fs::path(srcdir) / (workspace != nullptr ? workspace : "inferno") / anchor;
    }
    const fs::path source = fs::canonical(runfile, error);
    if (error) return std::nullopt;
    // anchor is "<package>/<file>": climb one level per path component.
    fs::path root = source;
    const fs::path anchor_path = anchor;
    for (auto it = anchor_path.begin(); it != anchor_path.end(); ++it) root = root.parent_path();
    folder = root.parent_path() / "shared" / "models";
  }
  const fs::path path = folder / file;
  if (!fs::is_regular_file(path, error)) return std::nullopt;
  return path.string();
}

}  // namespace inferno
