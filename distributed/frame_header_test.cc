#include "distributed/frame_header.h"

#include <cstring>

#include <gtest/gtest.h>

namespace inferno {
namespace {

constexpr uint64_t kJob = 0x1234abcd5678ull;

FrameHeader SampleHeader() {
  FrameHeader header;
  header.op = CollectiveOp::kAllReduce;
  header.job_id = kJob;
  header.source_rank = 2;
  header.tag = 0xFFF00003u;
  header.sequence = 41;
  header.element_count = 1000;
  header.message_length = 4000;
  header.chunk_offset = 1000;
  header.payload_length = 3000;
  return header;
}

// Re-encodes after editing raw bytes so the checksum matches again.
void FixChecksum(EncodedFrameHeader& bytes) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < 60; ++i) {
    hash ^= static_cast<uint32_t>(bytes[i]);
    hash *= 16777619u;
  }
  for (size_t i = 0; i < 4; ++i) bytes[60 + i] = static_cast<std::byte>(hash >> (8 * i));
}

std::string DecodeError(const EncodedFrameHeader& bytes) {
  Result<FrameHeader> decoded = DecodeFrameHeader(bytes, kJob, 4);
  if (decoded.ok()) return "decoded fine";
  return decoded.error().message;
}

TEST(FrameHeader, RoundTripsEveryField) {
  const FrameHeader header = SampleHeader();
  Result<FrameHeader> decoded = DecodeFrameHeader(EncodeFrameHeader(header), kJob, 4);
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(decoded->op, header.op);
  EXPECT_EQ(decoded->job_id, header.job_id);
  EXPECT_EQ(decoded->source_rank, header.source_rank);
  EXPECT_EQ(decoded->tag, header.tag);
  EXPECT_EQ(decoded->sequence, header.sequence);
  EXPECT_EQ(decoded->element_count, header.element_count);
  EXPECT_EQ(decoded->message_length, header.message_length);
  EXPECT_EQ(decoded->chunk_offset, header.chunk_offset);
  EXPECT_EQ(decoded->payload_length, header.payload_length);
}

TEST(FrameHeader, EncodesMagicAsInfrBytes) {
  const EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  EXPECT_EQ(std::memcmp(bytes.data(), "INFR", 4), 0);
}

TEST(FrameHeader, RejectsShortHeader) {
  const EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  Result<FrameHeader> decoded = DecodeFrameHeader(std::span<const std::byte>(bytes).first(12), kJob, 4);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().message, "malformed frame: header is 12 bytes, expected 64");
}

TEST(FrameHeader, RejectsBadMagic) {
  EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  bytes[0] = std::byte{'X'};
  EXPECT_EQ(DecodeError(bytes), "malformed frame: bad magic number 0x52464e58");
}

TEST(FrameHeader, RejectsUnsupportedVersion) {
  EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  bytes[4] = std::byte{7};
  EXPECT_EQ(DecodeError(bytes), "malformed frame: unsupported version 7, expected 1");
}

TEST(FrameHeader, RejectsCorruptedChecksum) {
  EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  bytes[30] ^= std::byte{1};
  EXPECT_NE(DecodeError(bytes).find("bad header checksum"), std::string::npos);
}

TEST(FrameHeader, RejectsUnknownOp) {
  EncodedFrameHeader bytes = EncodeFrameHeader(SampleHeader());
  bytes[6] = std::byte{200};
  FixChecksum(bytes);
  EXPECT_EQ(DecodeError(bytes), "malformed frame: unknown collective op 200");
}

TEST(FrameHeader, RejectsForeignJob) {
  FrameHeader header = SampleHeader();
  header.job_id = 7;
  EXPECT_EQ(DecodeError(EncodeFrameHeader(header)),
            "malformed frame: frame of job 0x7, this is job 0x1234abcd5678");
}

TEST(FrameHeader, RejectsSourceRankOutsideWorld) {
  FrameHeader header = SampleHeader();
  header.source_rank = 4;
  EXPECT_EQ(DecodeError(EncodeFrameHeader(header)), "malformed frame: source rank 4 outside world of 4");
}

TEST(FrameHeader, RejectsChunkOutsideMessage) {
  FrameHeader header = SampleHeader();
  header.chunk_offset = 3999;
  EXPECT_EQ(DecodeError(EncodeFrameHeader(header)),
            "malformed frame: chunk [3999, +3000) outside message of 4000 bytes");
}

TEST(FrameHeader, RejectsPayloadAboveChunkLimit) {
  FrameHeader header = SampleHeader();
  header.message_length = 4u << 20;
  header.chunk_offset = 0;
  header.payload_length = kMaxChunkBytes + 1;
  EXPECT_NE(DecodeError(EncodeFrameHeader(header)).find("exceeds the chunk limit"), std::string::npos);
}

TEST(CollectiveOpName, NamesKnownAndUnknownOps) {
  EXPECT_EQ(CollectiveOpName(CollectiveOp::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(CollectiveOpName(CollectiveOp::kGoodbye), "goodbye");
  EXPECT_EQ(CollectiveOpName(static_cast<CollectiveOp>(77)), "op#77");
}

}  // namespace
}  // namespace inferno
