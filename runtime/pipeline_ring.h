// PipelineRing: one rank's ends of the ring its pipeline messages travel
// on. The ranks of tensor-parallel index t, one per stage, form a ring
// (stage s -> s+1, the last -> the first); each rank sends to its successor
// only and receives from its predecessor only, one message per step
// (pipeline_protocol.h: a header, or a group's headers, then the payload).
//
// Contract: Send never waits for the peer (the transport queues); Receive
// waits for the next message, up to the transport's timeout, and hands out
// its headers checked against what every rank knows (sequences are slots of
// the stage, distinct within a step but for a classify step's consecutive
// rows of one drafted sequence, at most max_messages of them) with
// payloads viewing the transport's buffer, so a hop copies its payload once,
// in TakePayload, into the caller's buffer. Errors name the peer and the op
// ("send hidden: send to rank 1: ...", "malformed message from rank 2: ...").
//
// Thread-safety: not thread-safe; called from the rank's generator thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/timeline.h"
#include "distributed/process_group.h"
#include "loader/shard_plan.h"
#include "runtime/pipeline_protocol.h"

namespace inferno {

class PipelineRing {
 public:
  // A received message, decoded into the messages of its step (one, or a
  // group's members, all of one kind): their payloads view `bytes`, the
  // transport's buffer, which lives as long as this does.
  struct Received {
    Payload bytes;
    std::vector<PipelineMessage> step;
  };

  // The ring of `part` (this rank's part of `plan`) over `group`, whose
  // steps name sequences in [0, num_slots) and hold at most `max_messages`
  // messages. `timeline` records sends, waits and payload copies. All must
  // outlive this.
  PipelineRing(ProcessGroup& group, const ShardPlan& plan, const RankShard& part, int num_slots,
               int64_t max_messages, Timeline& timeline);

  int successor() const { return successor_; }
  int predecessor() const { return predecessor_; }

  // Sends `header` and `payload` to the successor as one message; the
  // transport copies both straight from here into its buffers. `label`
  // names the op in the timeline and in errors.
  Status Send(const char* label, const MessageHeader& header, std::span<const std::byte> payload);

  // Sends the messages of one step to the successor: `headers` (all of one
  // kind, at least one) with their payloads, (headers.size(), one message's
  // payload) in `payload`; a group when there are several.
  Status SendStep(const char* label, std::span<const MessageHeader> headers,
                  std::span<const std::byte> payload);

  // Waits for the next message from the predecessor; decodes the headers of
  // its step and checks them (see above). The payload is not copied.
  Result<Received> Receive();

  // Copies `message`'s payload into `out`, which it must fill exactly: the
  // one copy of a hop on the receiving side (the stage computes in place).
  template <typename T>
  Status TakePayload(const char* label, const PipelineMessage& message, std::span<T> out) {
    TimedScope scope(timeline_, SpanKind::kRecv, label, SequenceOf(message.header));
    const size_t values = message.payload.size() / sizeof(T);
    if (values != out.size()) {
      return Malformed(std::string(label) + " of " + std::to_string(values) + " values, expected " +
                       std::to_string(out.size()));
    }
    if (!out.empty()) std::memcpy(out.data(), message.payload.data(), out.size_bytes());
    return {};
  }

  // Corruption: a malformed message from the predecessor, and `what`.
  Error Malformed(const std::string& what) const;

 private:
  Status SendBytes(const char* label, std::span<const std::byte> head, std::span<const std::byte> payload,
                   int sequence);

  ProcessGroup& group_;
  const int successor_;
  const int predecessor_;
  const int num_slots_;
  const int64_t max_messages_;
  Timeline& timeline_;
};

}  // namespace inferno
