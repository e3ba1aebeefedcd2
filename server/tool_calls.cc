#include "server/tool_calls.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

namespace inferno {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralTag = "[TOOL_CALLS]";

std::string_view Trimmed(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// A call from `json`: an object with a string "name" and an object
// `arguments_key` (or "arguments"); none otherwise.
std::optional<ToolCall> CallOf(const Json& json, std::string_view arguments_key) {
  if (!json.is_object() || !json.contains("name") || !json["name"].is_string()) return std::nullopt;
  const Json* arguments = nullptr;
  for (std::string_view key : {arguments_key, std::string_view("arguments")}) {
    const auto found = json.find(std::string(key));
    if (found != json.end()) {
      arguments = &*found;
      break;
    }
  }
  if (arguments == nullptr || !arguments->is_object()) return std::nullopt;
  return ToolCall{json["name"].get<std::string>(), arguments->dump()};
}

Json Parse(std::string_view text) { return Json::parse(text, nullptr, /*allow_exceptions=*/false); }

// kLlama3Json's calls: one object, or several separated by ';'.
std::optional<std::vector<ToolCall>> Llama3Calls(std::string_view text) {
  text = Trimmed(text);
  if (text.substr(0, kPythonTag.size()) == kPythonTag) text = Trimmed(text.substr(kPythonTag.size()));
  std::vector<ToolCall> calls;
  // Splitting at every ';' may cut inside a string: a piece that does not
  // parse is joined with the next.
  size_t begin = 0;
  for (size_t end = 0; end <= text.size(); ++end) {
    if (end != text.size() && text[end] != ';') continue;
    const Json json = Parse(text.substr(begin, end - begin));
    if (json.is_discarded()) continue;
    std::optional<ToolCall> call = CallOf(json, "parameters");
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    begin = end + 1;
  }
  if (begin <= text.size() && !Trimmed(text.substr(std::min(begin, text.size()))).empty())
    return std::nullopt;
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<std::vector<ToolCall>> MistralCalls(std::string_view text) {
  text = Trimmed(text);
  if (text.substr(0, kMistralTag.size()) == kMistralTag) text = Trimmed(text.substr(kMistralTag.size()));
  const Json json = Parse(text);
  if (!json.is_array() || json.empty()) return std::nullopt;
  std::vector<ToolCall> calls;
  for (const Json& item : json) {
    std::optional<ToolCall> call = CallOf(item, "arguments");
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

// The length of the longest tail of `text` that is a proper prefix of `marker`.
size_t PartialMarkerTail(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ToolCallFormat DetectToolCallFormat(std::string_view source) {
  if (source.find("tools") == std::string_view::npos) return ToolCallFormat::kNone;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find(kMistralTag) != std::string_view::npos) return ToolCallFormat::kMistral;
  // Llama 3.1 prints <|python_tag|> for its built-in tools; 3.1 and 3.2
  // both ask for {"name": ..., "parameters": ...}.
  if (source.find(kPythonTag) != std::string_view::npos ||
      source.find("\"parameters\": ") != std::string_view::npos) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

void ToolCallParser::ScanHermes(Output& out, bool final) {
  while (true) {
    // The space a template puts between calls, or after the last, is not content.
    if (after_call_) {
      const size_t text = pending_.find_first_not_of(" \t\r\n");
      pending_.erase(0, text);
      if (text == std::string::npos) return;
      after_call_ = false;
    }
    const size_t open = pending_.find(kHermesOpen);
    if (open == std::string::npos) {
      const size_t hold = final ? 0 : PartialMarkerTail(pending_, kHermesOpen);
      out.content += pending_.substr(0, pending_.size() - hold);
      pending_.erase(0, pending_.size() - hold);
      return;
    }
    out.content += pending_.substr(0, open);
    pending_.erase(0, open);
    const size_t close = pending_.find(kHermesClose);
    if (close == std::string::npos) {
      // An unfinished call: it waits, or at the end is content (as it came).
      if (final) {
        out.content += pending_;
        pending_.clear();
      }
      return;
    }
    const std::string_view inner =
        std::string_view(pending_).substr(kHermesOpen.size(), close - kHermesOpen.size());
    const size_t end = close + kHermesClose.size();
    if (std::optional<ToolCall> call = CallOf(Parse(Trimmed(inner)), "arguments")) {
      out.calls.push_back(std::move(*call));
      pending_.erase(0, end);
      after_call_ = true;
    } else {
      out.content += pending_.substr(0, end);
      pending_.erase(0, end);
    }
  }
}

ToolCallParser::Output ToolCallParser::Add(std::string_view text) {
  Output out;
  if (format_ == ToolCallFormat::kNone) {
    out.content = std::string(text);
    return out;
  }
  pending_ += text;
  if (format_ == ToolCallFormat::kHermes) {
    ScanHermes(out, false);
    return out;
  }
  if (start_ == Start::kUndecided) {
    const std::string_view start = Trimmed(pending_);
    if (start.empty()) return out;
    const std::string_view markers[] = {format_ == ToolCallFormat::kMistral ? kMistralTag : kPythonTag,
                                        format_ == ToolCallFormat::kMistral ? "[" : "{"};
    bool could_be_call = false;
    for (std::string_view marker : markers) {
      const size_t n = std::min(marker.size(), start.size());
      could_be_call |= start.substr(0, n) == marker.substr(0, n);
    }
    start_ = could_be_call ? Start::kCalls : Start::kContent;
  }
  if (start_ == Start::kContent) {
    out.content = std::move(pending_);
    pending_.clear();
  }
  return out;
}

ToolCallParser::Output ToolCallParser::Finish() {
  Output out;
  if (format_ == ToolCallFormat::kHermes) {
    ScanHermes(out, true);
    return out;
  }
  if (pending_.empty()) return out;
  std::optional<std::vector<ToolCall>> calls =
      format_ == ToolCallFormat::kMistral ? MistralCalls(pending_) : Llama3Calls(pending_);
  if (calls) {
    out.calls = std::move(*calls);
  } else {
    out.content = std::move(pending_);
  }
  pending_.clear();
  return out;
}

}  // namespace inferno
