// The sharding job behind //tools:shard: writes, for every rank of a
// ShardPlan, one safetensors file holding exactly that rank's tensors (or
// tensor-parallel slices, in the source's dtype, bytes copied unchanged, or
// converted to shard --dtype's type), then
// manifest.json (see manifest.h, docs/manifest.md).
//
// Streaming: each file is the StreamRankShard byte stream (shard_stream.h):
// tensors are copied from the memory-mapped source through a bounded buffer
// (large contiguous ranges go straight from the mapping to the file) and
// their pages are released when done; two files are written at a time, so
// peak RSS stays within twice the largest tensor plus a few MiB, whatever the
// model size.
// Atomic: every file is written under a temporary name and renamed when
// complete; manifest.json is removed before and written after the shard files,
// so an interrupted run leaves nothing that looks finished.
// Idempotent: over a finished output of the same source and plan, files are
// verified against the manifest's checksums and skipped; only missing or
// damaged ones are rewritten.
//
// Thread-safety: WriteShards may run concurrently only on distinct folders.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/manifest.h"
#include "loader/mapped_checkpoint.h"
#include "loader/shard_plan.h"
#include "tensor/tensor_info.h"

namespace inferno {

// Called as bytes are written: bytes written so far and in total (over all
// the files this run writes). Called from the job's worker threads, one call
// at a time.
using ShardProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

struct ShardJobReport {
  Manifest manifest;
  int files_written = 0;
  int files_verified = 0;  // already present and matching: skipped
  uint64_t bytes_written = 0;
};

// The tokenizer files a shard folder carries over from its source's folder.
inline constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json"};

// Writes the shards of `checkpoint` (opened from `source`) under `plan` into
// `out_dir` (created if absent), matrices converted to `convert` when given
// (shard --dtype; see ShardDType), and copies the kTokenizerFiles found
// beside `source`. The manifest records `convert` and every tensor's stored
// type. Fails naming the file and the cause (I/O error, full disk, a value
// that cannot be converted, ...), leaving no manifest.
Result<ShardJobReport> WriteShards(const MappedCheckpoint& checkpoint, const std::string& source,
                                   const ShardPlan& plan, std::optional<DType> convert,
                                   const std::string& out_dir, const ShardProgress& progress);

}  // namespace inferno
