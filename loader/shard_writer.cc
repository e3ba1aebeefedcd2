#include "loader/shard_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <set>

#include "loader/atomic_file.h"
#include "loader/safetensors_format.h"
#include "loader/sha256.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

// Ranges at least this long go from the mapping to the file directly; shorter
// ones (rows of permuted or column-sliced tensors) are gathered first.
constexpr size_t kBufferBytes = 4 << 20;
// Ranges at least this long are hashed and written concurrently.
constexpr size_t kParallelBytes = 1 << 20;

// An output file that hashes what it writes and reports progress.
class HashingWriter {
 public:
  HashingWriter(AtomicFile file, uint64_t* bytes_done, uint64_t bytes_total, const ShardProgress& progress)
      : file_(std::move(file)), bytes_done_(bytes_done), bytes_total_(bytes_total), progress_(progress) {
    buffer_.reserve(kBufferBytes);
  }

  LoadStatus Append(std::span<const std::byte> bytes) {
    if (buffer_.size() + bytes.size() > kBufferBytes) {
      if (LoadStatus s = Flush(); !s) return s;
    }
    if (bytes.size() >= kBufferBytes) return Emit(bytes);
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return {};
  }

  // Flushes, renames into place and returns the file's SHA-256.
  LoadResult<std::string> Commit() {
    if (LoadStatus s = Flush(); !s) return s.error();
    if (LoadStatus s = file_.Commit(); !s) return s.error();
    return hash_.HexDigest();
  }

 private:
  LoadStatus Flush() {
    LoadStatus s = Emit(buffer_);
    buffer_.clear();
    return s;
  }

  // Hashes and writes `bytes`; ranges of at least kParallelBytes are hashed on
  // a second thread while this one writes them.
  LoadStatus Emit(std::span<const std::byte> bytes) {
    if (bytes.empty()) return {};
    if (bytes.size() < kParallelBytes) {
      hash_.Update(bytes);
      if (LoadStatus s = file_.Write(bytes); !s) return s;
    } else {
      std::future<void> hashing = std::async(std::launch::async, [this, bytes] { hash_.Update(bytes); });
      LoadStatus s = file_.Write(bytes);
      hashing.wait();
      if (!s) return s;
    }
    *bytes_done_ += bytes.size();
    if (progress_) progress_(*bytes_done_, bytes_total_);
    return {};
  }

  AtomicFile file_;
  Sha256 hash_;
  std::vector<std::byte> buffer_;
  uint64_t* bytes_done_;
  uint64_t bytes_total_;
  const ShardProgress& progress_;
};

// Appends `slice` of the checkpoint's tensor, coalescing adjacent rows.
LoadStatus CopySlice(const MappedCheckpoint& checkpoint, const TensorSlice& slice, HashingWriter& out) {
  const size_t index = *checkpoint.IndexOf(slice.name);
  const TensorInfo& info = checkpoint.tensors()[index];
  int64_t row_begin = 0, row_end = checkpoint.NumRows(index);
  int64_t column_offset = 0, column_bytes = checkpoint.RowBytes(index);
  if (slice.split_dim == 0) {
    row_begin = slice.begin;
    row_end = slice.end;
  } else if (slice.split_dim == 1) {
    const int64_t bytes_per_column = checkpoint.RowBytes(index) / info.shape[1];
    column_offset = slice.begin * bytes_per_column;
    column_bytes = (slice.end - slice.begin) * bytes_per_column;
  }
  checkpoint.WillNeed(index);
  std::span<const std::byte> pending;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const std::span<const std::byte> part =
        checkpoint.Row(index, row).subspan(static_cast<size_t>(column_offset), static_cast<size_t>(column_bytes));
    if (!pending.empty() && pending.data() + pending.size() == part.data()) {
      pending = std::span(pending.data(), pending.size() + part.size());
      continue;
    }
    if (LoadStatus s = out.Append(pending); !s) return s;
    pending = part;
  }
  LoadStatus s = out.Append(pending);
  checkpoint.Release(index);
  return s;
}

uint64_t FileBytes(const std::vector<TensorInfo>& infos, const std::map<std::string, std::string>& metadata) {
  uint64_t bytes = EncodeSafetensorsHeader(infos, metadata).size();
  for (const TensorInfo& info : infos) bytes += TensorByteSize(info);
  return bytes;
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

std::vector<TensorInfo> ShardTensorInfos(const Checkpoint& checkpoint, const RankShard& shard) {
  std::vector<TensorInfo> infos;
  for (const TensorSlice& slice : shard.tensors) {
    const TensorInfo source = *checkpoint.Find(slice.name);
    infos.push_back({slice.name, source.dtype, SliceShape(source.shape, slice)});
  }
  return infos;
}

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
  std::vector<std::vector<TensorInfo>> infos;
  for (const RankShard& shard : plan.ranks) {
    infos.push_back(ShardTensorInfos(checkpoint, shard));
    manifest.files.push_back({shard.rank, ShardFileName(shard.rank, plan.world_size()),
                              FileBytes(infos.back(), ShardMetadata(plan, shard.rank)), ""});
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
    const std::map<std::string, std::string> metadata = ShardMetadata(plan, static_cast<int>(rank));
    LoadResult<AtomicFile> file = AtomicFile::Create(out_dir + "/" + manifest.files[rank].file);
    if (!file) return file.error();
    HashingWriter out(std::move(*file), &report.bytes_written, bytes_total, progress);
    const std::string header = EncodeSafetensorsHeader(infos[rank], metadata);
    if (LoadStatus s = out.Append(std::as_bytes(std::span(header.data(), header.size()))); !s) return s.error();
    for (const TensorSlice& slice : plan.ranks[rank].tensors) {
      if (LoadStatus s = CopySlice(checkpoint, slice, out); !s) return s.error();
    }
    LoadResult<std::string> digest = out.Commit();
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
