#include "loader/shard_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <set>

#include "loader/atomic_file.h"
#include "loader/shard_stream.h"
#include "loader/sha256.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

// Short ranges (rows of permuted or column-sliced tensors) are gathered in a
// buffer this long; longer ones go from the mapping to the file directly.
constexpr size_t kBufferBytes = 4 << 20;
// Ranges at least this long are hashed on a second thread while written.
constexpr size_t kParallelBytes = 1 << 20;

// Hashes and writes `bytes` to `file`.
LoadStatus HashAndWrite(std::span<const std::byte> bytes, AtomicFile& file, Sha256& hash) {
  if (bytes.size() < kParallelBytes) {
    hash.Update(bytes);
    return file.Write(bytes);
  }
  std::future<void> hashing = std::async(std::launch::async, [&hash, bytes] { hash.Update(bytes); });
  LoadStatus s = file.Write(bytes);
  hashing.wait();
  return s;
}

// Writes rank `rank`'s file under `path`; returns its SHA-256.
LoadResult<std::string> WriteRankFile(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                                      const std::string& path, uint64_t* bytes_done, uint64_t bytes_total,
                                      const ShardProgress& progress) {
  LoadResult<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  Sha256 hash;
  ChunkedSink sink(kBufferBytes, SIZE_MAX, [&](std::span<const std::byte> bytes) -> LoadStatus {
    if (LoadStatus s = HashAndWrite(bytes, *file, hash); !s) return s;
    *bytes_done += bytes.size();
    if (progress) progress(*bytes_done, bytes_total);
    return {};
  });
  if (LoadStatus s = StreamRankShard(checkpoint, plan, rank, sink); !s) return s.error();
  if (LoadStatus s = file->Commit(); !s) return s.error();
  return hash.HexDigest();
}

// The source files behind the checkpoint, in tensor order.
std::vector<std::string> SourceFiles(const MappedCheckpoint& checkpoint) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (size_t i = 0; i < checkpoint.tensors().size(); ++i) {
    if (seen.insert(checkpoint.FilePathOf(i)).second) files.push_back(checkpoint.FilePathOf(i));
  }
  return files;
}

// `manifest` with its checksums cleared: what a run can know before writing.
Manifest WithoutChecksums(Manifest manifest) {
  for (ShardFile& file : manifest.files) file.sha256.clear();
  return manifest;
}

}  // namespace

LoadResult<ShardJobReport> WriteShards(const MappedCheckpoint& checkpoint, const std::string& source,
                                       const ShardPlan& plan, const std::string& out_dir,
                                       const ShardProgress& progress) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return LoadError{out_dir + ": cannot create the output folder: " + ec.message()};
  for (const RankShard& shard : plan.ranks) {
    for (const TensorSlice& slice : shard.tensors) {
      if (!checkpoint.IndexOf(slice.name)) {
        return LoadError{source + ": tensor '" + slice.name + "' of rank " + std::to_string(shard.rank) +
                         "'s plan is not in the checkpoint"};
      }
    }
  }

  ShardJobReport report;
  Manifest& manifest = report.manifest;
  manifest.source = source;
  LoadResult<std::string> fingerprint = SourceFingerprint(SourceFiles(checkpoint));
  if (!fingerprint) return fingerprint.error();
  manifest.source_fingerprint = *fingerprint;
  manifest.config = checkpoint.config();
  manifest.plan = plan;
  for (const RankShard& shard : plan.ranks) {
    manifest.files.push_back({shard.rank, ShardFileName(shard.rank, plan.world_size()),
                              RankShardBytes(checkpoint, plan, shard.rank), ""});
  }

  // Files of a finished run of the same job that still verify are kept.
  std::vector<bool> keep(plan.ranks.size(), false);
  LoadResult<Manifest> previous = ReadManifest(out_dir);
  if (previous && ManifestToJson(WithoutChecksums(*previous)) == ManifestToJson(manifest)) {
    for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
      keep[rank] = VerifyShardFile(out_dir, previous->files[rank]).ok();
      if (keep[rank]) {
        manifest.files[rank].sha256 = previous->files[rank].sha256;
        ++report.files_verified;
      }
    }
  }
  if (report.files_verified == static_cast<int>(plan.ranks.size())) return report;

  const std::string manifest_path = out_dir + "/" + kManifestFileName;
  if (::unlink(manifest_path.c_str()) != 0 && errno != ENOENT) {
    return LoadError{manifest_path + ": cannot remove the previous manifest: " + std::strerror(errno)};
  }
  uint64_t bytes_total = 0;
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    if (!keep[rank]) bytes_total += manifest.files[rank].bytes;
  }
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    if (keep[rank]) continue;
    LoadResult<std::string> digest = WriteRankFile(checkpoint, plan, static_cast<int>(rank),
                                                   out_dir + "/" + manifest.files[rank].file, &report.bytes_written,
                                                   bytes_total, progress);
    if (!digest) return digest.error();
    manifest.files[rank].sha256 = *digest;
    ++report.files_written;
  }

  LoadResult<AtomicFile> manifest_file = AtomicFile::Create(manifest_path);
  if (!manifest_file) return manifest_file.error();
  if (LoadStatus s = manifest_file->Write(ManifestToJson(manifest)); !s) return s.error();
  if (LoadStatus s = manifest_file->Commit(); !s) return s.error();
  return report;
}

}  // namespace inferno
