#include "loader/routing_stats.h"

#include <nlohmann/json.hpp>

#include "base/byte_codec.h"
#include "loader/mapped_file.h"

namespace inferno {

using nlohmann::json;

std::string RoutingStatsToJson(const ModelConfig& config, const RoutingCounts& counts) {
  const json j = {{"format", kRoutingStatsFormat},
                  {"version", kRoutingStatsVersion},
                  {"num_hidden_layers", config.num_hidden_layers},
                  {"num_experts", config.num_experts},
                  {"num_experts_per_tok", config.num_experts_per_tok},
                  {"counts", counts}};
  return j.dump() + "\n";
}

Result<RoutingCounts> ParseRoutingStats(const std::string& text, const std::string& source,
                                        const ModelConfig& config) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::InvalidArgument(source + ": not valid JSON");
  if (!j.is_object() || j.value("format", "") != kRoutingStatsFormat) {
    return Error::InvalidArgument(source + ": not inferno routing stats (no \"format\": \"" +
                                  kRoutingStatsFormat + "\"; infer --routing-stats writes them)");
  }
  RoutingCounts counts;
  try {
    if (const int version = j.at("version").get<int>(); version != kRoutingStatsVersion) {
      return Error::InvalidArgument(source + ": version " + std::to_string(version) +
                                    " is not the supported " + std::to_string(kRoutingStatsVersion));
    }
    counts = j.at("counts").get<RoutingCounts>();
  } catch (const json::exception& e) {
    return Error::InvalidArgument(source + ": malformed routing stats: " + e.what());
  }
  if (static_cast<int64_t>(counts.size()) != config.num_hidden_layers) {
    return Error::InvalidArgument(source + ": counts " + std::to_string(counts.size()) +
                                  " layers but the model has " + std::to_string(config.num_hidden_layers));
  }
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::vector<int64_t>& row = counts[static_cast<size_t>(layer)];
    const std::string where = source + ": layer " + std::to_string(layer);
    if (!config.IsSparseLayer(layer)) {
      if (!row.empty()) return Error::InvalidArgument(where + " is dense in the model but has counts");
      continue;
    }
    if (static_cast<int64_t>(row.size()) != config.num_experts) {
      return Error::InvalidArgument(where + " counts " + std::to_string(row.size()) +
                                    " experts but the model has " + std::to_string(config.num_experts));
    }
    for (size_t e = 0; e < row.size(); ++e) {
      if (row[e] < 0) {
        return Error::InvalidArgument(where + " expert " + std::to_string(e) + " has a negative count " +
                                      std::to_string(row[e]));
      }
    }
  }
  return counts;
}

Result<RoutingCounts> ReadRoutingStats(const std::string& path, const ModelConfig& config) {
  Result<std::string> text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseRoutingStats(*text, path, config);
}

Result<std::optional<ExpertPlacement>> PlaceJobExperts(const RoutingCounts* counts, int replicas,
                                                       const ModelConfig& config, int tp) {
  if ((counts == nullptr && replicas == 0) || tp < 1 || tp > config.num_experts) {
    return std::optional<ExpertPlacement>();
  }
  ExpertPlacement placement =
      counts != nullptr ? PlaceExpertsByLoad(config, tp, *counts) : ContiguousExperts(config, tp);
  Result<ExpertPlacement> copied = AddExpertReplicas(tp, std::move(placement), replicas, counts);
  if (!copied) return copied.error();
  return std::optional(std::move(*copied));
}

std::vector<std::byte> EncodeStageCounts(std::span<const int64_t> counts) {
  std::vector<std::byte> bytes(counts.size() * sizeof(int64_t));
  ByteWriter writer(bytes);
  for (int64_t count : counts) writer.Put<int64_t>(count);
  return bytes;
}

Result<RoutingCounts> GatherRoutingCounts(const ModelConfig& config, const ShardPlan& plan,
                                          const std::vector<std::vector<std::byte>>& stage_counts) {
  RoutingCounts counts(static_cast<size_t>(config.num_hidden_layers));
  for (const RankShard& shard : plan.ranks) {
    if (shard.tp_index != 0) continue;
    const std::vector<std::byte>& bytes = stage_counts.at(static_cast<size_t>(shard.rank));
    const size_t expected = static_cast<size_t>(shard.layers.size() * config.num_experts) * sizeof(int64_t);
    if (bytes.empty()) {  // a stage without sparse layers
      for (int64_t layer = shard.layers.begin; layer < shard.layers.end; ++layer) {
        if (config.IsSparseLayer(layer)) counts[static_cast<size_t>(layer)].assign(config.num_experts, 0);
      }
      continue;
    }
    if (bytes.size() != expected) {
      return Error::Corruption("routing counts of rank " + std::to_string(shard.rank) + ": " +
                               std::to_string(bytes.size()) + " bytes, not the " + std::to_string(expected) +
                               " of its " + std::to_string(shard.layers.size()) + " layers");
    }
    ByteReader reader(bytes);
    for (int64_t layer = shard.layers.begin; layer < shard.layers.end; ++layer) {
      std::vector<int64_t>& row = counts[static_cast<size_t>(layer)];
      row.resize(static_cast<size_t>(config.num_experts));
      for (int64_t& count : row) CHECK(reader.Get(count)) << "sized above";
      if (!config.IsSparseLayer(layer)) row.clear();
    }
  }
  return counts;
}

}  // namespace inferno
