// libFuzzer target over the llama2.c header reader: any input either fails
// with a one-line message or yields a layout whose tensors lie in order inside
// the file, with the config valid.
//
//   bazel build --config=fuzz //loader:llama2c_header_fuzzer
//   llama2c_header_fuzzer loader/testdata/fuzz/llama2c -max_total_time=30
#include <cstddef>
#include <cstdint>

#include <glog/logging.h>

#include "loader/llama2c_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  Result<Llama2cLayout> layout = ParseLlama2cFile(file, "fuzz.bin");
  if (!layout) {
    CHECK_EQ(layout.error().message.find('\n'), std::string::npos) << layout.error().message;
    return 0;
  }
  CHECK(layout->config.Validate("fuzz.bin"));
  CHECK_EQ(layout->file_bytes, size);
  uint64_t at = kLlama2cHeaderBytes;
  for (const Llama2cTensor& tensor : layout->tensors) {
    uint64_t bytes = sizeof(float);
    for (int64_t d : tensor.spec.shape) bytes *= static_cast<uint64_t>(d);
    CHECK_GE(tensor.offset, at) << tensor.spec.name;
    CHECK_LE(tensor.offset + bytes, size) << tensor.spec.name;
    at = tensor.offset + bytes;
  }
  return 0;
}
