// The pipeline protocol: the messages the generator's ranks pass along their
// ring (see generator.h for who sends what to whom and when). One message per
// step, under kMessageTag (below kTagReservedBase): a 16-byte header of four
// little-endian i32 words [kind, sequence, a, b], then for some kinds a
// payload, f32 unless said otherwise (the host's values as they are; every
// supported host is little-endian, see the static_assert below):
//   kind 0, HiddenMessage   a = pos, b = n: payload (n, dim), the hidden
//                           states of positions [pos, pos + n); pos = 0
//                           starts the sequence in its slot anew. Stage to
//                           next stage.
//   kind 1, TokenMessage    a = the next token, b = pos, the position it
//                           runs at (behind the positions the stages ran
//                           when a draft was not kept: they cut back);
//                           no payload, or with speculative decoding
//                           (one_stage_loop.h), in a message alone, the
//                           draft: i32 token ids to run at the positions
//                           after it. Last stage to first.
//   kind 2, ClassifyMessage a = rows: payload (dim + rows), the
//                           final-normed hidden state, then the logits of
//                           classifier rows [0, rows). Last stage to first,
//                           then around the ring to the last. A drafted
//                           step's positions are consecutive members of
//                           one group, naming the same sequence.
//   kind 3, AdmitMessage    a = n, b = first: payload n i32 token ids, the
//                           prompt of a sequence starting in slot
//                           `sequence`, to be run from position `first`
//                           (0, or after a PrefixMessage, its plan's first
//                           position). Last stage to first.
//   kind 4, ControlMessage  sequence 0, a = signal (kTick: the ring is
//                           alive, and the stages' time so far; kEnd: the
//                           run ends). From the last stage once around the
//                           ring. A tick's payload is f64, on the ring of
//                           tensor-parallel index 0 (stages it has passed,
//                           tp, 2): the compute and wait seconds of each
//                           rank of each stage it has passed (its
//                           Timeline's totals), first stage first, ranks
//                           in tensor-parallel order; the last stage sends
//                           it empty and each other stage appends its
//                           ranks', so stage s receives s × tp pairs. On
//                           the other rings a tick is empty. An end has
//                           none.
//   kind 5, a group         sequence = count >= 1, a = b = 0: `count`
//                           messages of one kind (hidden, token or
//                           classify), each with the same payload size, as
//                           one step of a micro-batch group of sequences:
//                           their `count` 16-byte headers, then their
//                           payloads, (count, member payload) in the same
//                           order. So a hidden group of single positions
//                           carries the (count, dim) rows of one batched
//                           forward, and a classify group the (count, dim +
//                           rows) of one batched classifier pass.
//   kind 6, PrefixMessage   a = r, b = s: payload r + s i32 block ids, the
//                           prefix plan (prefix_plan.h) of the sequence
//                           about to start in slot `sequence`: r blocks to
//                           restore, s to store. From the last stage, just
//                           before the sequence's admit, once around the
//                           ring: each stage starts the slot with it as it
//                           passes (the last when it comes back).
// A sequence's number is its KV-cache slot; a slot is reused once its
// sequence has stopped. Where a kind has no b, it is written as 0 and not
// read.
//
//   const std::array<std::byte, kMessageHeaderBytes> header = EncodeMessageHeader(HiddenMessage{0, pos, n});
//   group.send_bytes(to, kMessageTag, header, std::as_bytes(hidden));
//
//   Result<PipelineMessage> message = DecodePipelineMessage(payload.bytes());
//   if (const auto* hidden = std::get_if<HiddenMessage>(&message->header)) ...
//
//   group.send_bytes(to, kMessageTag, EncodeGroupHeader(members), std::as_bytes(rows));
//   Result<std::vector<PipelineMessage>> step = DecodePipelineMessages(payload.bytes());
//
// Decoding checks what the bytes alone can tell (length, kind, sequence >= 0);
// what depends on the run (the number of sequences, dim, positions, rows) is
// the generator's to check.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "base/error.h"

namespace inferno {

static_assert(std::endian::native == std::endian::little,
              "pipeline payloads carry the host's floats, which the protocol defines as little-endian");

inline constexpr uint32_t kMessageTag = 102;

// The header's first word.
enum class MessageKind : int32_t {
  kHidden = 0,
  kToken = 1,
  kClassify = 2,
  kAdmit = 3,
  kControl = 4,
  kGroup = 5,
  kPrefix = 6,
};

// Four i32 words: kind, sequence, a, b.
inline constexpr size_t kMessageHeaderBytes = 4 * sizeof(int32_t);

// Hidden states (n, dim) of positions [pos, pos + n) of `sequence`.
struct HiddenMessage {
  int32_t sequence = 0;
  int32_t pos = 0;
  int32_t n = 0;
};

// The next token of `sequence`, to run at position `pos`.
struct TokenMessage {
  int32_t sequence = 0;
  int32_t token = 0;
  int32_t pos = 0;
};

// The final-normed hidden state of `sequence` (dim) and the logits of
// classifier rows [0, rows).
struct ClassifyMessage {
  int32_t sequence = 0;
  int32_t rows = 0;
};

// The prompt of a sequence starting in slot `sequence`: n token ids (i32),
// run from position `first`.
struct AdmitMessage {
  int32_t sequence = 0;
  int32_t n = 0;
  int32_t first = 0;
};

// The prefix plan of the sequence starting in slot `sequence`: `restored`
// then `stored` block ids (i32).
struct PrefixMessage {
  int32_t sequence = 0;
  int32_t restored = 0;
  int32_t stored = 0;
};

// A message about the ring itself rather than a sequence (`sequence` is 0).
struct ControlMessage {
  enum Signal : int32_t { kTick = 0, kEnd = 1 };
  int32_t sequence = 0;
  int32_t signal = kTick;
};

// The f64 values a tick carries per rank it has passed: compute seconds,
// wait seconds.
inline constexpr size_t kTickValuesPerRank = 2;

using MessageHeader =
    std::variant<HiddenMessage, TokenMessage, ClassifyMessage, AdmitMessage, ControlMessage, PrefixMessage>;

// A received message: its header and a view of its payload (f32 values, or
// for AdmitMessage and PrefixMessage i32 ids),
// which lives as long as the bytes it was decoded from.
struct PipelineMessage {
  MessageHeader header;
  std::span<const std::byte> payload;

  size_t payload_floats() const { return payload.size() / sizeof(float); }
};

// The kind of a message, and the sequence it belongs to.
MessageKind KindOf(const MessageHeader& header);
int32_t SequenceOf(const MessageHeader& header);

// The 16 header bytes of `header`, little-endian.
std::array<std::byte, kMessageHeaderBytes> EncodeMessageHeader(const MessageHeader& header);

// Splits a received message (not a group) into its header and payload (a
// view into `bytes`). Errors: Corruption naming what is wrong — "a message of
// N bytes" (shorter than the header, or a payload that is not whole floats),
// "kind K, sequence S" (an unknown kind, a group, or a negative sequence).
Result<PipelineMessage> DecodePipelineMessage(std::span<const std::byte> bytes);

// The group header and the headers of `members` (at least one, all hidden,
// all token or all classify messages), to be followed by their payloads,
// each of the same size, in the same order.
std::vector<std::byte> EncodeGroupHeader(std::span<const MessageHeader> members);

// The messages of a received message: a group's members in order (their
// payloads views into `bytes`), or the one message it is. Errors: as
// DecodePipelineMessage, and Corruption "a group of C messages of B bytes"
// (C < 1, or bytes that do not hold C headers and C equal payloads of whole
// floats), "a group holding kind K" (a member of a kind that cannot be
// grouped), "a group of kind K and kind L" (members of two kinds).
Result<std::vector<PipelineMessage>> DecodePipelineMessages(std::span<const std::byte> bytes);

}  // namespace inferno
