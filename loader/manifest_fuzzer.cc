// libFuzzer target over the shard manifest reader (ParseManifestJson). Any
// input either fails with a one-line message naming the manifest, or yields a
// manifest whose JSON (ManifestToJson) parses back to the same JSON.
//
//   bazel build --config=fuzz //loader:manifest_fuzzer
//   manifest_fuzzer loader/testdata/fuzz/manifest -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <string>

#include <glog/logging.h>

#include "loader/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<Manifest> manifest = ParseManifestJson(text, "fuzz/manifest.json");
  if (!manifest) {
    CHECK_EQ(manifest.error().message.find('\n'), std::string::npos) << manifest.error().message;
    CHECK_NE(manifest.error().message.find("fuzz/manifest.json"), std::string::npos)
        << manifest.error().message;
    return 0;
  }
  const std::string json = ManifestToJson(*manifest);
  Result<Manifest> again = ParseManifestJson(json, "re-encoded manifest.json");
  CHECK(again) << again.error().message;
  CHECK_EQ(ManifestToJson(*again), json);
  return 0;
}
