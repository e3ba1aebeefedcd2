#include "text/hf_tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "text/hf_tokenizer/byte_level.h"
#include "text/hf_tokenizer/streaming_decoder.h"
#include "text/utf8.h"

namespace inferno {
namespace {

using json = nlohmann::json;

// "a b" or ["a", "b"].
Result<std::pair<std::string, std::string>> ParseMerge(const json& merge, size_t rank) {
  if (merge.is_array() && merge.size() == 2) {
    return std::pair{merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  if (merge.is_string()) {
    const std::string text = merge.get<std::string>();
    const size_t space = text.find(' ');
    if (space != std::string::npos && text.find(' ', space + 1) == std::string::npos) {
      return std::pair{text.substr(0, space), text.substr(space + 1)};
    }
  }
  return Error::Corruption("model.merges[" + std::to_string(rank) + "] is " + merge.dump() +
                           ", not \"a b\" or [\"a\", \"b\"]");
}

bool FieldIsSet(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && !it->is_null();
}

}  // namespace

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Io(path + ": cannot open");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Error::Io(path + ": read failed");
  return Parse(contents.str(), path);
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Parse(std::string_view text, const std::string& source) {
  // The one place nlohmann-json's exceptions are caught: a syntax error or a
  // field of the wrong type anywhere below.
  try {
    Result<std::unique_ptr<HfTokenizer>> tokenizer = Build(json::parse(text));
    if (!tokenizer) return tokenizer.error().Prefixed(source + ": ");
    return tokenizer;
  } catch (const json::exception& e) {
    std::string reason = e.what();
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    return Error::Corruption(source + ": " + reason);
  }
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Build(const json& file) {
  if (!file.is_object()) return Error::Corruption("not a JSON object");
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer());
  for (const char* unsupported : {"truncation", "padding"}) {
    if (FieldIsSet(file, unsupported))
      return Error::Unimplemented(std::string(unsupported) + " (set, not null)");
  }

  const json& model = file.at("model");
  const std::string type = model.value("type", "BPE");
  if (type != "BPE")
    return Error::Unimplemented("model type \"" + PrintableInMessage(type) + "\" (only BPE is supported)");
  if (FieldIsSet(model, "dropout") && model.at("dropout").get<double>() > 0) {
    return Error::Unimplemented("BPE dropout " + model.at("dropout").dump());
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (FieldIsSet(model, affix) && !model.at(affix).get<std::string>().empty()) {
      return Error::Unimplemented(std::string("BPE ") + affix + " " + model.at(affix).dump());
    }
  }

  Result<hf::PreTokenizer> pre_tokenizer = hf::PreTokenizer::FromJson(file.value("pre_tokenizer", json()));
  if (!pre_tokenizer) return pre_tokenizer.error();
  tokenizer->pre_tokenizer_ = std::move(*pre_tokenizer);
  Result<hf::Normalizer> normalizer = hf::Normalizer::FromJson(file.value("normalizer", json()));
  if (!normalizer) return normalizer.error();
  tokenizer->normalizer_ = std::move(*normalizer);
  Result<hf::TokenDecoder> decoder = hf::TokenDecoder::FromJson(file.value("decoder", json()));
  if (!decoder) return decoder.error();
  tokenizer->decoder_ = std::move(*decoder);

  // The vocabulary, in the file's form (for ids and decoding) and in the
  // model's byte space (raw bytes for a byte-level model).
  const bool byte_level = tokenizer->pre_tokenizer_.byte_level();
  auto to_model_space = [&](const std::string& piece) -> std::optional<std::string> {
    return byte_level ? hf::ByteLevelToBytes(piece) : std::optional<std::string>(piece);
  };
  const json& vocab = model.at("vocab");
  hf::PieceIds model_vocab;
  model_vocab.reserve(vocab.size());
  tokenizer->ids_.reserve(vocab.size() + file.value("added_tokens", json::array()).size());
  int32_t max_id = -1;
  for (const auto& [piece, id_json] : vocab.items()) {
    const int32_t id = id_json.get<int32_t>();
    if (id < 0)
      return Error::Corruption("model.vocab: \"" + PrintableInMessage(piece) + "\" has negative id " +
                               std::to_string(id));
    max_id = std::max(max_id, id);
    tokenizer->ids_.emplace(piece, id);
    // A piece outside the byte alphabet can never come out of a byte-level
    // pre-tokenizer: the model does not need it.
    if (std::optional<std::string> bytes = to_model_space(piece)) model_vocab.emplace(std::move(*bytes), id);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  const json& merges_json = model.at("merges");
  merges.reserve(merges_json.size());
  for (size_t rank = 0; rank < merges_json.size(); ++rank) {
    Result<std::pair<std::string, std::string>> merge = ParseMerge(merges_json[rank], rank);
    if (!merge) return merge.error();
    std::optional<std::string> left = to_model_space(merge->first);
    std::optional<std::string> right = to_model_space(merge->second);
    if (!left || !right) {
      return Error::Corruption("model.merges[" + std::to_string(rank) + "] " + merges_json[rank].dump() +
                               " has characters outside the byte-level alphabet");
    }
    merges.emplace_back(std::move(*left), std::move(*right));
  }

  hf::BpeOptions options;
  options.byte_symbols = byte_level;
  options.byte_fallback = model.value("byte_fallback", false);
  options.fuse_unk = model.value("fuse_unk", false);
  options.ignore_merges = model.value("ignore_merges", false);
  if (FieldIsSet(model, "unk_token")) {
    const std::string unk = model.at("unk_token").get<std::string>();
    auto it = tokenizer->ids_.find(unk);
    if (it == tokenizer->ids_.end())
      return Error::Corruption("model.unk_token \"" + PrintableInMessage(unk) +
                               "\" is not in the vocabulary");
    options.unk_id = it->second;
  }

  std::vector<hf::AddedToken> raw_added, normalized_added;
  for (const json& entry : file.value("added_tokens", json::array())) {
    hf::AddedToken token;
    token.id = entry.at("id").get<int32_t>();
    if (token.id < 0) return Error::Corruption("added_tokens: negative id " + std::to_string(token.id));
    token.content = entry.at("content").get<std::string>();
    token.single_word = entry.value("single_word", false);
    token.lstrip = entry.value("lstrip", false);
    token.rstrip = entry.value("rstrip", false);
    token.normalized = entry.value("normalized", !entry.value("special", false));
    token.special = entry.value("special", false);
    max_id = std::max(max_id, token.id);
    tokenizer->ids_.insert_or_assign(token.content, token.id);
    if (token.special) tokenizer->special_ids_.insert(token.id);
    (token.normalized ? normalized_added : raw_added).push_back(std::move(token));
  }
  // Ids index a table: they must be nearly dense (real files are dense).
  const size_t entries = tokenizer->ids_.size();
  if (static_cast<size_t>(max_id) >= 2 * entries + 1024) {
    return Error::Corruption("largest token id " + std::to_string(max_id) + " is far above the " +
                             std::to_string(entries) + " tokens of model.vocab and added_tokens");
  }
  tokenizer->pieces_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [piece, id] : tokenizer->ids_) tokenizer->pieces_[id] = piece;
  tokenizer->raw_added_ = std::make_unique<hf::AddedTokenMatcher>(std::move(raw_added));
  tokenizer->normalized_added_ = std::make_unique<hf::AddedTokenMatcher>(std::move(normalized_added));

  Result<std::unique_ptr<hf::BpeModel>> bpe = hf::BpeModel::Create(std::move(model_vocab), merges, options);
  if (!bpe) return bpe.error();
  tokenizer->model_ = std::move(*bpe);

  if (Status status = tokenizer->ParsePostProcessor(file.value("post_processor", json())); !status) {
    return status.error();
  }
  return tokenizer;
}

Status HfTokenizer::ParsePostProcessor(const json& config) {
  if (config.is_null()) return {};
  const std::string type = config.at("type").get<std::string>();
  if (type == "ByteLevel") return {};  // only adjusts offsets
  if (type == "Sequence") {
    for (const json& inner : config.at("processors")) {
      if (Status status = ParsePostProcessor(inner); !status) return status;
    }
    return {};
  }
  if (type != "TemplateProcessing")
    return Error::Unimplemented("post_processor type \"" + PrintableInMessage(type) + "\"");
  const json& special_tokens = config.at("special_tokens");
  bool seen_sequence = false;
  for (const json& item : config.at("single")) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const std::string name = item.at("SpecialToken").at("id").get<std::string>();
    auto special = special_tokens.find(name);
    if (special == special_tokens.end()) {
      return Error::Corruption("post_processor template names \"" + PrintableInMessage(name) +
                               "\", not in its special_tokens");
    }
    for (const json& id : special->at("ids"))
      (seen_sequence ? suffix_ids_ : prefix_ids_).push_back(id.get<int32_t>());
  }
  return {};
}

void HfTokenizer::EncodePlain(std::string_view text, bool starts_input, std::vector<int32_t>& ids) const {
  const std::string normalized = normalizer_.Normalize(text);
  std::vector<std::string> words;
  for (const hf::TextSegment& segment : normalized_added_->Split(normalized)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    words.clear();
    pre_tokenizer_.Split(segment.text, starts_input && segment.text.data() == normalized.data(), words);
    for (const std::string& word : words) model_->Encode(word, ids);
  }
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view text) const {
  std::string repaired;
  if (!IsValidUtf8(text)) {
    repaired = Utf8Lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  for (const hf::TextSegment& segment : raw_added_->Split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else {
      EncodePlain(segment.text, segment.text.data() == text.data(), ids);
    }
  }
  return ids;
}

std::vector<int32_t> HfTokenizer::EncodeWithSpecialTokens(std::string_view text) const {
  std::vector<int32_t> ids = prefix_ids_;
  const std::vector<int32_t> body = Encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::string HfTokenizer::TokenBytes(int32_t token, bool starts_sequence) const {
  const std::string_view piece = TokenPiece(token);
  if (piece.empty()) return "";
  return decoder_.Decode(piece, starts_sequence);
}

std::string HfTokenizer::Decode(int32_t previous, int32_t token) const {
  if (IsSpecial(token)) return "";
  const bool starts_sequence = TokenPiece(previous).empty() || IsSpecial(previous);
  return TokenBytes(token, starts_sequence);
}

std::string HfTokenizer::DecodeIds(std::span<const int32_t> ids, bool skip_special_tokens) const {
  hf::StreamingDecoder stream(*this, skip_special_tokens);
  std::string text;
  for (int32_t id : ids) text += stream.Push(id);
  text += stream.Finish();
  return text;
}

std::optional<int32_t> HfTokenizer::TokenId(std::string_view piece) const {
  auto it = ids_.find(piece);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::string_view HfTokenizer::TokenPiece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return pieces_[id];
}

}  // namespace inferno
