#include "text/gguf_tokenizer.h"

#include <cstdio>

#include <glog/logging.h>
#include <nlohmann/json.hpp>

#include "text/hf_tokenizer/hf_tokenizer.h"

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

// The pre-tokenizers of the tokenizer.ggml.pre values implemented: the
// regex of the Split step before ByteLevel (empty: ByteLevel's own GPT-2
// regex), whether merges are ignored for words in the vocabulary, and
// whether text is NFC-normalized first, as the models' tokenizer.json files
// configure them.
struct PreTokenizerSpec {
  std::string_view name;
  std::string_view regex;
  bool ignore_merges;
  bool nfc;
};
constexpr PreTokenizerSpec kPreTokenizers[] = {
    {"", "", false, false},
    {"default", "", false, false},
    {"gpt-2", "", false, false},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, false},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true},
};

// The tokenizer.json a gpt2 vocabulary stands for.
Result<std::string> ByteLevelTokenizerJson(const GgufVocabulary& v, const std::string& source) {
  const PreTokenizerSpec* pre = nullptr;
  for (const PreTokenizerSpec& spec : kPreTokenizers) {
    if (spec.name == v.pre) pre = &spec;
  }
  if (pre == nullptr) {
    return Error::Unimplemented(source + ": GGUF tokenizer pre-tokenizer '" + PrintableInMessage(v.pre) +
                                "' is not implemented (gpt-2, llama-bpe and qwen2 are)");
  }
  using nlohmann::json;
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", pre->regex.empty()}};
  json pre_tokenizer = byte_level;
  if (!pre->regex.empty()) {
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      {{{"type", "Split"},
                        {"pattern", {{"Regex", std::string(pre->regex)}}},
                        {"behavior", "Isolated"},
                        {"invert", false}},
                       byte_level}}};
  }
  json vocab = json::object(), added = json::array();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const int32_t type =
        v.token_types.empty() ? static_cast<int32_t>(GgufTokenType::kNormal) : v.token_types[id];
    if (type == static_cast<int32_t>(GgufTokenType::kControl) ||
        type == static_cast<int32_t>(GgufTokenType::kUserDefined)) {
      const bool special = type == static_cast<int32_t>(GgufTokenType::kControl);
      added.push_back(
          {{"id", id}, {"content", v.tokens[id]}, {"special", special}, {"normalized", !special}});
    } else {
      vocab[v.tokens[id]] = id;
    }
  }
  const json file = {
      {"pre_tokenizer", pre_tokenizer},
      {"normalizer", pre->nfc ? json{{"type", "NFC"}} : json()},
      {"decoder", byte_level},
      {"added_tokens", added},
      {"model",
       {{"type", "BPE"}, {"ignore_merges", pre->ignore_merges}, {"vocab", vocab}, {"merges", v.merges}}}};
  return file.dump(-1, ' ', false, json::error_handler_t::replace);
}

// An empty "llama" vocabulary with llama2.c's special ids.
GgufVocabulary SentencePieceVocabulary() {
  GgufVocabulary vocabulary;
  vocabulary.model = kGgufLlamaTokenizer;
  vocabulary.bos_id = kLlama2cBosId;
  vocabulary.eos_id = kLlama2cEosId;
  vocabulary.unknown_id = 0;
  return vocabulary;
}

std::string BytePiece(int byte) {
  char piece[8];
  std::snprintf(piece, sizeof(piece), "<0x%02X>", byte);
  return piece;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> MakeGgufTokenizer(const GgufVocabulary& vocabulary,
                                                     const std::string& source) {
  if (vocabulary.model == kGgufGpt2Tokenizer) {
    Result<std::string> json = ByteLevelTokenizerJson(vocabulary, source);
    if (!json) return json.error();
    Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(*json, source);
    if (!tokenizer) return tokenizer.error();
    return std::unique_ptr<Tokenizer>(std::move(*tokenizer));
  }
  if (vocabulary.model != kGgufLlamaTokenizer) {
    return Error::Unimplemented(source + ": GGUF tokenizer model '" + PrintableInMessage(vocabulary.model) +
                                "' is not implemented (llama and gpt2 are)");
  }
  if (vocabulary.bos_id != kLlama2cBosId) {
    return Error::Unimplemented(source + ": GGUF llama tokenizer with BOS id " +
                                std::to_string(vocabulary.bos_id) +
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
  for (const std::string& token : vocabulary.tokens)
    pieces.push_back(Replace(token, kSentencePieceSpace, " "));
  Result<std::unique_ptr<BpeTokenizer>> tokenizer =
      BpeTokenizer::FromVocabulary(std::move(pieces), vocabulary.scores, source);
  if (!tokenizer) return tokenizer.error();
  return std::unique_ptr<Tokenizer>(std::move(*tokenizer));
}

GgufVocabulary GgufVocabularyOf(const BpeTokenizer& tokenizer) {
  GgufVocabulary vocabulary = SentencePieceVocabulary();
  vocabulary.scores = tokenizer.scores();
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
  GgufVocabulary vocabulary = SentencePieceVocabulary();
  vocabulary.scores.assign(static_cast<size_t>(size), 0.0f);
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

Result<GgufVocabulary> VocabularyForModel(const std::optional<std::string>& tokenizer_bin,
                                          int64_t vocab_size) {
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
