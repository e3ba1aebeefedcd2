#include "text/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>

#include "base/byte_codec.h"

#include <glog/logging.h>

namespace inferno {
namespace {

// llama2.c's safe_printstr: a lone byte that is neither printable nor
// whitespace is dropped.
std::string PrintableOrEmpty(std::string piece) {
  if (piece.size() == 1) {
    const unsigned char byte = static_cast<unsigned char>(piece[0]);
    if (!std::isprint(byte) && !std::isspace(byte)) return "";
  }
  return piece;
}

bool IsUtf8Continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

std::vector<int32_t> ByteTokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (unsigned char byte : text) ids.push_back(kFirstByteId + byte);
  return ids;
}

std::string ByteTokenizer::Decode(int32_t, int32_t token) const {
  if (token < kFirstByteId || token >= kVocabSize) return "";
  return PrintableOrEmpty(std::string(1, static_cast<char>(token - kFirstByteId)));
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error::Io("--tokenizer: cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return Error::Io("--tokenizer: cannot read '" + path + "'");
  return Parse(bytes, path);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Parse(std::string_view bytes, const std::string& path) {
  ByteReader reader(std::as_bytes(std::span(bytes)));
  auto truncated = [&](int32_t token) {
    return Error::Corruption(path + ": truncated at byte offset " + std::to_string(reader.offset()) +
                             " reading token " + std::to_string(token));
  };
  int32_t max_token_length = 0;
  if (!reader.Get(max_token_length)) return truncated(0);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  for (int32_t id = 0; reader.remaining() > 0; ++id) {
    float score = 0.0f;
    int32_t length = 0;
    if (!reader.Get(score) || !reader.Get(length)) return truncated(id);
    if (length < 0 || length > max_token_length) {
      return Error::Corruption(path + ": token " + std::to_string(id) + " at byte offset " +
                               std::to_string(reader.offset() - 4) + " has length " + std::to_string(length) +
                               ", outside [0, " + std::to_string(max_token_length) + "]");
    }
    // A view first: a short file must not make us allocate the 2 GiB its
    // length field may claim.
    std::span<const std::byte> piece_bytes;
    if (!reader.GetBytes(static_cast<size_t>(length), piece_bytes)) return truncated(id);
    pieces.emplace_back(reinterpret_cast<const char*>(piece_bytes.data()), piece_bytes.size());
    scores.push_back(score);
  }
  return FromVocabulary(std::move(pieces), std::move(scores), path);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromVocabulary(std::vector<std::string> pieces,
                                                                   std::vector<float> scores,
                                                                   const std::string& source) {
  CHECK_EQ(pieces.size(), scores.size());
  // Encode falls back to ids 3..258, one per byte, for text the vocabulary
  // lacks (as llama2.c does), so those ids must exist.
  if (pieces.size() < static_cast<size_t>(ByteTokenizer::kVocabSize)) {
    return Error::Corruption(source + ": " + std::to_string(pieces.size()) +
                             " tokens, but byte fallback needs at least " +
                             std::to_string(ByteTokenizer::kVocabSize) + " (3 specials, then one per byte)");
  }
  std::unique_ptr<BpeTokenizer> tokenizer(new BpeTokenizer());
  for (size_t id = 0; id < pieces.size(); ++id) {
    tokenizer->ids_.emplace(pieces[id], static_cast<int32_t>(id));  // the first of duplicate pieces wins
  }
  tokenizer->pieces_ = std::move(pieces);
  tokenizer->scores_ = std::move(scores);
  return tokenizer;
}

int32_t BpeTokenizer::Lookup(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  const int32_t space = Lookup(" ");
  if (space >= 0) ids.push_back(space);

  // One id per UTF-8 code point (at most 4 bytes), or one byte-fallback id
  // (byte + 3) per byte of a code point the vocabulary lacks.
  std::string code_point;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsUtf8Continuation(static_cast<unsigned char>(text[i]))) code_point.clear();
    code_point.push_back(text[i]);
    const bool more = i + 1 < text.size() && IsUtf8Continuation(static_cast<unsigned char>(text[i + 1]));
    if (more && code_point.size() < 4) continue;
    if (const int32_t id = Lookup(code_point); id >= 0) {
      ids.push_back(id);
    } else {
      for (unsigned char byte : code_point) ids.push_back(static_cast<int32_t>(byte) + 3);
    }
    code_point.clear();
  }

  // Merge the adjacent pair with the best-scoring merged piece (the first on
  // ties) until no pair merges, as llama2.c does, in O(n log n): the symbols
  // form a linked list in text order, and a heap holds every adjacent pair
  // that merges, best score first, then leftmost. A merge adds the pairs it
  // forms with its neighbours; an entry whose symbols changed since it was
  // pushed is skipped when it comes up.
  struct Symbol {
    int32_t id;
    int32_t prev;          // -1 at the start
    int32_t next;          // -1 at the end
    uint32_t version = 0;  // changes when the symbol merges or is merged away
  };
  struct Candidate {
    float score;
    int32_t left;  // the pair's first symbol; the second is its next
    int32_t id;    // the merged piece
    uint32_t left_version;
    uint32_t right_version;
  };
  const auto after = [](const Candidate& a, const Candidate& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  std::vector<Symbol> symbols(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    symbols[i] = {ids[i], static_cast<int32_t>(i) - 1, i + 1 < ids.size() ? static_cast<int32_t>(i + 1) : -1};
  }
  std::vector<Candidate> heap;
  std::string merged;
  const auto consider = [&](int32_t left) {
    if (left < 0 || symbols[static_cast<size_t>(left)].next < 0) return;
    const Symbol& a = symbols[static_cast<size_t>(left)];
    const Symbol& b = symbols[static_cast<size_t>(a.next)];
    merged = pieces_[a.id];
    merged += pieces_[b.id];
    const int32_t id = Lookup(merged);
    // llama2.c starts its search for the best score at -1e10: no lower score
    // (nor a NaN) ever merges.
    if (id < 0 || !(scores_[id] > -1e10f)) return;
    heap.push_back({scores_[id], left, id, a.version, b.version});
    std::push_heap(heap.begin(), heap.end(), after);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const Candidate best = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(best.left)];
    if (left.version != best.left_version || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    if (right.version != best.right_version) continue;
    left.id = best.id;
    ++left.version;
    ++right.version;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = best.left;
    consider(left.prev);
    consider(best.left);
  }
  ids.clear();
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    ids.push_back(symbols[static_cast<size_t>(i)].id);
  }
  return ids;
}

std::string BpeTokenizer::Decode(int32_t previous, int32_t token) const {
  if (token < 0 || token >= vocab_size()) return "";
  std::string_view piece = pieces_[token];
  if (previous == kLlama2cBosId && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  unsigned int byte = 0;
  if (piece.size() == 6 && piece.substr(0, 3) == "<0x" && piece[5] == '>' &&
      std::sscanf(std::string(piece).c_str(), "<0x%02X>", &byte) == 1) {
    return PrintableOrEmpty(std::string(1, static_cast<char>(byte)));
  }
  return PrintableOrEmpty(std::string(piece));
}

}  // namespace inferno
