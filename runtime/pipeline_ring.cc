#include "runtime/pipeline_ring.h"

namespace inferno {

PipelineRing::PipelineRing(ProcessGroup& group, const ShardPlan& plan, const RankShard& part, int num_slots,
                           int64_t max_messages, Timeline& timeline)
    : group_(group),
      successor_(plan.RankOf((part.stage + 1) % plan.pp, part.tp_index)),
      predecessor_(plan.RankOf((part.stage + plan.pp - 1) % plan.pp, part.tp_index)),
      num_slots_(num_slots),
      max_messages_(max_messages),
      timeline_(timeline) {}

Error PipelineRing::Malformed(const std::string& what) const {
  return Error::Corruption("malformed message from rank " + std::to_string(predecessor_) + ": " + what);
}

Status PipelineRing::Send(const char* label, const MessageHeader& header,
                          std::span<const std::byte> payload) {
  return SendBytes(label, EncodeMessageHeader(header), payload, SequenceOf(header));
}

Status PipelineRing::SendStep(const char* label, std::span<const MessageHeader> headers,
                              std::span<const std::byte> payload) {
  if (headers.size() == 1) return Send(label, headers[0], payload);
  return SendBytes(label, EncodeGroupHeader(headers), payload, -1);
}

Status PipelineRing::SendBytes(const char* label, std::span<const std::byte> head,
                               std::span<const std::byte> payload, int sequence) {
  TimedScope scope(timeline_, SpanKind::kSend, label, sequence);
  if (Status sent = group_.send_bytes(successor_, kMessageTag, head, payload); !sent) {
    return sent.error().Prefixed(std::string(label) + ": send to rank " + std::to_string(successor_) + ": ");
  }
  return {};
}

Result<PipelineRing::Received> PipelineRing::Receive() {
  TimedScope scope(timeline_, SpanKind::kWait, "wait", -1);
  Result<Payload> bytes = group_.recv_payload(predecessor_, kMessageTag);
  if (!bytes) return bytes.error().Prefixed("receive from rank " + std::to_string(predecessor_) + ": ");
  Result<std::vector<PipelineMessage>> step = DecodePipelineMessages(bytes->bytes());
  if (!step) return Malformed(step.error().message);
  for (const PipelineMessage& message : *step) {
    const MessageHeader& header = message.header;
    if (SequenceOf(header) >= num_slots_) {
      return Malformed("kind " + std::to_string(static_cast<int32_t>(KindOf(header))) + ", sequence " +
                       std::to_string(SequenceOf(header)));
    }
  }
  if (step->size() > static_cast<size_t>(max_messages_)) {
    return Malformed("a group of " + std::to_string(step->size()) + " messages, more than " +
                     std::to_string(max_messages_));
  }
  for (size_t i = 0; i < step->size(); ++i) {
    const MessageHeader& header = (*step)[i].header;
    // A drafted sequence's rows at the classifier follow one another.
    if (i > 0 && KindOf(header) == MessageKind::kClassify &&
        SequenceOf(header) == SequenceOf((*step)[i - 1].header)) {
      continue;
    }
    for (size_t j = 0; j < i; ++j) {
      if (SequenceOf((*step)[i].header) == SequenceOf((*step)[j].header)) {
        return Malformed("a group naming sequence " + std::to_string(SequenceOf((*step)[i].header)) +
                         " twice");
      }
    }
  }
  return Received{std::move(*bytes), std::move(*step)};
}

}  // namespace inferno
