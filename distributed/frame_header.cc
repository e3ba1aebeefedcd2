#include "distributed/frame_header.h"

#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "base/byte_codec.h"

namespace inferno {
namespace {

constexpr size_t kChecksumOffset = 60;

template <typename T>
void Put(EncodedFrameHeader& out, size_t offset, T value) {
  StoreLittleEndian<T>(std::span(out).subspan(offset), value);
}

template <typename T>
T Get(std::span<const std::byte> in, size_t offset) {
  return LoadLittleEndian<T>(in.subspan(offset));
}

uint32_t Fnv1a32(std::span<const std::byte> bytes) {
  uint32_t hash = 2166136261u;
  for (std::byte b : bytes) {
    hash ^= static_cast<uint32_t>(b);
    hash *= 16777619u;
  }
  return hash;
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

bool IsKnownOp(uint8_t op) { return op >= 1 && op < std::size(kCollectiveOpNames); }

Error Malformed(const std::string& reason) { return Error::Transport("malformed frame: " + reason); }

}  // namespace

std::string CollectiveOpName(CollectiveOp op) {
  const auto value = static_cast<uint8_t>(op);
  if (IsKnownOp(value)) return std::string(kCollectiveOpNames[value]);
  return "op#" + std::to_string(static_cast<int>(op));
}

EncodedFrameHeader EncodeFrameHeader(const FrameHeader& header) {
  EncodedFrameHeader out{};
  Put<uint32_t>(out, 0, kFrameMagic);
  Put<uint16_t>(out, 4, kFrameVersion);
  Put<uint8_t>(out, 6, static_cast<uint8_t>(header.op));
  Put<uint8_t>(out, 7, 0);
  Put<uint64_t>(out, 8, header.job_id);
  Put<uint32_t>(out, 16, header.source_rank);
  Put<uint32_t>(out, 20, header.tag);
  Put<uint64_t>(out, 24, header.sequence);
  Put<uint64_t>(out, 32, header.element_count);
  Put<uint64_t>(out, 40, header.message_length);
  Put<uint64_t>(out, 48, header.chunk_offset);
  Put<uint32_t>(out, 56, header.payload_length);
  Put<uint32_t>(out, kChecksumOffset, Fnv1a32(std::span(out).first(kChecksumOffset)));
  return out;
}

Result<FrameHeader> DecodeFrameHeader(std::span<const std::byte> bytes, uint64_t expected_job_id,
                                      int world_size) {
  if (bytes.size() != kFrameHeaderBytes) {
    return Malformed("header is " + std::to_string(bytes.size()) + " bytes, expected " +
                     std::to_string(kFrameHeaderBytes));
  }
  const uint32_t magic = Get<uint32_t>(bytes, 0);
  if (magic != kFrameMagic) return Malformed("bad magic number " + Hex(magic));
  const uint16_t version = Get<uint16_t>(bytes, 4);
  if (version != kFrameVersion) {
    return Malformed("unsupported version " + std::to_string(version) + ", expected " +
                     std::to_string(kFrameVersion));
  }
  const uint32_t checksum = Get<uint32_t>(bytes, kChecksumOffset);
  const uint32_t computed = Fnv1a32(bytes.first(kChecksumOffset));
  if (checksum != computed) {
    return Malformed("bad header checksum " + Hex(checksum) + ", computed " + Hex(computed));
  }
  const uint8_t op = Get<uint8_t>(bytes, 6);
  if (!IsKnownOp(op)) return Malformed("unknown collective op " + std::to_string(op));
  const uint8_t flags = Get<uint8_t>(bytes, 7);
  if (flags != 0) return Malformed("unknown flags " + Hex(flags));

  FrameHeader header;
  header.op = static_cast<CollectiveOp>(op);
  header.job_id = Get<uint64_t>(bytes, 8);
  header.source_rank = Get<uint32_t>(bytes, 16);
  header.tag = Get<uint32_t>(bytes, 20);
  header.sequence = Get<uint64_t>(bytes, 24);
  header.element_count = Get<uint64_t>(bytes, 32);
  header.message_length = Get<uint64_t>(bytes, 40);
  header.chunk_offset = Get<uint64_t>(bytes, 48);
  header.payload_length = Get<uint32_t>(bytes, 56);

  if (header.job_id != expected_job_id) {
    return Malformed("frame of job " + Hex(header.job_id) + ", this is job " + Hex(expected_job_id));
  }
  if (header.source_rank >= static_cast<uint32_t>(world_size)) {
    return Malformed("source rank " + std::to_string(header.source_rank) + " outside world of " +
                     std::to_string(world_size));
  }
  if (header.payload_length > kMaxChunkBytes) {
    return Malformed("payload of " + std::to_string(header.payload_length) +
                     " bytes exceeds the chunk limit of " + std::to_string(kMaxChunkBytes));
  }
  if (header.chunk_offset > header.message_length ||
      header.payload_length > header.message_length - header.chunk_offset) {
    return Malformed("chunk [" + std::to_string(header.chunk_offset) + ", +" +
                     std::to_string(header.payload_length) + ") outside message of " +
                     std::to_string(header.message_length) + " bytes");
  }
  return header;
}

}  // namespace inferno
