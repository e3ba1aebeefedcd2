#include "loader/manifest.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "loader/crc32c.h"
#include "loader/mapped_file.h"
#include "loader/sha256.h"

namespace inferno {
namespace {

using nlohmann::json;

json SliceToJson(const TensorSlice& slice) {
  json j = {{"name", slice.name}};
  if (slice.split_dim >= 0) {
    j["split_dim"] = slice.split_dim;
    j["begin"] = slice.begin;
    j["end"] = slice.end;
  }
  return j;
}

json RankToJson(const RankShard& shard) {
  json tensors = json::array();
  for (const TensorSlice& slice : shard.tensors) tensors.push_back(SliceToJson(slice));
  return {{"rank", shard.rank},
          {"stage", shard.stage},
          {"tp_index", shard.tp_index},
          {"layers", {shard.layers.begin, shard.layers.end}},
          {"heads", {shard.heads.begin, shard.heads.end}},
          {"kv_heads", {shard.kv_heads.begin, shard.kv_heads.end}},
          {"hidden_units", {shard.hidden_units.begin, shard.hidden_units.end}},
          {"experts", shard.experts},
          {"classifier_rows", {shard.classifier_rows.begin, shard.classifier_rows.end}},
          {"embedding_rows", {shard.embedding_rows.begin, shard.embedding_rows.end}},
          {"has_final_norm", shard.has_final_norm},
          {"tensors", tensors}};
}

json PlanToJson(const ShardPlan& plan) {
  json ranks = json::array();
  for (const RankShard& shard : plan.ranks) ranks.push_back(RankToJson(shard));
  return {{"pp", plan.pp}, {"tp", plan.tp}, {"expert_parallel", plan.expert_parallel}, {"ranks", ranks}};
}

// Throws nlohmann's exceptions on a malformed document; ParseManifestJson
// turns them into a Error.
RankShard RankFromJson(const json& j) {
  RankShard shard;
  shard.rank = j.at("rank").get<int>();
  shard.stage = j.at("stage").get<int>();
  shard.tp_index = j.at("tp_index").get<int>();
  const auto range = [&](const char* key) {
    return RowRange{j.at(key).at(0).get<int64_t>(), j.at(key).at(1).get<int64_t>()};
  };
  const RowRange layers = range("layers");
  shard.layers = {layers.begin, layers.end};
  shard.heads = range("heads");
  shard.kv_heads = range("kv_heads");
  shard.hidden_units = range("hidden_units");
  shard.experts = j.at("experts").get<std::vector<std::vector<int32_t>>>();
  shard.classifier_rows = range("classifier_rows");
  shard.embedding_rows = range("embedding_rows");
  shard.has_final_norm = j.at("has_final_norm").get<bool>();
  for (const json& t : j.at("tensors")) {
    TensorSlice slice{t.at("name").get<std::string>(), -1, 0, 0};
    if (t.contains("split_dim")) {
      slice.split_dim = t.at("split_dim").get<int>();
      slice.begin = t.at("begin").get<int64_t>();
      slice.end = t.at("end").get<int64_t>();
    }
    shard.tensors.push_back(std::move(slice));
  }
  return shard;
}

Result<Manifest> ManifestFromJson(const json& j, const std::string& source) {
  if (!j.is_object() || j.value("format", "") != kManifestFormat) {
    return Error::Corruption(source + ": not an inferno shard manifest (no \"format\": \"" + kManifestFormat +
                             "\")");
  }
  Manifest m;
  m.format_version = j.at("format_version").get<int>();
  if (m.format_version != kManifestFormatVersion) {
    return Error::Corruption(source + ": format_version " + std::to_string(m.format_version) +
                             " is not the supported " + std::to_string(kManifestFormatVersion));
  }
  m.tool_version = j.at("tool_version").get<std::string>();
  m.source = j.at("source").get<std::string>();
  m.source_fingerprint = j.at("source_fingerprint").get<std::string>();
  if (j.contains("dtype")) {
    m.dtype = ParseDType(j.at("dtype").get<std::string>());
    if (!m.dtype) {
      return Error::Corruption(source + ": unknown dtype " + j.at("dtype").dump() +
                               " (supported: " + DTypeNames() + ")");
    }
  }
  Result<ModelConfig> config = ParseModelConfigJson(j.at("config").dump(), source + " (config)");
  if (!config) return config.error();
  m.config = *config;
  m.plan.pp = j.at("world").at("pp").get<int>();
  m.plan.tp = j.at("world").at("tp").get<int>();
  m.plan.expert_parallel = j.at("world").at("expert_parallel").get<bool>();
  if (m.plan.pp < 1 || m.plan.tp < 1 || m.plan.pp > m.config.num_hidden_layers) {
    return Error::Corruption(source + ": world " + WorldLayoutText(m.plan) + " is invalid for " +
                             std::to_string(m.config.num_hidden_layers) + " layers");
  }
  const json& ranks = j.at("ranks");
  if (!ranks.is_array() || static_cast<int>(ranks.size()) != m.plan.world_size()) {
    return Error::Corruption(source + ": lists " + std::to_string(ranks.size()) + " ranks but the world " +
                             WorldLayoutText(m.plan) + " has " + std::to_string(m.plan.world_size()));
  }
  for (int rank = 0; rank < m.plan.world_size(); ++rank) {
    const json& r = ranks[static_cast<size_t>(rank)];
    RankShard shard = RankFromJson(r);
    if (shard.rank != rank || shard.stage < 0 || shard.stage >= m.plan.pp || shard.tp_index < 0 ||
        shard.tp_index >= m.plan.tp || m.plan.RankOf(shard.stage, shard.tp_index) != rank) {
      return Error::Corruption(source + ": entry " + std::to_string(rank) + " (rank " +
                               std::to_string(shard.rank) + ", stage " + std::to_string(shard.stage) +
                               ", tp_index " + std::to_string(shard.tp_index) +
                               ") does not fit the world layout " + WorldLayoutText(m.plan));
    }
    if (static_cast<int64_t>(shard.experts.size()) != shard.layers.size()) {
      return Error::Corruption(source + ": rank " + std::to_string(rank) + " lists the experts of " +
                               std::to_string(shard.experts.size()) + " layers but holds " +
                               std::to_string(shard.layers.size()));
    }
    ShardFile file{rank,
                   r.at("file").get<std::string>(),
                   r.at("bytes").get<uint64_t>(),
                   r.at("crc32c").get<std::string>(),
                   {}};
    for (const json& t : r.at("tensors")) {
      if (!t.contains("dtype")) continue;
      const std::optional<DType> dtype = ParseDType(t.at("dtype").get<std::string>());
      if (!dtype) {
        return Error::Corruption(source + ": rank " + std::to_string(rank) + " tensor '" +
                                 t.at("name").get<std::string>() + "' has unknown dtype " +
                                 t.at("dtype").dump() + " (supported: " + DTypeNames() + ")");
      }
      file.dtypes.push_back(*dtype);
    }
    if (!file.dtypes.empty() && file.dtypes.size() != shard.tensors.size()) {
      return Error::Corruption(source + ": rank " + std::to_string(rank) + " gives a dtype for " +
                               std::to_string(file.dtypes.size()) + " of its " +
                               std::to_string(shard.tensors.size()) + " tensors");
    }
    if (file.file != ShardFileName(rank, m.plan.world_size())) {
      return Error::Corruption(source + ": rank " + std::to_string(rank) + " file '" + file.file +
                               "' is not the expected " + ShardFileName(rank, m.plan.world_size()));
    }
    m.plan.ranks.push_back(std::move(shard));
    m.files.push_back(std::move(file));
  }
  if (j.at("plan_sha256").get<std::string>() != PlanDigest(m.plan)) {
    return Error::Corruption(source + ": plan_sha256 " + j.at("plan_sha256").get<std::string>() +
                             " does not match its plan (edited by hand?)");
  }
  m.plan.SetExpertHolders(m.config.num_experts);
  return m;
}

}  // namespace

std::string ShardFileName(int rank, int world_size) {
  char name[64];
  std::snprintf(name, sizeof(name), "rank-%05d-of-%05d.safetensors", rank, world_size);
  return name;
}

std::string WorldLayoutText(int pp, int tp, bool expert_parallel) {
  return "pp=" + std::to_string(pp) + (expert_parallel ? " ep=" : " tp=") + std::to_string(tp);
}

std::string WorldLayoutText(const ShardPlan& plan) {
  return WorldLayoutText(plan.pp, plan.tp, plan.expert_parallel);
}

std::string PlanDigest(const ShardPlan& plan) {
  const std::string text = PlanToJson(plan).dump();
  Sha256 hash;
  hash.Update(std::as_bytes(std::span(text.data(), text.size())));
  return hash.HexDigest();
}

std::map<std::string, std::string> ShardMetadata(const ModelConfig& config, const ShardPlan& plan, int rank) {
  return {{kShardMetadataFormat, "pt"},
          {kShardMetadataProducer, kShardToolVersion},
          {kShardMetadataRank, std::to_string(rank)},
          {kShardMetadataWorld, WorldLayoutText(plan)},
          {kShardMetadataPlan, PlanDigest(plan)},
          {kShardMetadataConfig, ModelConfigToJson(config)}};
}

Result<std::string> SourceFingerprint(const std::vector<std::string>& paths) {
  Sha256 hash;
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Error::Io(path + ": cannot stat: " + std::strerror(errno));
    const std::string entry = path + "|" + std::to_string(st.st_size) + "|" +
                              std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
                              "\n";
    hash.Update(std::as_bytes(std::span(entry.data(), entry.size())));
  }
  return hash.HexDigest();
}

Status VerifyShardFile(const std::string& folder, const ShardFile& file) {
  const std::string path = folder + "/" + file.file;
  Result<std::unique_ptr<MappedFile>> mapped = MappedFile::Open(path);
  if (!mapped) return mapped.error();
  const std::span<const std::byte> bytes = (*mapped)->bytes();
  if (bytes.size() != file.bytes) {
    return Error::Corruption(path + ": size " + std::to_string(bytes.size()) +
                             " bytes does not match the manifest's " + std::to_string(file.bytes));
  }
  constexpr uint64_t kChunk = 64ull << 20;
  Crc32c crc;
  for (uint64_t begin = 0; begin < bytes.size(); begin += kChunk) {
    const uint64_t end = std::min<uint64_t>(bytes.size(), begin + kChunk);
    (*mapped)->WillNeed(begin, end);
    crc.Update(bytes.subspan(begin, end - begin));
    (*mapped)->Release(begin, end);
  }
  if (crc.HexDigest() != file.crc32c) {
    return Error::Corruption(path + ": checksum mismatch: crc32c " + crc.HexDigest() +
                             ", the manifest says " + file.crc32c);
  }
  return {};
}

std::string ManifestToJson(const Manifest& manifest) {
  json ranks = json::array();
  for (size_t rank = 0; rank < manifest.plan.ranks.size(); ++rank) {
    json r = RankToJson(manifest.plan.ranks[rank]);
    const ShardFile& file = manifest.files[rank];
    r["file"] = file.file;
    r["bytes"] = file.bytes;
    r["crc32c"] = file.crc32c;
    for (size_t i = 0; i < file.dtypes.size() && i < r["tensors"].size(); ++i) {
      r["tensors"][i]["dtype"] = std::string(DTypeName(file.dtypes[i]));
    }
    ranks.push_back(std::move(r));
  }
  json j = {
      {"format", kManifestFormat},
      {"format_version", manifest.format_version},
      {"tool_version", manifest.tool_version},
      {"source", manifest.source},
      {"source_fingerprint", manifest.source_fingerprint},
      {"config", json::parse(ModelConfigToJson(manifest.config))},
      {"world",
       {{"pp", manifest.plan.pp},
        {"tp", manifest.plan.tp},
        {"expert_parallel", manifest.plan.expert_parallel},
        {"world_size", manifest.plan.world_size()}}},
      {"plan_sha256", PlanDigest(manifest.plan)},
      {"ranks", ranks},
  };
  if (manifest.dtype) j["dtype"] = std::string(DTypeName(*manifest.dtype));
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Manifest> ParseManifestJson(const std::string& text, const std::string& source) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::Corruption(source + ": not valid JSON");
  try {
    return ManifestFromJson(j, source);
  } catch (const json::exception& e) {
    return Error::Corruption(source + ": malformed manifest: " + e.what());
  }
}

Result<Manifest> ReadManifest(const std::string& folder) {
  const std::string path = folder + "/" + kManifestFileName;
  Result<std::string> text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseManifestJson(*text, path);
}

}  // namespace inferno
