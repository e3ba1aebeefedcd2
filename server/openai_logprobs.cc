#include "server/openai_logprobs.h"

#include <string>

#include <glog/logging.h>

namespace inferno {
namespace {

using Json = nlohmann::json;

Json Bytes(const std::string& text) {
  Json bytes = Json::array();
  for (char c : text) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

Json EmptyObject(bool chat) {
  if (chat) return {{"content", Json::array()}, {"refusal", nullptr}};
  return {{"tokens", Json::array()},
          {"token_logprobs", Json::array()},
          {"top_logprobs", Json::array()},
          {"text_offset", Json::array()}};
}

}  // namespace

OpenAiLogprobs::OpenAiLogprobs(const Tokenizer& tokenizer, bool chat)
    : tokenizer_(tokenizer), chat_(chat), total_(EmptyObject(chat)) {}

Json OpenAiLogprobs::Add(int32_t previous, std::span<const int32_t> tokens,
                         std::span<const TokenLogprobs> logprobs) {
  CHECK_EQ(tokens.size(), logprobs.size());
  Json added = EmptyObject(chat_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const TokenLogprobs& entry = logprobs[i];
    const std::string text = tokenizer_.Decode(previous, tokens[i]);
    if (chat_) {
      Json top = Json::array();
      for (const TopLogprob& alternative : entry.top) {
        const std::string alternative_text = tokenizer_.Decode(previous, alternative.token);
        top.push_back({{"token", alternative_text},
                       {"logprob", alternative.logprob},
                       {"bytes", Bytes(alternative_text)}});
      }
      added["content"].push_back({{"token", text},
                                  {"logprob", entry.logprob},
                                  {"bytes", Bytes(text)},
                                  {"top_logprobs", std::move(top)}});
    } else {
      Json top = Json::object();
      for (const TopLogprob& alternative : entry.top) {
        top[tokenizer_.Decode(previous, alternative.token)] = alternative.logprob;
      }
      added["tokens"].push_back(text);
      added["token_logprobs"].push_back(entry.logprob);
      added["top_logprobs"].push_back(std::move(top));
      added["text_offset"].push_back(text_offset_);
      text_offset_ += static_cast<int64_t>(text.size());
    }
    previous = tokens[i];
  }
  for (auto& [key, values] : added.items()) {
    if (!values.is_array()) continue;
    for (const Json& value : values) total_[key].push_back(value);
  }
  return added;
}

}  // namespace inferno
