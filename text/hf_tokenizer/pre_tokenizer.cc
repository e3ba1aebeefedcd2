#include "text/hf_tokenizer/pre_tokenizer.h"

#include <utility>

namespace inferno::hf {
namespace {

// The pattern the ByteLevel pre-tokenizer splits with when use_regex is true
// (GPT-2's, built into the tokenizers library rather than stored in the file).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

bool BoolField(const nlohmann::json& config, const char* name, bool fallback) {
  auto it = config.find(name);
  return it == config.end() || it->is_null() ? fallback : it->get<bool>();
}

}  // namespace

Status PreTokenizer::AddSteps(const nlohmann::json& config) {
  if (config.is_null()) return {};
  const std::string type = config.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const nlohmann::json& inner : config.at("pretokenizers")) {
      if (Status status = AddSteps(inner); !status) return status;
    }
    return {};
  }
  if (type == "Split") {
    if (BoolField(config, "invert", false))
      return Error::Unimplemented("pre_tokenizer Split with invert true");
    const nlohmann::json& pattern = config.at("pattern");
    const bool literal = pattern.contains("String");
    if (!literal && !pattern.contains("Regex")) {
      return Error::Unimplemented("pre_tokenizer Split with pattern " + pattern.dump());
    }
    Result<Regex> regex =
        Regex::Compile(pattern.at(literal ? "String" : "Regex").get<std::string>(), literal);
    if (!regex) return regex.error().Prefixed("pre_tokenizer Split: ");
    const std::string behavior = config.at("behavior").get<std::string>();
    Step step(Kind::kSplit);
    step.regex = std::move(*regex);
    if (behavior == "Isolated") {
      step.behavior = Behavior::kIsolated;
    } else if (behavior == "Removed") {
      step.behavior = Behavior::kRemoved;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = Behavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = Behavior::kMergedWithNext;
    } else {
      return Error::Unimplemented("pre_tokenizer Split with behavior \"" + PrintableInMessage(behavior) +
                                  "\"");
    }
    steps_.push_back(std::move(step));
    return {};
  }
  if (type == "ByteLevel") {
    byte_level_ = true;
    if (BoolField(config, "add_prefix_space", true)) steps_.push_back(Step(Kind::kByteLevelPrefixSpace));
    if (BoolField(config, "use_regex", true)) {
      Result<Regex> regex = Regex::Compile(kGpt2Pattern, /*literal=*/false);
      if (!regex) return regex.error();
      Step split(Kind::kSplit);
      split.regex = std::move(*regex);
      steps_.push_back(std::move(split));
    }
    return {};
  }
  if (type == "Metaspace") {
    Step step(Kind::kMetaspace);
    step.replacement = config.at("replacement").get<std::string>();
    if (auto scheme = config.find("prepend_scheme"); scheme != config.end() && !scheme->is_null()) {
      const std::string name = scheme->get<std::string>();
      if (name == "always") {
        step.prepend = Prepend::kAlways;
      } else if (name == "first") {
        step.prepend = Prepend::kFirst;
      } else if (name == "never") {
        step.prepend = Prepend::kNever;
      } else {
        return Error::Unimplemented("pre_tokenizer Metaspace with prepend_scheme \"" +
                                    PrintableInMessage(name) + "\"");
      }
    } else {
      step.prepend = BoolField(config, "add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;
    }
    step.split_on_replacement = BoolField(config, "split", true);
    steps_.push_back(std::move(step));
    return {};
  }
  return Error::Unimplemented("pre_tokenizer type \"" + PrintableInMessage(type) + "\"");
}

Result<PreTokenizer> PreTokenizer::FromJson(const nlohmann::json& config) {
  PreTokenizer pre_tokenizer;
  if (Status status = pre_tokenizer.AddSteps(config); !status) return status.error();
  return pre_tokenizer;
}

std::vector<std::string> PreTokenizer::Apply(const Step& step, std::vector<std::string> pieces,
                                             bool starts_input) {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (size_t index = 0; index < pieces.size(); ++index) {
    std::string& piece = pieces[index];
    switch (step.kind) {
      case Kind::kByteLevelPrefixSpace:
        if (!piece.starts_with(' ')) piece.insert(0, " ");
        out.push_back(std::move(piece));
        break;
      case Kind::kMetaspace: {
        std::string replaced;
        replaced.reserve(piece.size() + step.replacement.size());
        const bool prepend = step.prepend == Prepend::kAlways ||
                             (step.prepend == Prepend::kFirst && starts_input && index == 0);
        if (prepend && !piece.starts_with(step.replacement)) replaced = step.replacement;
        for (char c : piece) {
          if (c == ' ') {
            replaced += step.replacement;
          } else {
            replaced += c;
          }
        }
        if (!step.split_on_replacement) {
          out.push_back(std::move(replaced));
          break;
        }
        // Each word starts at a replacement character (MergedWithNext).
        size_t start = 0;
        for (size_t at = replaced.find(step.replacement, 1); at != std::string::npos;
             at = replaced.find(step.replacement, at + step.replacement.size())) {
          out.push_back(replaced.substr(start, at - start));
          start = at;
        }
        if (start < replaced.size()) out.push_back(replaced.substr(start));
        break;
      }
      case Kind::kSplit: {
        size_t gap_start = 0;
        std::string carried;  // MergedWithNext: a match waiting for the text after it
        auto emit = [&](std::string text) {
          if (!text.empty()) out.push_back(std::move(text));
        };
        for (const auto& [offset, length] : step.regex->FindAll(piece)) {
          std::string gap = piece.substr(gap_start, offset - gap_start);
          std::string match = piece.substr(offset, length);
          gap_start = offset + length;
          switch (step.behavior) {
            case Behavior::kIsolated:
              emit(std::move(gap));
              emit(std::move(match));
              break;
            case Behavior::kRemoved:
              emit(std::move(gap));
              break;
            case Behavior::kMergedWithPrevious:
              emit(gap + match);
              break;
            case Behavior::kMergedWithNext:
              emit(carried + gap);
              carried = std::move(match);
              break;
          }
        }
        emit(carried + piece.substr(gap_start));
        break;
      }
    }
  }
  return out;
}

void PreTokenizer::Split(std::string_view text, bool starts_input, std::vector<std::string>& words) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const Step& step : steps_) pieces = Apply(step, std::move(pieces), starts_input);
  for (std::string& piece : pieces) {
    if (!piece.empty()) words.push_back(std::move(piece));
  }
}

}  // namespace inferno::hf
