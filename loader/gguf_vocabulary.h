// The tokenizer a GGUF file embeds (its tokenizer.ggml.* keys), as llama.cpp
// writes and reads them:
//
//   tokenizer.ggml.model          string: "llama" (SentencePiece-style BPE with
//                                 scores and byte fallback) or "gpt2" (byte-level
//                                 BPE with merges)
//   tokenizer.ggml.tokens         array of string, one per id (SentencePiece
//                                 pieces spell a space as U+2581)
//   tokenizer.ggml.scores         array of float32, one per id (llama; optional for gpt2)
//   tokenizer.ggml.token_type     array of int32, one per id (GgufTokenType)
//   tokenizer.ggml.merges         array of string "left right" (gpt2)
//   tokenizer.ggml.pre            string: gpt2's pre-tokenizer by llama.cpp's name
//                                 ("llama-bpe", "qwen2", ...; absent: GPT-2's)
//   tokenizer.ggml.add_bos_token  bool (optional)
//   tokenizer.ggml.bos_token_id   uint32
//   tokenizer.ggml.eos_token_id   uint32
//   tokenizer.ggml.unknown_token_id uint32 (optional)
//
// Thread-safety: plain value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/gguf_format.h"

namespace inferno {

inline constexpr char kGgufTokenizerModelKey[] = "tokenizer.ggml.model";
inline constexpr char kGgufTokensKey[] = "tokenizer.ggml.tokens";
inline constexpr char kGgufScoresKey[] = "tokenizer.ggml.scores";
inline constexpr char kGgufTokenTypesKey[] = "tokenizer.ggml.token_type";
inline constexpr char kGgufMergesKey[] = "tokenizer.ggml.merges";
inline constexpr char kGgufPreTokenizerKey[] = "tokenizer.ggml.pre";
inline constexpr char kGgufAddBosKey[] = "tokenizer.ggml.add_bos_token";
inline constexpr char kGgufBosTokenIdKey[] = "tokenizer.ggml.bos_token_id";
inline constexpr char kGgufEosTokenIdKey[] = "tokenizer.ggml.eos_token_id";
inline constexpr char kGgufUnknownTokenIdKey[] = "tokenizer.ggml.unknown_token_id";
inline constexpr char kGgufLlamaTokenizer[] = "llama";
inline constexpr char kGgufGpt2Tokenizer[] = "gpt2";

// llama.cpp's token types (llama_token_type).
enum class GgufTokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct GgufVocabulary {
  std::string model;                 // kGgufLlamaTokenizer or kGgufGpt2Tokenizer
  std::vector<std::string> tokens;   // (vocab)
  std::vector<float> scores;         // (vocab), or empty (gpt2 only)
  std::vector<int32_t> token_types;  // (vocab), or empty
  std::vector<std::string> merges;   // gpt2: "left right", highest priority first
  std::string pre;                   // gpt2: tokenizer.ggml.pre, or empty
  std::optional<bool> add_bos;       // tokenizer.ggml.add_bos_token
  int64_t bos_id = 0;
  int64_t eos_id = 0;
  std::optional<int64_t> unknown_id;
};

// The vocabulary of a parsed GGUF file. NotFound when the file has no
// tokenizer.ggml.model; otherwise fails, naming `source` and the key, on a
// model other than llama and gpt2, a missing or mistyped key, arrays whose
// lengths differ from the token count, a llama model without scores, a gpt2
// model without merges, or special ids outside the vocabulary.
Result<GgufVocabulary> ReadGgufVocabulary(const GgufFile& file, const std::string& source);

// The tokenizer.ggml.* keys of `vocabulary`, in the order llama.cpp's
// converter writes them. Precondition: the vocabulary is consistent (as
// ReadGgufVocabulary checks).
std::vector<GgufKeyValue> GgufVocabularyMetadata(const GgufVocabulary& vocabulary);

}  // namespace inferno
