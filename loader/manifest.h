// The shard manifest: the one file (manifest.json, beside the shard files)
// that says what a folder of shards holds — the model config, the shard plan
// and world layout, each rank's file with its size and CRC-32C, and the tool
// that wrote it. docs/manifest.md describes the format for people; this header
// is its single definition in code.
//
// Each rank's shard file is a safetensors file with the rank's tensors (or
// tensor-parallel slices of them) under their Hugging Face names; its
// __metadata__ names the rank and the plan it belongs to (kShardMetadata*).
//
// Thread-safety: plain value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "loader/shard_plan.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

inline constexpr char kManifestFileName[] = "manifest.json";
inline constexpr char kManifestFormat[] = "inferno-shards";
// 2: the plan records each rank's heads, KV heads, hidden units and
// classifier rows (issue 12); 3: and its embedding rows, which tensor
// parallelism splits; 4: and its experts (a range); 5: the experts it holds
// of each of its layers, as a list per layer (issue 29: placement by load);
// 6: every rank of the first stage holds the whole embedding (up to 5 split
// it by vocabulary rows).
inline constexpr int kManifestFormatVersion = 6;
inline constexpr char kShardToolVersion[] = "inferno-shard 1.0";

// __metadata__ keys of every shard file.
inline constexpr char kShardMetadataFormat[] = "format";             // "pt", as Hugging Face writes
inline constexpr char kShardMetadataProducer[] = "producer";         // kShardToolVersion
inline constexpr char kShardMetadataRank[] = "inferno.rank";         // "0"
inline constexpr char kShardMetadataWorld[] = "inferno.world";       // "pp=3 tp=1"
inline constexpr char kShardMetadataPlan[] = "inferno.plan_sha256";  // PlanDigest(plan)
inline constexpr char kShardMetadataConfig[] = "inferno.config";     // ModelConfigToJson

struct ShardFile {
  int rank = 0;
  std::string file;    // name inside the shard folder, ShardFileName(rank, world)
  uint64_t bytes = 0;  // file size
  std::string crc32c;  // CRC-32C of the whole file, 8 lowercase hex digits
  // The stored type of each of the rank's tensors, in the plan's order
  // (ShardDType); empty in manifests written before types were recorded.
  std::vector<DType> dtypes = {};
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string tool_version = kShardToolVersion;
  std::string source;  // the --model path the shards were made from
  // Identifies the source's contents cheaply: SHA-256 over each source file's
  // path, size and modification time (SourceFingerprint).
  std::string source_fingerprint;
  // shard --dtype: the type matrices were converted to; nullopt when the
  // shards keep the source's types.
  std::optional<DType> dtype;
  ModelConfig config;
  ShardPlan plan;
  std::vector<ShardFile> files;  // indexed by rank
};

// "rank-00000-of-00003.safetensors".
std::string ShardFileName(int rank, int world_size);
// "pp=3 tp=1", or "pp=2 ep=2" with experts placed whole — how messages name
// a world layout.
std::string WorldLayoutText(int pp, int tp, bool expert_parallel);
std::string WorldLayoutText(const ShardPlan& plan);
// The SHA-256 of the plan's canonical JSON: identifies the plan in each shard
// file's metadata.
std::string PlanDigest(const ShardPlan& plan);
// The __metadata__ of rank `rank`'s shard file of a model of `config` under
// `plan`.
std::map<std::string, std::string> ShardMetadata(const ModelConfig& config, const ShardPlan& plan, int rank);

// SourceFingerprint of the given files; fails naming a file that cannot be
// stat'ed.
Result<std::string> SourceFingerprint(const std::vector<std::string>& paths);

// Checks `folder`/`file.file` against its manifest entry: its size, then its
// CRC-32C (read streaming, with bounded memory). Fails naming the file and
// both values.
Status VerifyShardFile(const std::string& folder, const ShardFile& file);

std::string ManifestToJson(const Manifest& manifest);
// Parses and checks a manifest (format, version, a plan with one rank and one
// file per rank of its world, file names inside the folder). `source` names
// the file in messages.
Result<Manifest> ParseManifestJson(const std::string& text, const std::string& source);
// Reads `folder`/manifest.json.
Result<Manifest> ReadManifest(const std::string& folder);

}  // namespace inferno
