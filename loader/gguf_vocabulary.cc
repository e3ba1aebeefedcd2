#include "loader/gguf_vocabulary.h"

#include <cmath>

namespace inferno {
namespace {

Error KeyError(const std::string& source, const char* key, const std::string& what) {
  return Error::Corruption(source + ": GGUF key '" + key + "' " + what);
}

// The array `key` of `element_type`, with `count` elements when count >= 0;
// nullptr when absent.
Result<const GgufValue*> Array(const GgufFile& file, const std::string& source, const char* key,
                               std::initializer_list<GgufValueType> element_types, int64_t count) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) return static_cast<const GgufValue*>(nullptr);
  bool typed = false;
  for (GgufValueType t : element_types) typed |= value->is_array() && value->element_type == t;
  if (!typed) return KeyError(source, key, "is a " + value->TypeName() + ", not the array expected");
  if (count >= 0 && static_cast<int64_t>(value->values.size()) != count) {
    return KeyError(source, key,
                    "has " + std::to_string(value->values.size()) + " elements, not one per token (" +
                        std::to_string(count) + ")");
  }
  return value;
}

Result<std::optional<int64_t>> TokenId(const GgufFile& file, const std::string& source, const char* key,
                                       int64_t vocab) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) return std::optional<int64_t>();
  const std::optional<int64_t> id = value->AsInt();
  if (!id || *id < 0 || *id >= vocab) {
    return KeyError(source, key, "is not a token id below the vocabulary size " + std::to_string(vocab));
  }
  return id;
}

GgufValue StringArray(const std::vector<std::string>& strings) {
  GgufValue value{GgufValueType::kArray, GgufValueType::kString, {}};
  value.values.assign(strings.begin(), strings.end());
  return value;
}

GgufValue Uint32(int64_t id) {
  return {GgufValueType::kUint32, GgufValueType::kUint32, {static_cast<uint64_t>(id)}};
}

}  // namespace

Result<GgufVocabulary> ReadGgufVocabulary(const GgufFile& file, const std::string& source) {
  const GgufValue* model = file.Find(kGgufTokenizerModelKey);
  if (model == nullptr)
    return Error::NotFound(source + ": holds no tokenizer (no '" + kGgufTokenizerModelKey + "')");
  if (model->AsString() == nullptr) return KeyError(source, kGgufTokenizerModelKey, "is not a string");
  GgufVocabulary vocabulary;
  vocabulary.model = *model->AsString();
  if (vocabulary.model != kGgufLlamaTokenizer && vocabulary.model != kGgufGpt2Tokenizer) {
    return Error::Unimplemented(source + ": GGUF tokenizer model '" + PrintableInMessage(vocabulary.model) +
                                "' is not implemented (llama and gpt2 are)");
  }
  Result<const GgufValue*> tokens = Array(file, source, kGgufTokensKey, {GgufValueType::kString}, -1);
  if (!tokens) return tokens.error();
  if (*tokens == nullptr || (*tokens)->values.empty()) {
    return KeyError(source, kGgufTokensKey, "is missing or empty");
  }
  for (const GgufValue::Scalar& token : (*tokens)->values)
    vocabulary.tokens.push_back(std::get<std::string>(token));
  const int64_t vocab = static_cast<int64_t>(vocabulary.tokens.size());

  Result<const GgufValue*> scores = Array(file, source, kGgufScoresKey, {GgufValueType::kFloat32}, vocab);
  if (!scores) return scores.error();
  if (*scores != nullptr) {
    for (const GgufValue::Scalar& score : (*scores)->values) {
      const double s = std::get<double>(score);
      if (!std::isfinite(s)) return KeyError(source, kGgufScoresKey, "holds a score that is not finite");
      vocabulary.scores.push_back(static_cast<float>(s));
    }
  } else if (vocabulary.model == kGgufLlamaTokenizer) {
    return KeyError(source, kGgufScoresKey, "is missing (a llama tokenizer merges by score)");
  }
  Result<const GgufValue*> types =
      Array(file, source, kGgufTokenTypesKey, {GgufValueType::kInt32, GgufValueType::kUint32}, vocab);
  if (!types) return types.error();
  if (*types != nullptr) {
    for (const GgufValue::Scalar& type : (*types)->values) {
      const int64_t t = std::holds_alternative<int64_t>(type)
                            ? std::get<int64_t>(type)
                            : static_cast<int64_t>(std::get<uint64_t>(type));
      if (t < static_cast<int32_t>(GgufTokenType::kNormal) ||
          t > static_cast<int32_t>(GgufTokenType::kByte)) {
        return KeyError(source, kGgufTokenTypesKey, "holds token type " + std::to_string(t) + ", not 1..6");
      }
      vocabulary.token_types.push_back(static_cast<int32_t>(t));
    }
  }
  Result<const GgufValue*> merges = Array(file, source, kGgufMergesKey, {GgufValueType::kString}, -1);
  if (!merges) return merges.error();
  if (*merges != nullptr) {
    for (const GgufValue::Scalar& merge : (*merges)->values)
      vocabulary.merges.push_back(std::get<std::string>(merge));
  } else if (vocabulary.model == kGgufGpt2Tokenizer) {
    return KeyError(source, kGgufMergesKey, "is missing (a gpt2 tokenizer merges by rank)");
  }
  if (const GgufValue* pre = file.Find(kGgufPreTokenizerKey)) {
    if (pre->AsString() == nullptr) return KeyError(source, kGgufPreTokenizerKey, "is not a string");
    vocabulary.pre = *pre->AsString();
  }
  if (const GgufValue* add_bos = file.Find(kGgufAddBosKey)) {
    if (add_bos->type != GgufValueType::kBool) return KeyError(source, kGgufAddBosKey, "is not a bool");
    vocabulary.add_bos = std::get<bool>(add_bos->values[0]);
  }
  Result<std::optional<int64_t>> bos = TokenId(file, source, kGgufBosTokenIdKey, vocab);
  Result<std::optional<int64_t>> eos = TokenId(file, source, kGgufEosTokenIdKey, vocab);
  Result<std::optional<int64_t>> unknown = TokenId(file, source, kGgufUnknownTokenIdKey, vocab);
  for (const auto* id : {&bos, &eos, &unknown}) {
    if (!*id) return id->error();
  }
  if (!*bos) return KeyError(source, kGgufBosTokenIdKey, "is missing");
  if (!*eos) return KeyError(source, kGgufEosTokenIdKey, "is missing");
  vocabulary.bos_id = **bos;
  vocabulary.eos_id = **eos;
  vocabulary.unknown_id = *unknown;
  return vocabulary;
}

std::vector<GgufKeyValue> GgufVocabularyMetadata(const GgufVocabulary& v) {
  std::vector<GgufKeyValue> metadata = {
      {kGgufTokenizerModelKey, {GgufValueType::kString, GgufValueType::kString, {v.model}}},
      {kGgufTokensKey, StringArray(v.tokens)},
  };
  if (!v.scores.empty()) {
    GgufValue scores{GgufValueType::kArray, GgufValueType::kFloat32, {}};
    for (float s : v.scores) scores.values.push_back(static_cast<double>(s));
    metadata.push_back({kGgufScoresKey, std::move(scores)});
  }
  if (!v.token_types.empty()) {
    GgufValue types{GgufValueType::kArray, GgufValueType::kInt32, {}};
    for (int32_t t : v.token_types) types.values.push_back(static_cast<int64_t>(t));
    metadata.push_back({kGgufTokenTypesKey, std::move(types)});
  }
  if (!v.merges.empty()) metadata.push_back({kGgufMergesKey, StringArray(v.merges)});
  if (!v.pre.empty())
    metadata.push_back({kGgufPreTokenizerKey, {GgufValueType::kString, GgufValueType::kString, {v.pre}}});
  if (v.add_bos)
    metadata.push_back({kGgufAddBosKey, {GgufValueType::kBool, GgufValueType::kBool, {*v.add_bos}}});
  metadata.push_back({kGgufBosTokenIdKey, Uint32(v.bos_id)});
  metadata.push_back({kGgufEosTokenIdKey, Uint32(v.eos_id)});
  if (v.unknown_id) metadata.push_back({kGgufUnknownTokenIdKey, Uint32(*v.unknown_id)});
  return metadata;
}

}  // namespace inferno
