// The wire format of every message between ranks: one fixed 64-byte header in
// front of each frame's payload. This file is the one place that defines it.
//
// Layout (all integers little-endian):
//   offset size field
//        0    4 magic            kFrameMagic ("INFR" read as bytes)
//        4    2 version          kFrameVersion
//        6    1 op               CollectiveOp that produced the frame
//        7    1 flags            0 (reserved)
//        8    8 job_id           the job this frame belongs to
//       16    4 source_rank      the sender's rank in the transport's world
//       20    4 tag              point-to-point tag, or a group's reserved tag
//       24    8 sequence         the sending group's collective sequence number
//       32    8 element_count    the collective's total length on the sender
//                                (elements), to detect length mismatches
//       40    8 message_length   bytes of the whole message
//       48    8 chunk_offset     byte offset of this frame's payload in it
//       56    4 payload_length   bytes of payload following this header
//       60    4 checksum         FNV-1a 32 of bytes [0, 60)
//
// A message larger than kMaxChunkBytes travels as several frames with
// increasing chunk_offset, sent back to back by one sender.
//
// Thread-safety: free functions on values; safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"

namespace inferno {

inline constexpr uint32_t kFrameMagic = 0x52464E49u;  // bytes "INFR"
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 64;
inline constexpr uint32_t kMaxChunkBytes = 1u << 20;
// Tags at and above this are reserved for collectives: group g's travel
// under kTagReservedBase + g, which no point-to-point tag can equal.
inline constexpr uint32_t kTagReservedBase = 0xFFF00000u;

// What produced a frame. Values are on the wire: append, never renumber, and
// give each new value its name in kCollectiveOpNames below (the decoder
// knows exactly the ops named there). Which collectives run in a group's
// shared-memory area is said by each collective's own file
// (distributed/collectives/), not here.
enum class CollectiveOp : uint8_t {
  kPointToPoint = 1,
  kBarrier = 2,
  kAllReduce = 3,
  kAllGather = 4,
  kBroadcast = 5,
  kReduceScatter = 6,
  kGather = 7,
  kScatter = 8,
  kSplit = 9,
  // Sent by a transport closing in order: the source sends nothing more.
  kGoodbye = 10,
  // Sent by a rank giving up on the job: the payload is its reason (text);
  // the source sends nothing more.
  kAbort = 11,
  // A liveness probe (header only): the receiver answers with kPong.
  kPing = 12,
  kPong = 13,
  // A group's first collective on shared memory sets up its CollectiveArea
  // as a collective of its own (ProcessGroup).
  kSetUpArea = 14,
  // A liveness heartbeat (ZmqTransport): the payload is how long the
  // sender has been stalled, in milliseconds, as 8 little-endian bytes (see
  // base/progress.h).
  kHeartbeat = 15,
  // The first frame on a direct data connection (distributed/tcp): header
  // only; its sealing proves the connecting rank holds the key.
  kHello = 16,
};

// The name of op value v at index v (index 0 is no op): the one list of the
// ops a frame may carry.
inline constexpr std::string_view kCollectiveOpNames[] = {
    "",          "point_to_point", "barrier", "all_reduce", "all_gather",
    "broadcast", "reduce_scatter", "gather",  "scatter",    "split",
    "goodbye",   "abort",          "ping",    "pong",       "set_up_area",
    "heartbeat", "hello",
};

// "all_reduce", "point_to_point", ...; "op#<n>" for values outside the enum.
std::string CollectiveOpName(CollectiveOp op);

struct FrameHeader {
  CollectiveOp op = CollectiveOp::kPointToPoint;
  uint64_t job_id = 0;
  uint32_t source_rank = 0;
  uint32_t tag = 0;
  uint64_t sequence = 0;
  uint64_t element_count = 0;
  uint64_t message_length = 0;
  uint64_t chunk_offset = 0;
  uint32_t payload_length = 0;
};

using EncodedFrameHeader = std::array<std::byte, kFrameHeaderBytes>;

// Serializes `header` (magic, version and checksum filled in).
EncodedFrameHeader EncodeFrameHeader(const FrameHeader& header);

// Parses and validates a header received from the network. Fails with a
// Transport error whose message gives the precise reason ("bad magic number
// 0x...", "frame of job 7, this is job 9", "source rank 12 outside world of
// 4", ...) when `bytes` is not exactly one well-formed header of job
// `expected_job_id` from a rank in [0, world_size) whose chunk lies inside its
// message and is at most kMaxChunkBytes.
Result<FrameHeader> DecodeFrameHeader(std::span<const std::byte> bytes, uint64_t expected_job_id,
                                      int world_size);

}  // namespace inferno
