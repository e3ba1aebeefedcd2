#include "loader/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/byte_codec.h"
#include "loader/gguf_format.h"
#include "loader/mapped_checkpoint.h"
#include "loader/mapped_file.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kConfigFile[] = "config.json";
constexpr char kGenerationConfigFile[] = "generation_config.json";
constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

// config.json, with the eos_token_id of generation_config.json when the
// folder has one.
Result<ModelConfig> ReadConfig(const fs::path& folder) {
  const std::string path = (folder / kConfigFile).string();
  Result<std::string> text = ReadTextFile(path);
  if (!text) return text.error();
  Result<ModelConfig> config = ParseModelConfigJson(*text, path);
  if (!config) return config;
  const fs::path generation = folder / kGenerationConfigFile;
  std::error_code ec;
  if (fs::exists(generation, ec)) {
    Result<std::string> generation_text = ReadTextFile(generation.string());
    if (!generation_text) return generation_text.error();
    if (Status s = MergeGenerationConfigJson(*generation_text, generation.string(), *config); !s) {
      return s.error();
    }
  }
  return config;
}

// The files a Hugging Face sharded index refers to, checked to lie inside its
// folder, and its tensor -> file map.
struct ShardedIndex {
  std::vector<std::string> files;
  std::map<std::string, std::string> file_of;
};

Result<ShardedIndex> ReadIndex(const fs::path& index_path) {
  const std::string source = index_path.string();
  Result<std::string> text = ReadTextFile(source);
  if (!text) return text.error();
  const json index = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded()) return Error::Corruption(source + ": not valid JSON");
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return Error::Corruption(source + ": no 'weight_map' object");
  }
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(index_path.parent_path(), ec);
  ShardedIndex result;
  std::set<std::string> seen;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string())
      return Error::Corruption(source + ": tensor '" + name + "': file " + file.dump() + " is not a string");
    const std::string relative = file.get<std::string>();
    const fs::path resolved = fs::weakly_canonical(folder / relative, ec);
    const fs::path rel = resolved.lexically_relative(folder);
    if (ec || fs::path(relative).is_absolute() || rel.empty() || *rel.begin() == "..") {
      return Error::Corruption(source + ": tensor '" + name + "': file '" + relative +
                               "' lies outside the index's folder " + folder.string());
    }
    result.file_of[name] = resolved.string();
    if (seen.insert(resolved.string()).second) result.files.push_back(resolved.string());
  }
  if (result.files.empty()) return Error::Corruption(source + ": 'weight_map' is empty");
  return result;
}

// Opens a folder: model.safetensors.index.json (sharded) or model.safetensors.
Result<std::unique_ptr<MappedCheckpoint>> OpenFolder(const fs::path& folder) {
  Result<ModelConfig> config = ReadConfig(folder);
  if (!config) return config.error();
  if (fs::exists(folder / kIndexFile)) {
    const fs::path index_path = folder / kIndexFile;
    Result<ShardedIndex> index = ReadIndex(index_path);
    if (!index) return index.error();
    Result<std::unique_ptr<MappedCheckpoint>> checkpoint =
        MappedCheckpoint::OpenSafetensors(index->files, std::move(*config));
    if (!checkpoint) return checkpoint.error();
    for (size_t i = 0; i < (*checkpoint)->tensors().size(); ++i) {
      const std::string& name = (*checkpoint)->tensors()[i].name;
      auto it = index->file_of.find(name);
      if (it == index->file_of.end() || it->second != (*checkpoint)->FilePathOf(i)) {
        return Error::Corruption((*checkpoint)->FilePathOf(i) + ": tensor '" + name +
                                 "' is not listed for this file in " + index_path.string());
      }
    }
    for (const auto& [name, file] : index->file_of) {
      if (!(*checkpoint)->IndexOf(name)) {
        return Error::Corruption(file + ": tensor '" + name + "' listed in " + index_path.string() +
                                 " is not in the file");
      }
    }
    return checkpoint;
  }
  if (fs::exists(folder / kSingleFile)) {
    return MappedCheckpoint::OpenSafetensors({(folder / kSingleFile).string()}, std::move(*config));
  }
  return Error::NotFound(folder.string() + ": holds neither " + kSingleFile + " nor " + kIndexFile);
}

// Whether the file at `path` starts with the GGUF magic.
bool HasGgufMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof(magic))) return false;
  return LoadLittleEndian<uint32_t>(std::as_bytes(std::span(magic))) == kGgufMagic;
}

// A folder, an index, a single safetensors file (config.json beside it), a
// GGUF file (by its magic), or else a llama2.c file.
Result<std::unique_ptr<MappedCheckpoint>> OpenAnyFormat(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return OpenFolder(p);
  if (p.filename() == kIndexFile) return OpenFolder(p.parent_path());
  if (p.extension() == ".safetensors") {
    Result<ModelConfig> config = ReadConfig(p.parent_path());
    if (!config) return config.error();
    return MappedCheckpoint::OpenSafetensors({path}, std::move(*config));
  }
  if (HasGgufMagic(path)) return MappedCheckpoint::OpenGguf(path);
  return MappedCheckpoint::OpenLlama2c(path);
}

}  // namespace

Result<std::unique_ptr<MappedCheckpoint>> MappedCheckpoint::Open(const std::string& path) {
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = OpenAnyFormat(path);
  if (!checkpoint) return checkpoint;
  const ModelConfig& config = (*checkpoint)->config();
  std::vector<FusedTensor> fused;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (FusedTensor& f : FusedLayerTensors(config, layer)) fused.push_back(std::move(f));
  }
  if (Status s = (*checkpoint)->ExposeFusedParts(fused, path); !s) return s.error();
  if (Status s = CheckTensorsMatchConfig((*checkpoint)->tensors(), (*checkpoint)->config(), path); !s) {
    return s.error();
  }
  return checkpoint;
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& path) {
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = MappedCheckpoint::Open(path);
  if (!checkpoint) return checkpoint.error();
  return std::unique_ptr<Checkpoint>(std::move(*checkpoint));
}

Result<TensorInfo> Checkpoint::Find(const std::string& name) const {
  for (const TensorInfo& info : tensors()) {
    if (info.name == name) return info;
  }
  return Error::NotFound("checkpoint has no tensor '" + name + "'");
}

}  // namespace inferno
