// StepDecisions: what the leader's SequenceSource (runtime/sequence_source.h)
// decides at one step of the generator loop — the sequences that start, the
// running ones cancelled, whether the source is exhausted, whether a tick is
// due — and their encoding. Under tensor parallelism the last stage's ranks
// must start, cancel, tick and end at the same step, in the same slots, or
// their collectives pair up wrong; the leader alone asks the source and
// sends every other rank of its stage the encoded decisions of each step
// (tensor_parallel_agreement.h), which they follow.
//
// Encoding, in base/byte_codec.h's little-endian words:
//   u8 flags          bit 0: exhausted, bit 1: tick due; the others 0
//   u32 admitted      then that many sequences, each:
//                       i64 id, i64 max_new_tokens, f32 temperature,
//                       i32 top_k, f32 top_p, u64 seed,
//                       f32 presence_penalty, f32 frequency_penalty,
//                       f32 repetition_penalty, i32 logprobs,
//                       u8 leader_picks (1 when the leader's spec has a
//                       constraint or leader_picks; 0 otherwise),
//                       u32 n, then n i32 prompt ids,
//                       u32 r, then r i32 blocks to restore, u32 s,
//                       then s i32 blocks to store (its PrefixPlan)
//   u32 cancelled     then that many i64 sequence ids
// Decoding checks what the bytes alone can tell: lengths, flags, counts
// against the bytes left, nothing after the end, and sampling options a
// Sampler takes (runtime/sampler.h); prompts are the generator's to check
// against the model (ValidatePrompts).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "runtime/sequence_source.h"

namespace inferno {

struct StepDecisions {
  std::vector<SequenceSpec> admitted;  // in the order they take free slots
  std::vector<int64_t> cancelled;      // ids of running sequences
  bool exhausted = false;              // SequenceSource::Exhausted after the admissions
  bool tick_due = false;               // the last stage sends a tick if none is on its way

  bool operator==(const StepDecisions&) const = default;
};

std::vector<std::byte> EncodeStepDecisions(const StepDecisions& decisions);

// Corruption naming what is wrong and where.
Result<StepDecisions> DecodeStepDecisions(std::span<const std::byte> bytes);

}  // namespace inferno
