#include "runtime/step_decisions.h"

#include <string>

#include "base/byte_codec.h"

namespace inferno {
namespace {

constexpr uint8_t kExhausted = 1;
constexpr uint8_t kTickDue = 2;

// A sequence's bytes before its prompt ids.
constexpr size_t kSequenceHeadBytes = 8 + 8 + 4 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 1 + 4;
// And its least after them: the prefix plan's two counts.
constexpr size_t kSequenceLeastBytes = kSequenceHeadBytes + 4 + 4;

// Reads a u32 count and that many i32 ids into `ids`.
bool GetIds(ByteReader& reader, std::vector<int32_t>& ids) {
  uint32_t n = 0;
  if (!reader.Get(n) || n > reader.remaining() / 4) return false;
  ids.resize(n);
  for (int32_t& id : ids) {
    if (!reader.Get(id)) return false;
  }
  return true;
}

Error Malformed(const std::string& what, size_t offset) {
  return Error::Corruption("step decisions: " + what + " at byte " + std::to_string(offset));
}

}  // namespace

std::vector<std::byte> EncodeStepDecisions(const StepDecisions& decisions) {
  size_t size = 1 + 4 + 4 + 8 * decisions.cancelled.size();
  for (const SequenceSpec& spec : decisions.admitted) {
    size +=
        kSequenceLeastBytes + 4 * (spec.prompt.size() + spec.prefix.restore.size() + spec.prefix.save.size());
  }
  std::vector<std::byte> bytes(size);
  ByteWriter writer(bytes);
  writer.Put<uint8_t>((decisions.exhausted ? kExhausted : 0) | (decisions.tick_due ? kTickDue : 0));
  writer.Put<uint32_t>(static_cast<uint32_t>(decisions.admitted.size()));
  for (const SequenceSpec& spec : decisions.admitted) {
    writer.Put<int64_t>(spec.id);
    writer.Put<int64_t>(spec.max_new_tokens);
    writer.Put<float>(spec.sampling.temperature);
    writer.Put<int32_t>(spec.sampling.top_k);
    writer.Put<float>(spec.sampling.top_p);
    writer.Put<uint64_t>(spec.sampling.seed);
    writer.Put<float>(spec.sampling.presence_penalty);
    writer.Put<float>(spec.sampling.frequency_penalty);
    writer.Put<float>(spec.sampling.repetition_penalty);
    writer.Put<int32_t>(spec.sampling.logprobs);
    writer.Put<uint8_t>(spec.constraint != nullptr || spec.leader_picks ? 1 : 0);
    writer.Put<uint32_t>(static_cast<uint32_t>(spec.prompt.size()));
    for (int32_t id : spec.prompt) writer.Put<int32_t>(id);
    for (const std::vector<int32_t>* ids : {&spec.prefix.restore, &spec.prefix.save}) {
      writer.Put<uint32_t>(static_cast<uint32_t>(ids->size()));
      for (int32_t id : *ids) writer.Put<int32_t>(id);
    }
  }
  writer.Put<uint32_t>(static_cast<uint32_t>(decisions.cancelled.size()));
  for (int64_t id : decisions.cancelled) writer.Put<int64_t>(id);
  return bytes;
}

Result<StepDecisions> DecodeStepDecisions(std::span<const std::byte> bytes) {
  ByteReader reader(bytes);
  StepDecisions decisions;
  uint8_t flags = 0;
  uint32_t admitted = 0;
  if (!reader.Get(flags) || !reader.Get(admitted)) return Malformed("truncated header", reader.offset());
  if ((flags & ~(kExhausted | kTickDue)) != 0) {
    return Malformed("unknown flags " + std::to_string(flags), 0);
  }
  decisions.exhausted = (flags & kExhausted) != 0;
  decisions.tick_due = (flags & kTickDue) != 0;
  if (admitted > reader.remaining() / kSequenceLeastBytes) {
    return Malformed(
        std::to_string(admitted) + " sequences in " + std::to_string(reader.remaining()) + " bytes",
        reader.offset());
  }
  for (uint32_t i = 0; i < admitted; ++i) {
    const size_t at = reader.offset();
    SequenceSpec spec;
    SamplingOptions& sampling = spec.sampling;
    uint32_t n = 0;
    uint8_t leader_picks = 0;
    if (!reader.Get(spec.id) || !reader.Get(spec.max_new_tokens) || !reader.Get(sampling.temperature) ||
        !reader.Get(sampling.top_k) || !reader.Get(sampling.top_p) || !reader.Get(sampling.seed) ||
        !reader.Get(sampling.presence_penalty) || !reader.Get(sampling.frequency_penalty) ||
        !reader.Get(sampling.repetition_penalty) || !reader.Get(sampling.logprobs) ||
        !reader.Get(leader_picks) || !reader.Get(n)) {
      return Malformed("truncated sequence " + std::to_string(i), at);
    }
    if (leader_picks > 1)
      return Malformed(
          "sequence " + std::to_string(spec.id) + " with leader_picks " + std::to_string(leader_picks), at);
    spec.leader_picks = leader_picks == 1;
    if (spec.max_new_tokens < 0 || !ValidSamplingOptions(sampling)) {
      return Malformed(
          "sequence " + std::to_string(spec.id) + " with max_new_tokens " +
              std::to_string(spec.max_new_tokens) + ", temperature " + std::to_string(sampling.temperature) +
              ", top_k " + std::to_string(sampling.top_k) + ", top_p " + std::to_string(sampling.top_p) +
              ", penalties " + std::to_string(sampling.presence_penalty) + " " +
              std::to_string(sampling.frequency_penalty) + " " + std::to_string(sampling.repetition_penalty) +
              ", logprobs " + std::to_string(sampling.logprobs),
          at);
    }
    if (n > reader.remaining() / 4) {
      return Malformed(
          "a prompt of " + std::to_string(n) + " ids in " + std::to_string(reader.remaining()) + " bytes",
          reader.offset());
    }
    spec.prompt.resize(n);
    for (int32_t& id : spec.prompt) {
      if (!reader.Get(id)) return Malformed("truncated prompt", reader.offset());
    }
    if (!GetIds(reader, spec.prefix.restore) || !GetIds(reader, spec.prefix.save)) {
      return Malformed("truncated prefix plan of sequence " + std::to_string(spec.id), reader.offset());
    }
    decisions.admitted.push_back(std::move(spec));
  }
  uint32_t cancelled = 0;
  if (!reader.Get(cancelled)) return Malformed("truncated cancellations", reader.offset());
  if (cancelled != reader.remaining() / 8 || reader.remaining() % 8 != 0) {
    return Malformed(
        std::to_string(cancelled) + " cancellations in " + std::to_string(reader.remaining()) + " bytes",
        reader.offset());
  }
  decisions.cancelled.resize(cancelled);
  for (int64_t& id : decisions.cancelled) {
    if (!reader.Get(id)) return Malformed("truncated cancellations", reader.offset());
  }
  return decisions;
}

}  // namespace inferno
