#include "loader/shard_writer.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "loader/atomic_file.h"
#include "loader/crc32c.h"
#include "loader/mapped_file.h"
#include "loader/shard_stream.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

// Short ranges (rows of permuted or column-sliced tensors) are gathered in a
// buffer this long; longer ones go from the mapping to the file directly.
constexpr size_t kBufferBytes = 4 << 20;

// Files processed at once: two keep both cores of small hosts busy (copying
// into the page cache costs CPU), and two tensors' pages in memory at once
// stay within the 2x-largest-tensor bound.
constexpr size_t kParallelFiles = 2;

// Runs task(0), ..., task(count - 1) on up to kParallelFiles threads.
void RunInParallel(size_t count, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) task(i);
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < std::min(count, kParallelFiles); ++w) helpers.emplace_back(worker);
  worker();
  for (std::thread& helper : helpers) helper.join();
}

// Bytes written by every file of the run, reported to a ShardProgress.
class ProgressCounter {
 public:
  ProgressCounter(uint64_t total, const ShardProgress& progress) : total_(total), progress_(progress) {}

  void Add(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ += bytes;
    if (progress_) progress_(done_, total_);
  }

  uint64_t done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t done_ = 0;
  const uint64_t total_;
  const ShardProgress& progress_;
};

// Writes rank `rank`'s file under `path`; returns its CRC-32C.
Result<std::string> WriteRankFile(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                                  std::optional<DType> convert, const std::string& path,
                                  ProgressCounter& progress) {
  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  Crc32c crc;
  ChunkedSink sink(kBufferBytes, SIZE_MAX, [&](std::span<const std::byte> bytes) -> Status {
    crc.Update(bytes);
    if (Status s = file->Write(bytes); !s) return s;
    progress.Add(bytes.size());
    return {};
  });
  if (Status s = StreamRankShard(checkpoint, plan, rank, convert, sink); !s)
    return s.error().Prefixed(path + ": ");
  if (Status s = file->Commit(); !s) return s.error();
  return crc.HexDigest();
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
  for (ShardFile& file : manifest.files) file.crc32c.clear();
  return manifest;
}

// Copies the tokenizer files beside the source checkpoint (its folder, or
// the folder of its file) into `out_dir`, each written atomically, so a job
// over the shards finds its tokenizer as it would beside the model.
Status CopyTokenizerFiles(const std::string& source, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path folder = fs::is_directory(source, ec) ? fs::path(source) : fs::path(source).parent_path();
  for (const char* name : kTokenizerFiles) {
    const fs::path from = folder / name;
    if (!fs::exists(from, ec)) continue;
    Result<std::string> bytes = ReadTextFile(from.string());
    if (!bytes) return bytes.error();
    Result<AtomicFile> copy = AtomicFile::Create(out_dir + "/" + name);
    if (!copy) return copy.error();
    if (Status s = copy->Write(*bytes); !s) return s.error();
    if (Status s = copy->Commit(); !s) return s.error();
  }
  return {};
}

}  // namespace

Result<ShardJobReport> WriteShards(const MappedCheckpoint& checkpoint, const std::string& source,
                                   const ShardPlan& plan, std::optional<DType> convert,
                                   const std::string& out_dir, const ShardProgress& progress) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Error::Io(out_dir + ": cannot create the output folder: " + ec.message());
  for (const RankShard& shard : plan.ranks) {
    for (const TensorSlice& slice : shard.tensors) {
      if (!checkpoint.IndexOf(slice.name)) {
        return Error::Corruption(source + ": tensor '" + slice.name + "' of rank " +
                                 std::to_string(shard.rank) + "'s plan is not in the checkpoint");
      }
    }
  }

  ShardJobReport report;
  Manifest& manifest = report.manifest;
  manifest.source = source;
  Result<std::string> fingerprint = SourceFingerprint(SourceFiles(checkpoint));
  if (!fingerprint) return fingerprint.error();
  manifest.source_fingerprint = *fingerprint;
  manifest.dtype = convert;
  manifest.config = checkpoint.config();
  manifest.plan = plan;
  for (const RankShard& shard : plan.ranks) {
    std::vector<DType> dtypes;
    for (const TensorInfo& info : ShardTensorInfos(checkpoint, shard, convert)) dtypes.push_back(info.dtype);
    manifest.files.push_back({shard.rank, ShardFileName(shard.rank, plan.world_size()),
                              RankShardBytes(checkpoint, plan, shard.rank, convert), "", std::move(dtypes)});
  }

  // Files of a finished run of the same job that still verify are kept.
  std::vector<bool> keep(plan.ranks.size(), false);
  Result<Manifest> previous = ReadManifest(out_dir);
  if (previous && ManifestToJson(WithoutChecksums(*previous)) == ManifestToJson(manifest)) {
    std::vector<char> verified(plan.ranks.size(), 0);
    RunInParallel(plan.ranks.size(), [&](size_t rank) {
      verified[rank] = VerifyShardFile(out_dir, previous->files[rank]).ok();
    });
    for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
      keep[rank] = verified[rank];
      if (keep[rank]) {
        manifest.files[rank].crc32c = previous->files[rank].crc32c;
        ++report.files_verified;
      }
    }
  }
  if (report.files_verified == static_cast<int>(plan.ranks.size())) return report;

  const std::string manifest_path = out_dir + "/" + kManifestFileName;
  if (::unlink(manifest_path.c_str()) != 0 && errno != ENOENT) {
    return Error::Io(manifest_path + ": cannot remove the previous manifest: " + std::strerror(errno));
  }
  std::vector<size_t> to_write;
  uint64_t bytes_total = 0;
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    if (keep[rank]) continue;
    to_write.push_back(rank);
    bytes_total += manifest.files[rank].bytes;
  }
  ProgressCounter counter(bytes_total, progress);
  std::vector<std::optional<Result<std::string>>> digests(to_write.size());
  std::atomic<bool> failed{false};
  RunInParallel(to_write.size(), [&](size_t i) {
    if (failed) return;  // stop starting files after a failure
    const int rank = static_cast<int>(to_write[i]);
    digests[i] = WriteRankFile(checkpoint, plan, rank, convert,
                               out_dir + "/" + manifest.files[to_write[i]].file, counter);
    if (!*digests[i]) failed = true;
  });
  report.bytes_written = counter.done();
  for (size_t i = 0; i < to_write.size(); ++i) {
    if (!digests[i]) continue;  // not started after another file failed
    if (!*digests[i]) return digests[i]->error();
    manifest.files[to_write[i]].crc32c = **digests[i];
    ++report.files_written;
  }

  if (Status s = CopyTokenizerFiles(source, out_dir); !s) return s.error();
  Result<AtomicFile> manifest_file = AtomicFile::Create(manifest_path);
  if (!manifest_file) return manifest_file.error();
  if (Status s = manifest_file->Write(ManifestToJson(manifest)); !s) return s.error();
  if (Status s = manifest_file->Commit(); !s) return s.error();
  return report;
}

}  // namespace inferno
