#include "text/hf_tokenizer/token_decoder.h"

#include <optional>

#include "text/hf_tokenizer/byte_level.h"

namespace inferno::hf {
namespace {

void ReplaceAll(std::string& text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return;
  for (size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + content.size())) {
    text.replace(at, pattern.size(), content);
  }
}

// The byte of a "<0xNN>" piece, or nullopt.
std::optional<char> ByteFallbackByte(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return std::nullopt;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

// Removes up to `count` copies of `content` from the front (or back) of `text`.
void Strip(std::string& text, std::string_view content, int count, bool front) {
  if (content.empty()) return;
  for (int i = 0; i < count; ++i) {
    if (front && text.starts_with(content)) {
      text.erase(0, content.size());
    } else if (!front && text.ends_with(content)) {
      text.erase(text.size() - content.size());
    } else {
      return;
    }
  }
}

}  // namespace

Status TokenDecoder::AddSteps(const nlohmann::json& config) {
  if (config.is_null()) return {};
  const std::string type = config.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const nlohmann::json& inner : config.at("decoders")) {
      if (Status status = AddSteps(inner); !status) return status;
    }
  } else if (type == "ByteLevel") {
    steps_.push_back(Step(Kind::kByteLevel));
  } else if (type == "ByteFallback") {
    steps_.push_back(Step(Kind::kByteFallback));
  } else if (type == "Fuse") {
    fused_ = true;
  } else if (type == "Replace") {
    const nlohmann::json& pattern = config.at("pattern");
    if (!pattern.contains("String")) {
      return Error::Unimplemented("decoder Replace with pattern " + pattern.dump() +
                                  " (only String patterns are supported)");
    }
    Step step(Kind::kReplace);
    step.pattern = pattern.at("String").get<std::string>();
    step.content = config.at("content").get<std::string>();
    steps_.push_back(std::move(step));
  } else if (type == "Metaspace") {
    Step step(Kind::kMetaspace);
    step.pattern = config.at("replacement").get<std::string>();
    if (auto scheme = config.find("prepend_scheme"); scheme != config.end() && !scheme->is_null()) {
      step.whole_sequence = scheme->get<std::string>() != "never";
    } else {
      auto prefix = config.find("add_prefix_space");
      step.whole_sequence = prefix == config.end() || prefix->is_null() || prefix->get<bool>();
    }
    steps_.push_back(std::move(step));
  } else if (type == "Strip") {
    Step step(Kind::kStrip);
    step.content = config.at("content").get<std::string>();
    step.whole_sequence = fused_;
    step.start = config.at("start").get<int>();
    step.stop = config.at("stop").get<int>();
    if (fused_ && step.stop != 0) {
      return Error::Unimplemented("decoder Strip with stop " + std::to_string(step.stop) +
                                  " after Fuse (trailing characters of a streamed text)");
    }
    steps_.push_back(std::move(step));
  } else {
    return Error::Unimplemented("decoder type \"" + PrintableInMessage(type) + "\"");
  }
  return {};
}

Result<TokenDecoder> TokenDecoder::FromJson(const nlohmann::json& config) {
  TokenDecoder decoder;
  if (Status status = decoder.AddSteps(config); !status) return status.error();
  return decoder;
}

std::string TokenDecoder::Decode(std::string_view piece, bool starts_sequence) const {
  std::string text(piece);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kByteLevel:
        // A piece with characters outside the byte alphabet (an added token)
        // prints as it is, as the library does.
        if (std::optional<std::string> bytes = ByteLevelToBytes(text)) text = std::move(*bytes);
        break;
      case Kind::kByteFallback:
        if (std::optional<char> byte = ByteFallbackByte(text)) text.assign(1, *byte);
        break;
      case Kind::kReplace:
        ReplaceAll(text, step.pattern, step.content);
        break;
      case Kind::kMetaspace:
        ReplaceAll(text, step.pattern, " ");
        if (step.whole_sequence && starts_sequence && text.starts_with(' ')) text.erase(0, 1);
        break;
      case Kind::kStrip:
        if (step.whole_sequence) {
          if (starts_sequence) Strip(text, step.content, step.start, /*front=*/true);
        } else {
          Strip(text, step.content, step.start, /*front=*/true);
          Strip(text, step.content, step.stop, /*front=*/false);
        }
        break;
    }
  }
  return text;
}

}  // namespace inferno::hf
