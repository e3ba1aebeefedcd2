// libFuzzer target over DecodeFrameHeader, the first code that sees bytes
// from the network. Input: the 64 header bytes (or fewer/more, to exercise the
// size check), then optionally one byte choosing the world size. The job id
// expected is the one in the input, so the fuzzer can get past that check.
// Any input either fails with a one-line "malformed frame: ..." error, or
// decodes to a header that satisfies the documented invariants and encodes
// back to exactly the same bytes.
//
//   bazel build --config=fuzz //distributed:frame_header_fuzzer
//   frame_header_fuzzer distributed/testdata/fuzz/frame_header -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include <glog/logging.h>

#include "distributed/frame_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const size_t header_size = size > kFrameHeaderBytes ? kFrameHeaderBytes : size;
  const int world_size = size > kFrameHeaderBytes ? 1 + data[kFrameHeaderBytes] % 16 : 4;
  uint64_t job_id = 0;
  if (size >= 16) std::memcpy(&job_id, data + 8, sizeof(job_id));  // little-endian hosts only
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), header_size);

  Result<FrameHeader> header = DecodeFrameHeader(bytes, job_id, world_size);
  if (!header) {
    CHECK(header.error().kind == ErrorKind::kTransport) << header.error().ToString();
    CHECK_EQ(header.error().message.find('\n'), std::string::npos) << header.error().message;
    CHECK_EQ(header.error().message.rfind("malformed frame: ", 0), 0u) << header.error().message;
    return 0;
  }
  CHECK_EQ(header_size, kFrameHeaderBytes);
  CHECK_EQ(header->job_id, job_id);
  CHECK_LT(header->source_rank, static_cast<uint32_t>(world_size));
  CHECK_LE(header->payload_length, kMaxChunkBytes);
  CHECK_LE(header->chunk_offset, header->message_length);
  CHECK_LE(header->payload_length, header->message_length - header->chunk_offset);
  const EncodedFrameHeader encoded = EncodeFrameHeader(*header);
  CHECK_EQ(std::memcmp(encoded.data(), data, kFrameHeaderBytes), 0) << "decode/encode round trip differs";
  return 0;
}
