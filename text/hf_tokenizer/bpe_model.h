// BpeModel: the "BPE" model of a tokenizer.json — turns one pre-tokenized word
// into token ids by splitting it into symbols and repeatedly applying the
// lowest-ranked merge, as Hugging Face tokenizers' BPE does.
//
// Pieces and words are in "byte space": for a byte-level tokenizer the loader
// has already turned every vocabulary entry into the raw bytes it stands for,
// so the model works on the text's own bytes; for a SentencePiece-style
// tokenizer pieces are UTF-8 text (with "▁" for spaces).
//
// Encoding a word is O(n log n) in its symbols (a binary heap of candidate
// merges over a linked list of symbols). A word is first cut where no merge
// can ever join the characters on either side (no merge's left piece ends
// with the one and its right piece starts with the other: "o|▁" in
// SentencePiece vocabularies, whose normalized text is one long word), which
// gives the same ids; results for pieces up to kMaxCachedWordBytes are cached.
//
// Thread-safety: Encode may be called from several threads at once (the
// cache is guarded by a mutex).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/error.h"

namespace inferno::hf {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceIds = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  // Initial symbols: single bytes (byte-level BPE) or whole UTF-8 characters.
  bool byte_symbols = false;
  // A character missing from the vocabulary becomes its <0xNN> byte tokens.
  bool byte_fallback = false;
  // Id for characters that are neither in the vocabulary nor byte-fallback
  // tokens; without one such characters are dropped, as the library does.
  std::optional<int32_t> unk_id;
  // Consecutive unknown characters become one unk token.
  bool fuse_unk = false;
  // A word that is itself in the vocabulary is one token, merges unapplied.
  bool ignore_merges = false;
};

class BpeModel {
 public:
  static constexpr size_t kMaxCachedWordBytes = 256;
  static constexpr size_t kMaxCachedWords = 1 << 16;

  // `vocab`: piece (byte space) to id. `merges`: pairs of pieces, best first;
  // both pieces and their concatenation must be in `vocab`, else an error
  // naming the merge by its rank.
  static Result<std::unique_ptr<BpeModel>> Create(
      PieceIds vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      const BpeOptions& options);

  // Appends the ids of `word` to `ids`.
  void Encode(std::string_view word, std::vector<int32_t>& ids) const;

  // The id of `piece` (byte space), or nullopt.
  std::optional<int32_t> Lookup(std::string_view piece) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };

  BpeModel(PieceIds vocab, BpeOptions options);
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  // Length of the character (or byte) at word[pos].
  size_t SymbolLength(std::string_view word, size_t pos) const;
  // The character (or byte) at word[pos] as a number, for joinable_.
  uint32_t SymbolValue(std::string_view word, size_t pos, size_t length) const;
  // Ids of the piece's initial symbols (characters or bytes, with byte
  // fallback and unk applied).
  void InitialSymbols(std::string_view piece, std::vector<int32_t>& symbols) const;
  // Encodes a piece no cut point divides, through the cache.
  void EncodePiece(std::string_view piece, std::vector<int32_t>& ids) const;
  void ApplyMerges(std::string_view piece, std::vector<int32_t>& ids) const;

  PieceIds vocab_;
  BpeOptions options_;
  std::unordered_map<uint64_t, Merge> merges_;
  // PairKey(last symbol of a merge's left piece, first symbol of its right).
  std::unordered_set<uint64_t> joinable_;
  std::array<int32_t, 256> byte_piece_ids_;     // id of each single-byte piece, or -1
  std::array<int32_t, 256> byte_fallback_ids_;  // id of "<0xNN>", or -1

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace inferno::hf
