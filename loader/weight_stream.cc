#include "loader/weight_stream.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include <glog/logging.h>

#include "loader/manifest.h"
#include "loader/safetensors_format.h"
#include "loader/shard_stream.h"

namespace inferno {
namespace {

LoadError StreamError(const std::string& what, const CollectiveError& error) {
  return LoadError{what + ": " + error.ToString()};
}

// A checkpoint over the shard bytes of `rank`, checked to be that rank's
// shard in a world of `world`.
LoadResult<std::unique_ptr<Checkpoint>> CheckpointFromShardBytes(std::vector<std::byte> bytes, int rank,
                                                                 int world_size, const std::string& name) {
  std::unique_ptr<MappedFile> file = MappedFile::FromBytes(name, std::move(bytes));
  LoadResult<SafetensorsHeader> header = ParseSafetensorsHeader(file->bytes(), name);
  if (!header) return header.error();
  auto value = [&](const char* key) {
    auto it = header->metadata.find(key);
    return it == header->metadata.end() ? std::string("(absent)") : it->second;
  };
  if (value(kShardMetadataRank) != std::to_string(rank)) {
    return LoadError{name + ": a shard of another rank: metadata " + kShardMetadataRank + " = " +
                     value(kShardMetadataRank) + ", this is rank " + std::to_string(rank)};
  }
  // The world text is "pp=P tp=T"; the group must have P * T ranks.
  const std::string world = value(kShardMetadataWorld);
  int pp = 0, tp = 0;
  if (std::sscanf(world.c_str(), "pp=%d tp=%d", &pp, &tp) != 2 || pp * tp != world_size) {
    return LoadError{name + ": the shard was made for " + world + "; this group has " + std::to_string(world_size) +
                     " ranks"};
  }
  LoadResult<ModelConfig> config = ParseModelConfigJson(value(kShardMetadataConfig), name + " metadata");
  if (!config) return config.error();
  std::vector<std::unique_ptr<MappedFile>> files;
  files.push_back(std::move(file));
  LoadResult<std::unique_ptr<MappedCheckpoint>> checkpoint =
      MappedCheckpoint::FromSafetensorsFiles(std::move(files), std::move(*config));
  if (!checkpoint) return checkpoint.error();
  return std::unique_ptr<Checkpoint>(std::move(*checkpoint));
}

}  // namespace

LoadResult<std::unique_ptr<Checkpoint>> ServeShards(ProcessGroup& group, const MappedCheckpoint& checkpoint,
                                                    const ShardPlan& plan, size_t chunk_bytes) {
  CHECK(group.is_leader()) << "ServeShards runs on rank 0, not rank " << group.rank();
  if (plan.world_size() != group.world_size()) {
    return LoadError{"leader-only loading: the plan " + WorldLayoutText(plan.pp, plan.tp) + " has " +
                     std::to_string(plan.world_size()) + " ranks but the group has " +
                     std::to_string(group.world_size())};
  }
  for (int rank = 1; rank < plan.world_size(); ++rank) {
    const uint64_t total = RankShardBytes(checkpoint, plan, rank);
    std::byte length[sizeof(total)];
    std::memcpy(length, &total, sizeof(total));
    const std::string what = "streaming weights to rank " + std::to_string(rank);
    if (Status s = group.send_bytes(rank, kWeightStreamTag, length); !s) return StreamError(what, s.error());
    ChunkedSink sink(chunk_bytes, chunk_bytes, [&](std::span<const std::byte> chunk) -> LoadStatus {
      if (Status s = group.send_bytes(rank, kWeightStreamTag, chunk); !s) return StreamError(what, s.error());
      return {};
    });
    if (LoadStatus s = StreamRankShard(checkpoint, plan, rank, sink); !s) return s.error();
  }
  std::vector<std::byte> own;
  own.reserve(RankShardBytes(checkpoint, plan, 0));
  ChunkedSink sink(chunk_bytes, chunk_bytes, [&](std::span<const std::byte> chunk) -> LoadStatus {
    own.insert(own.end(), chunk.begin(), chunk.end());
    return {};
  });
  if (LoadStatus s = StreamRankShard(checkpoint, plan, 0, sink); !s) return s.error();
  return CheckpointFromShardBytes(std::move(own), 0, group.world_size(), "rank 0's shard");
}

LoadResult<std::unique_ptr<Checkpoint>> ReceiveShard(ProcessGroup& group) {
  const std::string what = "rank " + std::to_string(group.rank()) + ": receiving weights from rank 0";
  Result<std::vector<std::byte>> length = group.recv_bytes(0, kWeightStreamTag);
  if (!length) return StreamError(what, length.error());
  uint64_t total = 0;
  if (length->size() != sizeof(total)) {
    return LoadError{what + ": the first message holds " + std::to_string(length->size()) +
                     " bytes, not the 8-byte shard size"};
  }
  std::memcpy(&total, length->data(), sizeof(total));
  std::vector<std::byte> bytes;
  bytes.reserve(std::min<uint64_t>(total, 1ull << 30));  // the size comes from the wire
  while (bytes.size() < total) {
    Result<std::vector<std::byte>> chunk = group.recv_bytes(0, kWeightStreamTag);
    if (!chunk) return StreamError(what, chunk.error());
    if (chunk->size() > total - bytes.size()) {
      return LoadError{what + ": received " + std::to_string(bytes.size() + chunk->size()) +
                       " bytes, more than the announced " + std::to_string(total)};
    }
    bytes.insert(bytes.end(), chunk->begin(), chunk->end());
  }
  return CheckpointFromShardBytes(std::move(bytes), group.rank(), group.world_size(),
                                  "rank " + std::to_string(group.rank()) + "'s shard from rank 0");
}

}  // namespace inferno
