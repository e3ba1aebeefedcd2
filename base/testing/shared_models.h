// SharedModels: where tests find the real checkpoints of ../shared/models
// (beside the project's checkout; absent in a fresh clone, present in CI).
//
// Thread-safety: pure function.
#pragma once

#include <optional>
#include <string>

namespace inferno {

// The path of `file` in the shared models folder, or nullopt when the folder
// or file does not exist. The folder is $INFERNO_SHARED_MODELS if set, else
// ../shared/models relative to the project's root, found by resolving the
// runfiles symlink of `anchor` (a source file of the test's package listed in
// its `data`, e.g. "engine/BUILD"), so it works inside Bazel's sandbox.
std::optional<std::string> FindSharedModel(const std::string& file, const std::string& anchor);

}  // namespace inferno
