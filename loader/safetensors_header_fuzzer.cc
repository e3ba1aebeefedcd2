// libFuzzer target over the safetensors header parser: any input either fails
// with a one-line message or yields tensors that tile the data section
// exactly and survive re-encoding.
//
//   bazel build --config=fuzz //loader:safetensors_header_fuzzer
//   safetensors_header_fuzzer loader/testdata/fuzz/safetensors -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <glog/logging.h>

#include "loader/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  Result<SafetensorsHeader> header = ParseSafetensorsHeader(file, "fuzz.safetensors");
  if (!header) {
    CHECK_EQ(header.error().message.find('\n'), std::string::npos) << header.error().message;
    return 0;
  }
  uint64_t at = header->data_begin;
  std::vector<TensorInfo> infos;
  for (const SafetensorsEntry& entry : header->tensors) {
    CHECK_EQ(entry.begin, at) << entry.info.name;
    CHECK_EQ(entry.end - entry.begin, TensorByteSize(entry.info)) << entry.info.name;
    at = entry.end;
    infos.push_back(entry.info);
  }
  CHECK_EQ(at, size);

  const std::string encoded = EncodeSafetensorsHeader(infos, header->metadata);
  std::vector<std::byte> copy(encoded.size() + (size - header->data_begin));
  std::memcpy(copy.data(), encoded.data(), encoded.size());
  Result<SafetensorsHeader> again = ParseSafetensorsHeader(copy, "re-encoded");
  CHECK(again) << again.error().message;
  CHECK_EQ(again->tensors.size(), header->tensors.size());
  CHECK(again->metadata == header->metadata);
  return 0;
}
