#include "text/tokenizer_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>

#include "base/byte_codec.h"
#include "loader/gguf_format.h"
#include "loader/gguf_vocabulary.h"
#include "loader/mapped_file.h"
#include "loader/sha256.h"
#include "text/gguf_tokenizer.h"
#include "text/hf_tokenizer/hf_tokenizer.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

constexpr char kTokenizerJson[] = "tokenizer.json";
constexpr char kTokenizerConfigJson[] = "tokenizer_config.json";

std::string Sha256Hex(std::string_view bytes) {
  Sha256 hash;
  hash.Update(std::as_bytes(std::span(bytes.data(), bytes.size())));
  return hash.HexDigest();
}

// Whether `path` is a GGUF file (by its magic).
bool IsGguf(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  return file.read(magic, sizeof(magic)) &&
         LoadLittleEndian<uint32_t>(std::as_bytes(std::span(magic))) == kGgufMagic;
}

// The tokenizer a GGUF file embeds; its sha256 is that of its
// tokenizer.ggml.* keys as GGUF encodes them (not of the weights around them).
Result<LoadedTokenizer> LoadGguf(const std::string& path) {
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return file.error();
  Result<GgufFile> gguf = ParseGgufFile((*file)->bytes(), path);
  if (!gguf) return gguf.error();
  Result<GgufVocabulary> vocabulary = ReadGgufVocabulary(*gguf, path);
  if (!vocabulary) return vocabulary.error();
  Result<std::unique_ptr<Tokenizer>> tokenizer = MakeGgufTokenizer(*vocabulary, path);
  if (!tokenizer) return tokenizer.error();
  LoadedTokenizer loaded;
  loaded.tokenizer = std::move(*tokenizer);
  loaded.source = path;
  loaded.sha256 = Sha256Hex(EncodeGgufHeader(GgufVocabularyMetadata(*vocabulary), {}, kGgufDefaultAlignment));
  // llama.cpp's default: BOS for SentencePiece-style vocabularies, none for
  // byte-level ones, unless tokenizer.ggml.add_bos_token says otherwise.
  if (vocabulary->add_bos.value_or(vocabulary->model == kGgufLlamaTokenizer)) {
    loaded.bos_id = static_cast<int32_t>(vocabulary->bos_id);
  }
  loaded.stop_ids = {static_cast<int32_t>(vocabulary->eos_id)};
  return loaded;
}

Result<LoadedTokenizer> LoadFile(const std::string& path) {
  if (IsGguf(path)) return LoadGguf(path);
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error::NotFound("--tokenizer: cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return Error::Io("--tokenizer: cannot read '" + path + "'");
  LoadedTokenizer loaded;
  loaded.source = path;
  loaded.sha256 = Sha256Hex(bytes);
  // A tokenizer.json is a JSON object; a tokenizer.bin starts with a
  // little-endian int32 (its longest piece), never with '{' and a text.
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{') {
    auto parsed = HfTokenizer::Parse(bytes, path);
    if (!parsed) return parsed.error();
    const fs::path config_path = fs::path(path).parent_path() / kTokenizerConfigJson;
    std::error_code ec;
    if (fs::exists(config_path, ec)) {
      Result<TokenizerChatConfig> config = ReadTokenizerChatConfig(config_path.string());
      if (!config) return config.error();
      if (config->eos_token) {
        const std::optional<int32_t> eos = (*parsed)->TokenId(*config->eos_token);
        if (!eos) {
          return Error::Corruption(config_path.string() + ": eos_token '" + *config->eos_token +
                                   "' is not a token of " + path);
        }
        loaded.stop_ids.push_back(*eos);
      }
      loaded.bos_id = (*parsed)->bos_id();
      if (config->add_bos_token == false) loaded.bos_id.reset();
      if (config->add_bos_token == true && !loaded.bos_id) {
        const std::optional<int32_t> bos =
            config->bos_token ? (*parsed)->TokenId(*config->bos_token) : std::nullopt;
        if (!bos) {
          return Error::Corruption(config_path.string() +
                                   ": add_bos_token is true but bos_token is not a token of " + path);
        }
        loaded.bos_id = bos;
      }
      loaded.chat_config = std::move(*config);
    } else {
      loaded.bos_id = (*parsed)->bos_id();
    }
    loaded.tokenizer = std::move(*parsed);
  } else {
    auto parsed = BpeTokenizer::Parse(bytes, path);
    if (!parsed) return parsed.error();
    loaded.tokenizer = std::move(*parsed);
    loaded.bos_id = kLlama2cBosId;
    loaded.stop_ids = {kLlama2cEosId, kLlama2cBosId};
  }
  return loaded;
}

}  // namespace

Result<std::optional<LoadedTokenizer>> LoadTokenizer(const std::optional<std::string>& flag,
                                                     const std::string& model_folder) {
  std::error_code ec;
  if (!flag) {
    if (model_folder.empty()) return std::optional<LoadedTokenizer>();
    if (!fs::is_directory(model_folder, ec) && IsGguf(model_folder)) {
      Result<LoadedTokenizer> loaded = LoadGguf(model_folder);
      if (!loaded) return loaded.error();
      return std::optional<LoadedTokenizer>(std::move(*loaded));
    }
    const fs::path beside = fs::path(model_folder) / kTokenizerJson;
    if (!fs::exists(beside, ec)) return std::optional<LoadedTokenizer>();
    Result<LoadedTokenizer> loaded = LoadFile(beside.string());
    if (!loaded) return loaded.error();
    return std::optional<LoadedTokenizer>(std::move(*loaded));
  }
  if (*flag == kByteLevelTokenizer) {
    LoadedTokenizer bytes;
    bytes.tokenizer = std::make_unique<ByteTokenizer>();
    bytes.source = bytes.sha256 = kByteLevelTokenizer;
    bytes.bos_id = kLlama2cBosId;
    bytes.stop_ids = {kLlama2cEosId, kLlama2cBosId};
    return std::optional<LoadedTokenizer>(std::move(bytes));
  }
  std::string path = *flag;
  if (fs::is_directory(path, ec)) {
    path = (fs::path(path) / kTokenizerJson).string();
    if (!fs::exists(path, ec)) {
      return Error::NotFound("--tokenizer: the folder '" + *flag + "' holds no " + kTokenizerJson);
    }
  }
  Result<LoadedTokenizer> loaded = LoadFile(path);
  if (!loaded) return loaded.error();
  return std::optional<LoadedTokenizer>(std::move(*loaded));
}

Result<std::vector<int32_t>> StopIds(const ModelConfig& config, const LoadedTokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (int64_t id : config.eos_token_ids) {
    if (id >= config.vocab_size) {
      return Error::InvalidArgument("eos_token_id " + std::to_string(id) +
                                    " is outside the model's vocabulary of " +
                                    std::to_string(config.vocab_size));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  for (int32_t id : tokenizer.stop_ids) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace inferno
