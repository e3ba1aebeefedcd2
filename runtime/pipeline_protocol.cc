#include "runtime/pipeline_protocol.h"

#include <string>

#include <glog/logging.h>

#include "base/byte_codec.h"

namespace inferno {
namespace {

// The header's words after the kind: [sequence, a, b].
struct Words {
  int32_t sequence;
  int32_t a;
  int32_t b;
};

Words WordsOf(const HiddenMessage& m) { return {m.sequence, m.pos, m.n}; }
Words WordsOf(const TokenMessage& m) { return {m.sequence, m.token, m.pos}; }
Words WordsOf(const ClassifyMessage& m) { return {m.sequence, m.rows, 0}; }
Words WordsOf(const AdmitMessage& m) { return {m.sequence, m.n, m.first}; }
Words WordsOf(const PrefixMessage& m) { return {m.sequence, m.restored, m.stored}; }
Words WordsOf(const ControlMessage& m) { return {m.sequence, m.signal, 0}; }

MessageKind KindOfMessage(const HiddenMessage&) { return MessageKind::kHidden; }
MessageKind KindOfMessage(const TokenMessage&) { return MessageKind::kToken; }
MessageKind KindOfMessage(const ClassifyMessage&) { return MessageKind::kClassify; }
MessageKind KindOfMessage(const AdmitMessage&) { return MessageKind::kAdmit; }
MessageKind KindOfMessage(const ControlMessage&) { return MessageKind::kControl; }
MessageKind KindOfMessage(const PrefixMessage&) { return MessageKind::kPrefix; }

}  // namespace

MessageKind KindOf(const MessageHeader& header) {
  return std::visit([](const auto& message) { return KindOfMessage(message); }, header);
}

int32_t SequenceOf(const MessageHeader& header) {
  return std::visit([](const auto& message) { return message.sequence; }, header);
}

std::array<std::byte, kMessageHeaderBytes> EncodeMessageHeader(const MessageHeader& header) {
  std::array<std::byte, kMessageHeaderBytes> bytes;
  ByteWriter writer(bytes);
  std::visit(
      [&](const auto& message) {
        const Words words = WordsOf(message);
        writer.Put<int32_t>(static_cast<int32_t>(KindOfMessage(message)));
        writer.Put<int32_t>(words.sequence);
        writer.Put<int32_t>(words.a);
        writer.Put<int32_t>(words.b);
      },
      header);
  return bytes;
}

namespace {

// Whether messages of `kind` may be members of a group.
bool Groupable(MessageKind kind) {
  return kind == MessageKind::kHidden || kind == MessageKind::kToken || kind == MessageKind::kClassify;
}

}  // namespace

Result<PipelineMessage> DecodePipelineMessage(std::span<const std::byte> bytes) {
  ByteReader reader(bytes);
  int32_t kind, sequence, a, b;
  if (!reader.Get(kind) || !reader.Get(sequence) || !reader.Get(a) || !reader.Get(b) ||
      reader.remaining() % sizeof(float) != 0) {
    return Error::Corruption("a message of " + std::to_string(bytes.size()) + " bytes");
  }
  PipelineMessage message;
  message.payload = reader.rest();
  if (sequence >= 0) {
    switch (static_cast<MessageKind>(kind)) {
      case MessageKind::kHidden:
        message.header = HiddenMessage{sequence, a, b};
        return message;
      case MessageKind::kToken:
        message.header = TokenMessage{sequence, a, b};
        return message;
      case MessageKind::kClassify:
        message.header = ClassifyMessage{sequence, a};
        return message;
      case MessageKind::kAdmit:
        message.header = AdmitMessage{sequence, a, b};
        return message;
      case MessageKind::kPrefix:
        message.header = PrefixMessage{sequence, a, b};
        return message;
      case MessageKind::kControl:
        message.header = ControlMessage{sequence, a};
        return message;
      case MessageKind::kGroup:
        break;
    }
  }
  return Error::Corruption("kind " + std::to_string(kind) + ", sequence " + std::to_string(sequence));
}

std::vector<std::byte> EncodeGroupHeader(std::span<const MessageHeader> members) {
  CHECK(!members.empty());
  std::vector<std::byte> bytes((members.size() + 1) * kMessageHeaderBytes);
  ByteWriter writer(bytes);
  writer.Put<int32_t>(static_cast<int32_t>(MessageKind::kGroup));
  writer.Put<int32_t>(static_cast<int32_t>(members.size()));
  writer.Put<int32_t>(0);
  writer.Put<int32_t>(0);
  for (const MessageHeader& member : members) {
    CHECK(Groupable(KindOf(member)) && KindOf(member) == KindOf(members[0])) << "a group of one kind";
    writer.PutBytes(EncodeMessageHeader(member));
  }
  return bytes;
}

Result<std::vector<PipelineMessage>> DecodePipelineMessages(std::span<const std::byte> bytes) {
  ByteReader reader(bytes);
  int32_t kind, count;
  if (!reader.Get(kind) || kind != static_cast<int32_t>(MessageKind::kGroup)) {
    Result<PipelineMessage> message = DecodePipelineMessage(bytes);
    if (!message) return message.error();
    return std::vector<PipelineMessage>{std::move(*message)};
  }
  int32_t a, b;
  std::span<const std::byte> member_headers;
  const auto wrong_size = [&] {
    return Error::Corruption("a group of " + std::to_string(count) + " messages of " +
                             std::to_string(bytes.size()) + " bytes");
  };
  if (!reader.Get(count) || !reader.Get(a) || !reader.Get(b) || count < 1 ||
      reader.remaining() / kMessageHeaderBytes < static_cast<size_t>(count) ||
      !reader.GetBytes(count * kMessageHeaderBytes, member_headers)) {
    return wrong_size();
  }
  const std::span<const std::byte> payloads = reader.rest();
  const size_t payload_bytes = payloads.size() / count;
  if (payload_bytes * count != payloads.size() || payload_bytes % sizeof(float) != 0) return wrong_size();
  std::vector<PipelineMessage> messages;
  messages.reserve(count);
  for (int32_t i = 0; i < count; ++i) {
    Result<PipelineMessage> message =
        DecodePipelineMessage(member_headers.subspan(i * kMessageHeaderBytes, kMessageHeaderBytes));
    if (!message) return message.error();
    const auto kind_text = [](const PipelineMessage& m) {
      return std::to_string(static_cast<int32_t>(KindOf(m.header)));
    };
    if (!Groupable(KindOf(message->header)))
      return Error::Corruption("a group holding kind " + kind_text(*message));
    if (i > 0 && KindOf(message->header) != KindOf(messages[0].header)) {
      return Error::Corruption("a group of kind " + kind_text(messages[0]) + " and kind " +
                               kind_text(*message));
    }
    message->payload = payloads.subspan(i * payload_bytes, payload_bytes);
    messages.push_back(std::move(*message));
  }
  return messages;
}

}  // namespace inferno
