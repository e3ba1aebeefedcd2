#include "loader/sharded_checkpoint.h"

#include <map>

#include "loader/mapped_checkpoint.h"
#include "loader/mapped_file.h"
#include "loader/safetensors_format.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

Status CheckWorld(const Manifest& manifest, const ShardJob& job, const std::string& folder) {
  const ShardPlan& plan = manifest.plan;
  const std::string made_for = folder + ": these shards were made for " + WorldLayoutText(plan) + " (" +
                               std::to_string(plan.world_size()) + " ranks); ";
  if (job.world_size != plan.world_size()) {
    return Error::InvalidArgument(made_for + "this job has " + std::to_string(job.world_size) + " ranks");
  }
  if ((job.pp && *job.pp != plan.pp) || (job.tp && *job.tp != plan.tp) ||
      (job.expert_parallel && *job.expert_parallel != plan.expert_parallel)) {
    return Error::InvalidArgument(made_for + "this job asks for " +
                                  WorldLayoutText(job.pp.value_or(plan.pp), job.tp.value_or(plan.tp),
                                                  job.expert_parallel.value_or(plan.expert_parallel)));
  }
  if (job.rank < 0 || job.rank >= plan.world_size()) {
    return Error::InvalidArgument(made_for + "rank " + std::to_string(job.rank) + " is outside them");
  }
  // The plan must be the one MakeShardPlan computes for this grid and these
  // stages and this placement of experts: the engine relies on it (ring
  // order, classifier rows, every expert held once per stage).
  std::vector<int64_t> layers(static_cast<size_t>(plan.pp));
  for (const RankShard& shard : plan.ranks) layers[static_cast<size_t>(shard.stage)] = shard.layers.size();
  const ModelConfig& config = manifest.config;
  const std::optional<ExpertPlacement> placement =
      plan.expert_parallel ? std::optional(plan.Placement(config.num_hidden_layers, config.num_experts))
                           : std::nullopt;
  Result<ShardPlan> expected =
      MakeShardPlan(config, plan.pp, plan.tp, layers, plan.expert_parallel, placement);
  if (!expected) return expected.error().Prefixed(folder + ": the manifest's plan: ");
  if (*expected != plan) {
    return Error::Corruption(folder + ": the manifest's plan for " + WorldLayoutText(plan) +
                             " is not the plan this version computes for that grid; re-run shard");
  }
  return {};
}

// Checks the file's metadata names this rank and plan.
Status CheckShardMetadata(const SafetensorsHeader& header, const std::string& path, const Manifest& manifest,
                          int rank) {
  const std::map<std::string, std::string> expected = ShardMetadata(manifest.config, manifest.plan, rank);
  for (const char* key : {kShardMetadataPlan, kShardMetadataWorld, kShardMetadataRank}) {
    auto it = header.metadata.find(key);
    const std::string found = it == header.metadata.end() ? "(absent)" : it->second;
    if (found != expected.at(key)) {
      return Error::Corruption(path + ": a shard of another " +
                               (std::string(key) == kShardMetadataRank ? "rank" : "plan") + ": metadata " +
                               key + " = " + found + ", rank " + std::to_string(rank) +
                               " of the manifest expects " + expected.at(key));
    }
  }
  return {};
}

// Checks that the shard holds exactly the rank's slices, shaped per the plan.
Status CheckShardTensors(const Checkpoint& checkpoint, const RankShard& shard, const std::string& path) {
  std::map<std::string, std::vector<int64_t>> full_shapes;
  for (const TensorSpec& spec : LlamaTensorSpecs(checkpoint.config())) full_shapes[spec.name] = spec.shape;
  full_shapes[kEmbedTokensName] = EmbeddingSpec(checkpoint.config()).shape;
  if (checkpoint.tensors().size() != shard.tensors.size()) {
    return Error::Corruption(path + ": holds " + std::to_string(checkpoint.tensors().size()) +
                             " tensors but rank " + std::to_string(shard.rank) + "'s plan has " +
                             std::to_string(shard.tensors.size()));
  }
  for (const TensorSlice& slice : shard.tensors) {
    Result<TensorInfo> info = checkpoint.Find(slice.name);
    if (!info)
      return Error::NotFound(path + ": tensor '" + slice.name + "' of rank " + std::to_string(shard.rank) +
                             "'s plan is missing");
    auto full = full_shapes.find(slice.name);
    if (full == full_shapes.end())
      return Error::Corruption(path + ": tensor '" + slice.name + "' is not a tensor of the model");
    const std::vector<int64_t> expected = SliceShape(full->second, slice);
    if (info->shape != expected) {
      return Error::Corruption(path + ": tensor '" + slice.name + "' has shape " +
                               ShapeToString(info->shape) + " but rank " + std::to_string(shard.rank) +
                               "'s slice is " + ShapeToString(expected));
    }
  }
  return {};
}

}  // namespace

Result<RankShardCheckpoint> OpenRankShard(const std::string& folder, const ShardJob& job) {
  Result<Manifest> manifest = ReadManifest(folder);
  if (!manifest) return manifest.error();
  if (Status s = CheckWorld(*manifest, job, folder); !s) return s.error();
  const ShardFile& file = manifest->files[static_cast<size_t>(job.rank)];
  const std::string path = folder + "/" + file.file;
  if (job.verify_checksum) {
    if (Status s = VerifyShardFile(folder, file); !s) return s.error();
  }
  Result<std::unique_ptr<MappedFile>> mapped = MappedFile::Open(path);
  if (!mapped) return mapped.error();
  Result<SafetensorsHeader> header = ParseSafetensorsHeader((*mapped)->bytes(), path);
  if (!header) return header.error();
  if (Status s = CheckShardMetadata(*header, path, *manifest, job.rank); !s) return s.error();
  std::vector<std::unique_ptr<MappedFile>> files;
  files.push_back(std::move(*mapped));
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint =
      MappedCheckpoint::FromSafetensorsFiles(std::move(files), manifest->config);
  if (!checkpoint) return checkpoint.error();
  const RankShard& shard = manifest->plan.ranks[static_cast<size_t>(job.rank)];
  if (Status s = CheckShardTensors(**checkpoint, shard, path); !s) return s.error();
  for (size_t i = 0; i < file.dtypes.size(); ++i) {
    const TensorInfo info = *(*checkpoint)->Find(shard.tensors[i].name);
    if (info.dtype != file.dtypes[i]) {
      return Error::Corruption(path + ": tensor '" + info.name + "' is " +
                               std::string(DTypeName(info.dtype)) + " but the manifest records " +
                               std::string(DTypeName(file.dtypes[i])));
    }
  }
  return RankShardCheckpoint{std::move(*manifest), std::move(*checkpoint)};
}

Result<LoneShard> OpenLoneShard(std::unique_ptr<MappedFile> file, int rank,
                                const std::function<Result<ShardPlan>(const ModelConfig&)>& plan_for) {
  const std::string path = file->path();
  Result<SafetensorsHeader> header = ParseSafetensorsHeader(file->bytes(), path);
  if (!header) return header.error();
  const auto config_text = header->metadata.find(kShardMetadataConfig);
  if (config_text == header->metadata.end()) {
    return Error::Corruption(path + ": not a shard: no " + std::string(kShardMetadataConfig) + " metadata");
  }
  Result<ModelConfig> config = ParseModelConfigJson(config_text->second, path + " (metadata)");
  if (!config) return config.error();
  Result<ShardPlan> plan = plan_for(*config);
  if (!plan) return plan.error();
  if (rank < 0 || rank >= plan->world_size()) {
    return Error::InvalidArgument(path + ": rank " + std::to_string(rank) + " is outside the plan's " +
                                  std::to_string(plan->world_size()) + " ranks");
  }
  Manifest expected;
  expected.config = *config;
  expected.plan = *std::move(plan);
  if (Status s = CheckShardMetadata(*header, path, expected, rank); !s) return s.error();
  std::vector<std::unique_ptr<MappedFile>> files;
  files.push_back(std::move(file));
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint =
      MappedCheckpoint::FromSafetensorsFiles(std::move(files), *config);
  if (!checkpoint) return checkpoint.error();
  if (Status s = CheckShardTensors(**checkpoint, expected.plan.ranks[static_cast<size_t>(rank)], path); !s) {
    return s.error();
  }
  return LoneShard{std::move(expected.plan), std::move(*checkpoint)};
}

}  // namespace inferno
