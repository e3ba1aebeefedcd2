#include "server/completion_text.h"

#include <algorithm>

#include "text/utf8.h"

namespace inferno {

CompletionText::CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {
  for (const std::string& s : stop_) hold_ = std::max(hold_, s.size() - 1);
}

std::string CompletionText::Add(int32_t previous, std::span<const int32_t> tokens) {
  if (stopped_) return {};
  for (int32_t token : tokens) {
    pending_ += tokenizer_.Decode(previous, token);
    previous = token;
  }
  size_t first_stop = std::string::npos;
  for (const std::string& s : stop_) first_stop = std::min(first_stop, pending_.find(s));
  if (first_stop != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first_stop);
    pending_.clear();
    return out;
  }
  const size_t safe = pending_.size() - std::min(pending_.size(), hold_);
  const size_t send = Utf8CompletePrefixLength(std::string_view(pending_).substr(0, safe));
  std::string out = pending_.substr(0, send);
  pending_.erase(0, send);
  return out;
}

std::string CompletionText::Finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace inferno
