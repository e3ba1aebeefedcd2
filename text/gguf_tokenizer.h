// The tokenizer a GGUF file embeds (loader/gguf_vocabulary.h) behind
// Tokenizer, and the GGUF vocabulary of a llama2.c tokenizer.bin.
//
// tokenizer.ggml.model "llama" is a SentencePiece-style BPE vocabulary with
// scores and byte fallback, which BpeTokenizer encodes and decodes (its
// pieces spell a space U+2581 "▁", BpeTokenizer ' '). BpeTokenizer's
// conventions are llama2.c's and Llama 2's: BOS is id 1 and the byte tokens
// <0x00>..<0xFF> are ids 3..258; a vocabulary laid out otherwise is refused.
// tokenizer.ggml.model "gpt2" (byte-level BPE with merges, Llama 3, Qwen) is
// handed to HfTokenizer's byte-level BPE as the tokenizer.json it stands for:
// the tokens of types control and user-defined become added tokens (special
// and not), the others the vocabulary, the merges in order, and the
// pre-tokenizer of tokenizer.ggml.pre — GPT-2's (absent, "default",
// "gpt-2"), Llama 3's ("llama-bpe", which also ignores merges for whole
// words) or Qwen 2's ("qwen2", after NFC); other values are refused naming
// them.
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "loader/gguf_vocabulary.h"
#include "text/tokenizer.h"

namespace inferno {

// The tokenizer of `vocabulary`; errors name `source`.
Result<std::unique_ptr<Tokenizer>> MakeGgufTokenizer(const GgufVocabulary& vocabulary,
                                                     const std::string& source);

// The "llama" GGUF vocabulary of a llama2.c tokenizer.bin, typed as
// llama.cpp types SentencePiece tokens (0 unknown, 1 and 2 control, <0xNN>
// byte, the rest normal), BOS 1, EOS 2.
GgufVocabulary GgufVocabularyOf(const BpeTokenizer& tokenizer);

// A "llama" GGUF vocabulary of `size` tokens (>= 259) for models without a
// tokenizer of their own (toy models, or a checkpoint whose vocabulary is
// not at hand): <unk>, <s>, </s>, the byte tokens, then unused "<extra_N>"
// pieces, all scored 0 — text is encoded byte by byte.
GgufVocabulary ByteFallbackVocabulary(int64_t size);

// The vocabulary a GGUF writer embeds for a model of `vocab_size` tokens:
// that of the llama2.c tokenizer.bin at `tokenizer_bin` when given (it must
// hold exactly `vocab_size` tokens), else ByteFallbackVocabulary. Errors name
// the file (--tokenizer).
Result<GgufVocabulary> VocabularyForModel(const std::optional<std::string>& tokenizer_bin,
                                          int64_t vocab_size);

}  // namespace inferno
