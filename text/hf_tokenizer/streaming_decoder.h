// StreamingDecoder: turns token ids, pushed one at a time as a generator
// produces them, into text that never splits a UTF-8 character across the
// chunks it returns: bytes of a character still missing its last bytes are
// held back until the tokens that complete it arrive.
//
//   hf::StreamingDecoder stream(tokenizer, /*skip_special_tokens=*/true);
//   for (int32_t id : generated) std::cout << stream.Push(id) << std::flush;
//   std::cout << stream.Finish();
//
// Thread-safety: one object is for one thread; the tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>

namespace inferno {
class HfTokenizer;
}

namespace inferno::hf {

class StreamingDecoder {
 public:
  // `skip_special_tokens`: special tokens print nothing (else their content).
  StreamingDecoder(const HfTokenizer& tokenizer, bool skip_special_tokens);

  // The complete UTF-8 text `id` finishes (possibly empty). Bytes that are
  // not valid UTF-8 and cannot become so print as U+FFFD.
  std::string Push(int32_t id);

  // Whatever is held back, with an unfinished character as U+FFFD; the
  // decoder then starts a new sequence.
  std::string Finish();

 private:
  const HfTokenizer& tokenizer_;
  bool skip_special_tokens_;
  bool starts_sequence_ = true;
  std::string pending_;  // bytes of an unfinished character
};

}  // namespace inferno::hf
