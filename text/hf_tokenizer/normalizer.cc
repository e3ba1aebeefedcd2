#include "text/hf_tokenizer/normalizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

namespace inferno::hf {
namespace {

bool IsAscii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

const icu::Normalizer2* UnicodeForm(bool compose, bool compatibility) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* form =
      compatibility
          ? (compose ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFKDInstance(status))
          : (compose ? icu::Normalizer2::getNFCInstance(status) : icu::Normalizer2::getNFDInstance(status));
  return U_SUCCESS(status) ? form : nullptr;
}

void ReplaceAll(std::string& text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return;
  std::string out;
  size_t from = 0;
  for (size_t at; (at = text.find(pattern, from)) != std::string::npos; from = at + pattern.size()) {
    out.append(text, from, at - from);
    out.append(content);
  }
  if (from == 0) return;
  out.append(text, from);
  text = std::move(out);
}

}  // namespace

Status Normalizer::AddSteps(const nlohmann::json& config, std::vector<Step>& steps) {
  if (config.is_null()) return {};
  const std::string type = config.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const nlohmann::json& inner : config.at("normalizers")) {
      if (Status status = AddSteps(inner, steps); !status) return status;
    }
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    const bool compose = type.back() == 'C';
    const bool compatibility = type.size() == 4;
    if (UnicodeForm(compose, compatibility) == nullptr) {
      return Error::Unimplemented("normalizer " + type + ": ICU has no data for it");
    }
    steps.push_back(
        {compose ? (compatibility ? Kind::kNfkc : Kind::kNfc) : (compatibility ? Kind::kNfkd : Kind::kNfd),
         "", ""});
  } else if (type == "Prepend") {
    steps.push_back({Kind::kPrepend, "", config.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    const nlohmann::json& pattern = config.at("pattern");
    if (!pattern.contains("String")) {
      return Error::Unimplemented("normalizer Replace with pattern " + pattern.dump() +
                                  " (only String patterns are supported)");
    }
    steps.push_back(
        {Kind::kReplace, pattern.at("String").get<std::string>(), config.at("content").get<std::string>()});
  } else {
    return Error::Unimplemented("normalizer type \"" + PrintableInMessage(type) + "\"");
  }
  return {};
}

Result<Normalizer> Normalizer::FromJson(const nlohmann::json& config) {
  Normalizer normalizer;
  if (Status status = AddSteps(config, normalizer.steps_); !status) return status.error();
  return normalizer;
}

std::string Normalizer::Normalize(std::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kPrepend:
        if (!out.empty()) out.insert(0, step.content);
        break;
      case Kind::kReplace:
        ReplaceAll(out, step.pattern, step.content);
        break;
      case Kind::kNfc:
      case Kind::kNfd:
      case Kind::kNfkc:
      case Kind::kNfkd: {
        if (IsAscii(out)) break;  // ASCII is in every normal form
        const bool compose = step.kind == Kind::kNfc || step.kind == Kind::kNfkc;
        const bool compatibility = step.kind == Kind::kNfkc || step.kind == Kind::kNfkd;
        UErrorCode status = U_ZERO_ERROR;
        const icu::UnicodeString normalized =
            UnicodeForm(compose, compatibility)->normalize(icu::UnicodeString::fromUTF8(out), status);
        if (U_FAILURE(status)) break;  // only on allocation failure: keep the text as it is
        out.clear();
        normalized.toUTF8String(out);
        break;
      }
    }
  }
  return out;
}

}  // namespace inferno::hf
