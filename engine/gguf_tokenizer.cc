#include "engine/gguf_tokenizer.h"

#include <cstdio>

#include <glog/logging.h>

namespace inferno {
namespace {

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";  // U+2581

std::string Replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, from.size()) == from) {
      out += to;
      i += from.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string BytePiece(int byte) {
  char piece[8];
  std::snprintf(piece, sizeof(piece), "<0x%02X>", byte);
  return piece;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> MakeGgufTokenizer(const GgufVocabulary& vocabulary, const std::string& source) {
  if (vocabulary.model != kGgufLlamaTokenizer) {
    return Error::Unimplemented(source + ": GGUF tokenizer model '" + vocabulary.model +
                                "' is not implemented yet (llama is)");
  }
  if (vocabulary.bos_id != kLlama2cBosId) {
    return Error::Unimplemented(source + ": GGUF llama tokenizer with BOS id " + std::to_string(vocabulary.bos_id) +
                                " (inferno's SentencePiece tokenizer needs BOS 1)");
  }
  for (int byte = 0; byte < 256; ++byte) {
    const size_t id = static_cast<size_t>(ByteTokenizer::kFirstByteId + byte);
    if (id >= vocabulary.tokens.size() || vocabulary.tokens[id] != BytePiece(byte)) {
      return Error::Unimplemented(source + ": GGUF llama tokenizer without " + BytePiece(byte) + " at id " +
                                  std::to_string(id) + " (inferno's byte fallback uses ids 3..258)");
    }
  }
  std::vector<std::string> pieces;
  for (const std::string& token : vocabulary.tokens) pieces.push_back(Replace(token, kSentencePieceSpace, " "));
  Result<std::unique_ptr<BpeTokenizer>> tokenizer =
      BpeTokenizer::FromVocabulary(std::move(pieces), vocabulary.scores, source);
  if (!tokenizer) return tokenizer.error();
  return std::unique_ptr<Tokenizer>(std::move(*tokenizer));
}

GgufVocabulary GgufVocabularyOf(const BpeTokenizer& tokenizer) {
  GgufVocabulary vocabulary{.model = kGgufLlamaTokenizer,
                            .scores = tokenizer.scores(),
                            .bos_id = kLlama2cBosId,
                            .eos_id = kLlama2cEosId,
                            .unknown_id = 0};
  for (size_t id = 0; id < tokenizer.pieces().size(); ++id) {
    const std::string& piece = tokenizer.pieces()[id];
    vocabulary.tokens.push_back(Replace(piece, " ", kSentencePieceSpace));
    GgufTokenType type = GgufTokenType::kNormal;
    if (id == 0) {
      type = GgufTokenType::kUnknown;
    } else if (id == kLlama2cBosId || id == kLlama2cEosId) {
      type = GgufTokenType::kControl;
    } else if (id >= ByteTokenizer::kFirstByteId && id < ByteTokenizer::kVocabSize &&
               piece == BytePiece(static_cast<int>(id) - ByteTokenizer::kFirstByteId)) {
      type = GgufTokenType::kByte;
    }
    vocabulary.token_types.push_back(static_cast<int32_t>(type));
  }
  return vocabulary;
}

GgufVocabulary ByteFallbackVocabulary(int64_t size) {
  CHECK_GE(size, ByteTokenizer::kVocabSize);
  GgufVocabulary vocabulary{.model = kGgufLlamaTokenizer,
                            .scores = std::vector<float>(static_cast<size_t>(size), 0.0f),
                            .bos_id = kLlama2cBosId,
                            .eos_id = kLlama2cEosId,
                            .unknown_id = 0};
  for (int64_t id = 0; id < size; ++id) {
    GgufTokenType type = GgufTokenType::kUnused;
    std::string piece = "<extra_" + std::to_string(id) + ">";
    if (id == 0) {
      piece = "<unk>", type = GgufTokenType::kUnknown;
    } else if (id == kLlama2cBosId || id == kLlama2cEosId) {
      piece = id == kLlama2cBosId ? "<s>" : "</s>", type = GgufTokenType::kControl;
    } else if (id < ByteTokenizer::kVocabSize) {
      piece = BytePiece(static_cast<int>(id) - ByteTokenizer::kFirstByteId), type = GgufTokenType::kByte;
    }
    vocabulary.tokens.push_back(std::move(piece));
    vocabulary.token_types.push_back(static_cast<int32_t>(type));
  }
  return vocabulary;
}

Result<GgufVocabulary> VocabularyForModel(const std::optional<std::string>& tokenizer_bin, int64_t vocab_size) {
  if (!tokenizer_bin) {
    if (vocab_size < ByteTokenizer::kVocabSize) {
      return Error::InvalidArgument("a vocabulary of " + std::to_string(vocab_size) +
                                    " tokens is too small for a byte-fallback tokenizer (259 or more)");
    }
    return ByteFallbackVocabulary(vocab_size);
  }
  Result<std::unique_ptr<BpeTokenizer>> tokenizer = BpeTokenizer::Load(*tokenizer_bin);
  if (!tokenizer) return tokenizer.error();
  if ((*tokenizer)->vocab_size() != vocab_size) {
    return Error::InvalidArgument("--tokenizer: " + *tokenizer_bin + " holds " +
                                  std::to_string((*tokenizer)->vocab_size()) + " tokens, the model " +
                                  std::to_string(vocab_size));
  }
  return GgufVocabularyOf(**tokenizer);
}

}  // namespace inferno
