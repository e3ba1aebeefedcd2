#include "engine/pipeline_protocol.h"

#include <string>

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
Words WordsOf(const TokenMessage& m) { return {m.sequence, m.token, 0}; }
Words WordsOf(const ClassifyMessage& m) { return {m.sequence, m.rows, 0}; }
Words WordsOf(const AdmitMessage& m) { return {m.sequence, m.n, 0}; }
Words WordsOf(const ControlMessage& m) { return {m.sequence, m.signal, 0}; }

MessageKind KindOfMessage(const HiddenMessage&) { return MessageKind::kHidden; }
MessageKind KindOfMessage(const TokenMessage&) { return MessageKind::kToken; }
MessageKind KindOfMessage(const ClassifyMessage&) { return MessageKind::kClassify; }
MessageKind KindOfMessage(const AdmitMessage&) { return MessageKind::kAdmit; }
MessageKind KindOfMessage(const ControlMessage&) { return MessageKind::kControl; }

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
        message.header = TokenMessage{sequence, a};
        return message;
      case MessageKind::kClassify:
        message.header = ClassifyMessage{sequence, a};
        return message;
      case MessageKind::kAdmit:
        message.header = AdmitMessage{sequence, a};
        return message;
      case MessageKind::kControl:
        message.header = ControlMessage{sequence, a};
        return message;
    }
  }
  return Error::Corruption("kind " + std::to_string(kind) + ", sequence " + std::to_string(sequence));
}

}  // namespace inferno
