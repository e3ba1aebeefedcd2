// CompletionText: a request's generated tokens as the text to send — decoded
// with the tokenizer, never splitting a UTF-8 character between two sends,
// and cut before the first `stop` string (whose bytes are held back until
// they can no longer begin one).
//
//   CompletionText text(tokenizer, {"\n\n"});
//   send(text.Add(events.previous, events.tokens));
//   if (text.stopped()) ...  // cancel the request; finish_reason "stop"
//   send(text.Finish());     // at the end
//
// Thread-safety: one per request; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace inferno {

class CompletionText {
 public:
  // `tokenizer` must outlive this.
  CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stop);

  // Appends `tokens` (`previous` is the token before the first) and returns
  // the text that can be sent now. After a stop string, returns nothing.
  std::string Add(int32_t previous, std::span<const int32_t> tokens);
  // Whether a stop string came: the text ends before it.
  bool stopped() const { return stopped_; }
  // What is still held back (nothing after a stop string).
  std::string Finish();

 private:
  const Tokenizer& tokenizer_;
  const std::vector<std::string> stop_;
  size_t hold_ = 0;  // the longest stop string minus one
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace inferno
