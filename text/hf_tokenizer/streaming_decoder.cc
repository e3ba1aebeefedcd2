#include "text/hf_tokenizer/streaming_decoder.h"

#include "text/hf_tokenizer/hf_tokenizer.h"
#include "text/utf8.h"

namespace inferno::hf {

StreamingDecoder::StreamingDecoder(const HfTokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamingDecoder::Push(int32_t id) {
  if (skip_special_tokens_ && tokenizer_.IsSpecial(id)) return "";
  if (tokenizer_.TokenPiece(id).empty()) return "";
  pending_ += tokenizer_.TokenBytes(id, starts_sequence_);
  starts_sequence_ = false;
  const size_t complete = Utf8CompletePrefixLength(pending_);
  std::string text = Utf8Lossy(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return text;
}

std::string StreamingDecoder::Finish() {
  std::string text = Utf8Lossy(pending_);
  pending_.clear();
  starts_sequence_ = true;
  return text;
}

}  // namespace inferno::hf
