// libFuzzer target over the GGUF parser: any input either fails with a
// one-line message or yields tensors laid out in order at aligned offsets,
// which survive re-encoding with the same metadata.
//
//   bazel build --config=fuzz //loader:gguf_fuzzer
//   gguf_fuzzer loader/testdata/fuzz/gguf -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <glog/logging.h>

#include "loader/gguf_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  Result<GgufFile> parsed = ParseGgufFile(file, "fuzz.gguf");
  if (!parsed) {
    CHECK_EQ(parsed.error().message.find('\n'), std::string::npos) << parsed.error().message;
    return 0;
  }
  CHECK_EQ(parsed->data_begin % parsed->alignment, 0u);
  uint64_t at = parsed->data_begin;
  std::vector<GgufTensorInfo> infos;
  for (const GgufTensor& tensor : parsed->tensors) {
    CHECK_EQ(tensor.begin, at) << tensor.info.name;
    CHECK_EQ(tensor.end - tensor.begin, GgufTensorBytes(tensor.info)) << tensor.info.name;
    CHECK_LE(tensor.end, size);
    at = GgufPadded(tensor.end, parsed->alignment);
    infos.push_back(tensor.info);
  }
  CHECK_GE(at, size);

  std::string again = EncodeGgufHeader(parsed->metadata, infos, parsed->alignment);
  again.append(at - parsed->data_begin, '\0');
  Result<GgufFile> reparsed =
      ParseGgufFile(std::as_bytes(std::span(again.data(), again.size())), "re-encoded");
  CHECK(reparsed) << reparsed.error().message;
  CHECK_EQ(reparsed->tensors.size(), parsed->tensors.size());
  CHECK_EQ(reparsed->metadata.size(), parsed->metadata.size());
  for (size_t i = 0; i < parsed->metadata.size(); ++i) {
    CHECK(reparsed->metadata[i].key == parsed->metadata[i].key);
    CHECK(reparsed->metadata[i].value.type == parsed->metadata[i].value.type);
    CHECK_EQ(reparsed->metadata[i].value.values.size(), parsed->metadata[i].value.values.size());
  }
  return 0;
}
