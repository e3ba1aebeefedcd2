#include "text/hf_tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "text/utf8.h"

namespace inferno::hf {

BpeModel::BpeModel(PieceIds vocab, BpeOptions options) : vocab_(std::move(vocab)), options_(options) {
  byte_piece_ids_.fill(-1);
  byte_fallback_ids_.fill(-1);
  for (int byte = 0; byte < 256; ++byte) {
    if (auto id = Lookup(std::string(1, static_cast<char>(byte)))) byte_piece_ids_[byte] = *id;
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    if (auto id = Lookup(name)) byte_fallback_ids_[byte] = *id;
  }
}

Result<std::unique_ptr<BpeModel>> BpeModel::Create(
    PieceIds vocab, const std::vector<std::pair<std::string, std::string>>& merges,
    const BpeOptions& options) {
  std::unique_ptr<BpeModel> model(new BpeModel(std::move(vocab), options));
  model->merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    if (left.empty() || right.empty()) {
      return Error::Corruption("merge " + std::to_string(rank) + " has an empty piece");
    }
    const std::optional<int32_t> left_id = model->Lookup(left);
    const std::optional<int32_t> right_id = model->Lookup(right);
    merged.assign(left).append(right);
    const std::optional<int32_t> merged_id = model->Lookup(merged);
    if (!left_id || !right_id || !merged_id) {
      return Error::Corruption("merge " + std::to_string(rank) + " (\"" + PrintableInMessage(left) +
                               "\" + \"" + PrintableInMessage(right) +
                               "\") names a piece missing from the vocabulary");
    }
    // The first (best) rank wins when a pair is listed twice.
    model->merges_.try_emplace(PairKey(*left_id, *right_id), Merge{static_cast<int32_t>(rank), *merged_id});
    size_t last = left.size() - 1;
    while (last > 0 && !options.byte_symbols && (static_cast<uint8_t>(left[last]) & 0xC0) == 0x80) --last;
    const size_t first_length = model->SymbolLength(right, 0);
    model->joinable_.insert(PairKey(model->SymbolValue(left, last, left.size() - last),
                                    model->SymbolValue(right, 0, first_length)));
  }
  return model;
}

std::optional<int32_t> BpeModel::Lookup(std::string_view piece) const {
  auto it = vocab_.find(piece);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

size_t BpeModel::SymbolLength(std::string_view word, size_t pos) const {
  // A byte that does not start a valid character is a character of its own.
  return options_.byte_symbols ? 1 : std::max<size_t>(1, Utf8CharLength(word, pos));
}

uint32_t BpeModel::SymbolValue(std::string_view word, size_t pos, size_t length) const {
  if (length == 1 || Utf8CharLength(word, pos) != length) return static_cast<uint8_t>(word[pos]);
  return Utf8Decode(word, pos, length);
}

void BpeModel::InitialSymbols(std::string_view word, std::vector<int32_t>& symbols) const {
  bool previous_was_unk = false;
  auto add_unknown = [&](std::string_view character) {
    if (options_.byte_fallback) {
      bool all_bytes_known = true;
      for (char c : character) all_bytes_known &= byte_fallback_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes_known) {
        for (char c : character) symbols.push_back(byte_fallback_ids_[static_cast<uint8_t>(c)]);
        previous_was_unk = false;
        return;
      }
    }
    if (!options_.unk_id) return;
    if (!(options_.fuse_unk && previous_was_unk)) symbols.push_back(*options_.unk_id);
    previous_was_unk = true;
  };

  for (size_t pos = 0; pos < word.size();) {
    const size_t length = SymbolLength(word, pos);
    int32_t id = -1;
    if (options_.byte_symbols) {
      id = byte_piece_ids_[static_cast<uint8_t>(word[pos])];
    } else if (auto found = Lookup(word.substr(pos, length))) {
      id = *found;
    }
    if (id >= 0) {
      symbols.push_back(id);
      previous_was_unk = false;
    } else {
      add_unknown(word.substr(pos, length));
    }
    pos += length;
  }
}

void BpeModel::ApplyMerges(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<int32_t> symbol_ids;
  InitialSymbols(word, symbol_ids);
  const int n = static_cast<int>(symbol_ids.size());
  // A doubly linked list over symbol_ids; a merged-away symbol gets id -1.
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int position;  // the left symbol
    int32_t merged_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    auto it = merges_.find(PairKey(symbol_ids[left], symbol_ids[next[left]]));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged_id});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const int left = top.position;
    if (symbol_ids[left] < 0 || next[left] < 0) continue;
    const int right = next[left];
    // Stale when either side has changed since the candidate was queued.
    auto it = merges_.find(PairKey(symbol_ids[left], symbol_ids[right]));
    if (it == merges_.end() || it->second.merged_id != top.merged_id || it->second.rank != top.rank) continue;
    symbol_ids[left] = top.merged_id;
    symbol_ids[right] = -1;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) ids.push_back(symbol_ids[i]);
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.size() > kMaxCachedWordBytes) {
    ApplyMerges(piece, ids);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids.size();
  ApplyMerges(piece, ids);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < kMaxCachedWords) {
    cache_.try_emplace(std::string(piece), ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
  }
}

void BpeModel::Encode(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto whole = Lookup(word)) {
      ids.push_back(*whole);
      return;
    }
  }
  // Cut between two symbols that no merge joins. Both must be single-symbol
  // pieces of the vocabulary: an unknown character becomes unk, byte-fallback
  // tokens or nothing, and then its neighbours are not what joinable_ holds.
  auto known = [&](size_t pos, size_t length) {
    return options_.byte_symbols ? byte_piece_ids_[static_cast<uint8_t>(word[pos])] >= 0
                                 : Lookup(word.substr(pos, length)).has_value();
  };
  size_t piece_start = 0;
  size_t previous_length = SymbolLength(word, 0);
  uint32_t previous = SymbolValue(word, 0, previous_length);
  bool previous_known = known(0, previous_length);
  for (size_t pos = previous_length; pos < word.size();) {
    const size_t length = SymbolLength(word, pos);
    const uint32_t current = SymbolValue(word, pos, length);
    const bool current_known = known(pos, length);
    if (previous_known && current_known && !joinable_.contains(PairKey(previous, current))) {
      EncodePiece(word.substr(piece_start, pos - piece_start), ids);
      piece_start = pos;
    }
    previous = current;
    previous_known = current_known;
    pos += length;
  }
  EncodePiece(word.substr(piece_start), ids);
}

}  // namespace inferno::hf
