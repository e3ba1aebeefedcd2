// Tokenizer: text to token ids and back. Two implementations:
// - ByteTokenizer, for the toy model: id = byte + 3 (ids 3..258, the same ids
//   llama2.c's vocabulary gives its byte-fallback tokens <0x00>..<0xFF>),
//   0 = <unk>, 1 = BOS, 2 = EOS (llama2.c's convention).
// - BpeTokenizer, llama2.c's tokenizer.bin (a SentencePiece BPE vocabulary
//   with scores): encodes and decodes exactly as llama2.c's run.c does — a
//   dummy leading space, UTF-8 code points looked up whole or split into
//   byte-fallback tokens, then repeated merging of the adjacent pair whose
//   merged piece has the highest score.
//
// Thread-safety: immutable after construction; const methods may be called
// from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"

namespace inferno {

// llama2.c's special ids, which its tokenizer.bin and the byte-level
// vocabulary share: a text starts with BOS; generation stops at EOS or BOS.
inline constexpr int32_t kLlama2cBosId = 1;
inline constexpr int32_t kLlama2cEosId = 2;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`, without BOS or EOS.
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;

  // The bytes to print for `token` following `previous` (llama2.c's decode
  // and safe_printstr: a piece after BOS loses its leading space, <0xNN>
  // pieces become the byte, and a single byte that is neither printable nor
  // whitespace prints as nothing). Ids outside [0, vocab_size()) (a model
  // may have a larger vocabulary) print as nothing.
  virtual std::string Decode(int32_t previous, int32_t token) const = 0;

  virtual int32_t vocab_size() const = 0;

  // Whether `id` is a special token (an added token marked special: a
  // control token such as Gemma 3's <image_soft_token>, which ordinary text
  // does not encode to); false unless the file says so.
  virtual bool IsSpecial(int32_t id) const {
    (void)id;
    return false;
  }
};

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kFirstByteId = 3;
  static constexpr int32_t kVocabSize = kFirstByteId + 256;

  std::vector<int32_t> Encode(std::string_view text) const override;
  std::string Decode(int32_t previous, int32_t token) const override;
  int32_t vocab_size() const override { return kVocabSize; }
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Reads a llama2.c tokenizer.bin: int32 max_token_length, then per token
  // float32 score, int32 length, bytes — as many tokens as the file holds.
  // Fails naming the file and the byte offset on a short or malformed file,
  // and naming the file when it has fewer than 259 tokens (Encode's byte
  // fallback uses ids 3..258).
  static Result<std::unique_ptr<BpeTokenizer>> Load(const std::string& path);
  // Parses the contents of a tokenizer.bin; `source` names it in errors.
  static Result<std::unique_ptr<BpeTokenizer>> Parse(std::string_view bytes, const std::string& source);
  // The tokenizer of `pieces` (a space spelled ' ', bytes as "<0xNN>" at ids
  // 3..258) with their `scores` (as many), e.g. a GGUF file's. Fails naming
  // `source` when there are fewer than 259 pieces.
  static Result<std::unique_ptr<BpeTokenizer>> FromVocabulary(std::vector<std::string> pieces,
                                                              std::vector<float> scores,
                                                              const std::string& source);

  // The vocabulary: piece and score of each id.
  const std::vector<std::string>& pieces() const { return pieces_; }
  const std::vector<float>& scores() const { return scores_; }

  std::vector<int32_t> Encode(std::string_view text) const override;
  std::string Decode(int32_t previous, int32_t token) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

 private:
  BpeTokenizer() = default;
  // The id of `piece`, or -1.
  int32_t Lookup(std::string_view piece) const;

  std::vector<std::string> pieces_;  // (vocab)
  std::vector<float> scores_;        // (vocab)
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace inferno
