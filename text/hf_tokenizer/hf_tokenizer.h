// HfTokenizer: a Hugging Face tokenizers `tokenizer.json` — the two BPE
// families of Llama-like models:
// - SentencePiece-style BPE (Llama 2, Mistral, TinyLlama): normalizer
//   Prepend("▁") + Replace(" ", "▁") or pre-tokenizer Metaspace, byte_fallback
//   with <0xNN> tokens, decoder Replace + ByteFallback + Fuse + Strip;
// - byte-level BPE (Llama 3, Qwen2/3): pre-tokenizer Split(regex) + ByteLevel
//   or ByteLevel alone, optional NFC normalizer, ByteLevel decoder.
//
// Encoding runs as the library does: added tokens (special or not) are found
// in the raw text first (those with "normalized": true in the normalized
// text), each stretch between them is normalized, pre-tokenized into words,
// and each word encoded by the BPE model. Anything in the file this class
// does not implement (another model type, an unknown normalizer,
// pre-tokenizer, post-processor or decoder, BPE dropout, truncation or
// padding) fails Load with one line naming the construct and the file.
//
// Thread-safety: immutable after Load except for the model's internal word
// cache, which is synchronized; every method may be called from several
// threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "text/hf_tokenizer/added_tokens.h"
#include "text/hf_tokenizer/bpe_model.h"
#include "text/hf_tokenizer/normalizer.h"
#include "text/hf_tokenizer/pre_tokenizer.h"
#include "text/hf_tokenizer/token_decoder.h"
#include "text/tokenizer.h"

namespace inferno {

class HfTokenizer final : public Tokenizer {
 public:
  // Reads and parses `path`. Every error message starts with `path`.
  static Result<std::unique_ptr<HfTokenizer>> Load(const std::string& path);
  // Parses the contents of a tokenizer.json; `source` names it in errors.
  static Result<std::unique_ptr<HfTokenizer>> Parse(std::string_view json, const std::string& source);

  // Token ids of `text`, without the post-processor's special tokens.
  // Invalid UTF-8 in `text` is read as U+FFFD.
  std::vector<int32_t> Encode(std::string_view text) const override;

  // The bytes to print for `token` after `previous`, skipping special
  // tokens: a special token prints nothing, and a token that follows a
  // special token or none (previous < 0 or out of range) starts the text
  // (the decoder drops its leading space, as the library does for the first
  // token). Bytes may be part of a UTF-8 character; StreamingDecoder
  // assembles characters. Ids outside [0, vocab_size()) print as nothing.
  std::string Decode(int32_t previous, int32_t token) const override;

  // One more than the largest id of the vocabulary and the added tokens.
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

  // `Encode(text)` with the post-processor's special tokens around it
  // (e.g. BOS first), as the library's encode with add_special_tokens.
  std::vector<int32_t> EncodeWithSpecialTokens(std::string_view text) const;

  // The text of `ids`; special tokens print as their content unless
  // `skip_special_tokens`. Invalid UTF-8 becomes U+FFFD.
  std::string DecodeIds(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // The bytes `token` prints (see TokenDecoder::Decode); nothing for ids
  // without a piece.
  std::string TokenBytes(int32_t token, bool starts_sequence) const;

  // Whether the post-processor puts a token before the text, and which: the
  // BOS of TemplateProcessing's "single" template. Llama 3 files whose
  // post-processor is ByteLevel alone add none.
  bool adds_bos() const { return !prefix_ids_.empty(); }
  std::optional<int32_t> bos_id() const {
    return prefix_ids_.empty() ? std::nullopt : std::optional<int32_t>(prefix_ids_.front());
  }
  // Ids the post-processor puts before / after the text.
  const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
  const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }

  // The id of a token given as it is written in the file ("<|eot_id|>",
  // "</s>", "▁the", "Ġthe"), or nullopt.
  std::optional<int32_t> TokenId(std::string_view piece) const;
  // The piece of `id` as written in the file; empty when there is none.
  std::string_view TokenPiece(int32_t id) const;
  // Whether `id` is an added token marked "special".
  bool IsSpecial(int32_t id) const override { return special_ids_.contains(id); }

 private:
  HfTokenizer() = default;
  // Builds from parsed JSON; may throw nlohmann::json::exception.
  static Result<std::unique_ptr<HfTokenizer>> Build(const nlohmann::json& file);
  Status ParsePostProcessor(const nlohmann::json& config);
  // Encodes text between added tokens.
  void EncodePlain(std::string_view text, bool starts_input, std::vector<int32_t>& ids) const;

  std::unique_ptr<hf::BpeModel> model_;
  hf::Normalizer normalizer_;
  hf::PreTokenizer pre_tokenizer_;
  hf::TokenDecoder decoder_;
  // Added tokens matched in raw text, and those matched after normalization.
  std::unique_ptr<hf::AddedTokenMatcher> raw_added_;
  std::unique_ptr<hf::AddedTokenMatcher> normalized_added_;
  std::vector<std::string> pieces_;  // (vocab_size) the file's piece of each id
  hf::PieceIds ids_;                 // piece (as in the file) to id, added tokens included
  std::unordered_set<int32_t> special_ids_;
  std::vector<int32_t> prefix_ids_;
  std::vector<int32_t> suffix_ids_;
};

}  // namespace inferno
