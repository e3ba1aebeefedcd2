// Opening one rank's weights from a folder of shards written by //tools:shard
// (--shards DIR): the manifest, checked against the job, and a Checkpoint over
// the rank's own shard file, memory-mapped.
//
// The Checkpoint's config() is the whole model's; its tensors() are the rank's
// tensors of the plan, under their Hugging Face names and global layer indices
// ("model.layers.3.…"), each shaped as its slice (SliceShape) under tensor
// parallelism. They hold bit-for-bit the values the original checkpoint gives
// for those slices.
//
// Thread-safety: OpenRankShard may be called from several threads at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "loader/checkpoint.h"
#include "loader/manifest.h"
#include "loader/mapped_file.h"
#include "loader/shard_plan.h"

namespace inferno {

// The job that wants the shards.
struct ShardJob {
  int rank = 0;
  int world_size = 1;
  std::optional<int> pp;                // if set, must match the plan's
  std::optional<int> tp;                // --tp, or --ep's value with expert_parallel
  std::optional<bool> expert_parallel;  // if set (--tp or --ep given), must match the plan's
  // Hash the rank's file and compare with the manifest (reads the file once).
  bool verify_checksum = true;
};

struct RankShardCheckpoint {
  Manifest manifest;
  std::unique_ptr<Checkpoint> checkpoint;  // the rank's tensors
  // Rank `rank`'s part of the plan (layers, embedding, head, slices).
  const RankShard& shard(int rank) const { return manifest.plan.ranks[static_cast<size_t>(rank)]; }
};

// Opens `folder`'s manifest and `job.rank`'s shard file. Fails with a one-line
// message on: a missing or malformed manifest; a world that differs from the
// job ("these shards were made for pp=3 tp=1 (3 ranks); this job has 2
// ranks"); a file whose size or checksum differs from the manifest; a file
// made for another rank or plan (its metadata); a plan that is not
// MakeShardPlan's for its grid and layers; tensors that differ from the
// rank's plan.
Result<RankShardCheckpoint> OpenRankShard(const std::string& folder, const ShardJob& job);

// One rank's shard file without a manifest (received from the leader: see
// runtime/weight_transfer.h): its own metadata gives the model's config.
struct LoneShard {
  ShardPlan plan;                          // plan_for(config)
  std::unique_ptr<Checkpoint> checkpoint;  // the rank's tensors, over `file`
};

// Opens `file` as rank `rank`'s shard of the plan `plan_for` gives for the
// config in its metadata. Fails with a one-line message on: a file that is
// not a shard (no config metadata, a bad header); plan_for's error; metadata
// naming another rank or plan (e.g. the job's --pp differs from the
// leader's); tensors that differ from the rank's plan.
Result<LoneShard> OpenLoneShard(std::unique_ptr<MappedFile> file, int rank,
                                const std::function<Result<ShardPlan>(const ModelConfig&)>& plan_for);

}  // namespace inferno
