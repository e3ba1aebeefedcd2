#include "server/json_constraint.h"

#include <algorithm>
#include <array>
#include <limits>

#include <glog/logging.h>

namespace inferno {

std::vector<std::string> TokenTexts(const Tokenizer& tokenizer, int64_t vocab) {
  // An ordinary token to follow, so that no piece is printed as a text's start.
  const std::vector<int32_t> letter = tokenizer.Encode("a");
  const int32_t previous = letter.empty() ? -1 : letter.back();
  std::vector<std::string> texts(static_cast<size_t>(vocab));
  for (int64_t id = 0; id < std::min<int64_t>(vocab, tokenizer.vocab_size()); ++id) {
    texts[id] = tokenizer.Decode(previous, static_cast<int32_t>(id));
  }
  return texts;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const std::vector<std::string>> texts,
                               std::vector<int32_t> stop_ids, JsonSchema schema, std::string prefix,
                               std::string suffix)
    : texts_(std::move(texts)),
      stop_ids_(std::move(stop_ids)),
      schema_(std::move(schema)),
      prefix_(std::move(prefix)),
      suffix_(std::move(suffix)),
      state_{0, false, JsonSchemaMatcher(schema_)} {}

bool JsonConstraint::Feed(State& state, std::string_view text) const {
  size_t at = 0;
  // Without a suffix, a token past the prefix is all document: one Feed.
  if (suffix_.empty() && state.literal >= prefix_.size()) return state.document.Feed(text);
  // The prefix, then the document: a document's last character may be
  // followed by the suffix, which decides between them character by character.
  while (at < text.size() && !state.in_suffix && state.literal < prefix_.size()) {
    if (text[at] != prefix_[state.literal]) return false;
    ++state.literal;
    ++at;
  }
  while (at < text.size() && !state.in_suffix) {
    if (state.document.Feed(text.substr(at, 1))) {
      ++at;
    } else if (state.document.Complete()) {
      state.in_suffix = true;
      state.literal = 0;
    } else {
      return false;
    }
  }
  for (; at < text.size(); ++at) {
    if (state.literal >= suffix_.size() || text[at] != suffix_[state.literal]) return false;
    ++state.literal;
  }
  return true;
}

bool JsonConstraint::Complete(const State& state) const {
  if (state.in_suffix) return state.literal == suffix_.size();
  return state.literal >= prefix_.size() && state.document.Complete() && suffix_.empty();
}

bool JsonConstraint::Complete() const { return Complete(state_); }

void JsonConstraint::Mask(std::span<float> logits) {
  const bool complete = Complete(state_);
  // Most tokens fail on their first byte: those bytes are found once.
  std::array<bool, 256> first_ok;
  for (int byte = 0; byte < 256; ++byte) {
    State trial = state_;
    const char c = static_cast<char>(byte);
    first_ok[byte] = Feed(trial, std::string_view(&c, 1));
  }
  bool any = false;
  for (size_t id = 0; id < logits.size(); ++id) {
    const bool stop =
        std::find(stop_ids_.begin(), stop_ids_.end(), static_cast<int32_t>(id)) != stop_ids_.end();
    bool allowed;
    if (stop) {
      allowed = complete;
    } else {
      const std::string& text = id < texts_->size() ? (*texts_)[id] : std::string();
      allowed = !text.empty() && first_ok[static_cast<unsigned char>(text[0])];
      if (allowed && text.size() > 1) {
        State trial = state_;
        allowed = Feed(trial, text);
      }
    }
    if (allowed) {
      any = true;
    } else {
      logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
  // No token can go on (the vocabulary lacks one): the sequence stops rather
  // than sample from nothing (a model without stop tokens goes on unmasked).
  if (!any) {
    if (stop_ids_.empty()) std::fill(logits.begin(), logits.end(), 0.0f);
    for (int32_t id : stop_ids_) {
      if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] = 0.0f;
    }
  }
}

void JsonConstraint::Accept(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= texts_->size()) return;
  State next = state_;
  if (Feed(next, (*texts_)[token])) state_ = std::move(next);
}

}  // namespace inferno
