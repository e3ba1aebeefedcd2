#include "loader/shard_stream.h"

#include <glog/logging.h>

#include "loader/manifest.h"
#include "loader/safetensors_format.h"

namespace inferno {
namespace {

std::string RankHeader(const Checkpoint& checkpoint, const ShardPlan& plan, int rank) {
  return EncodeSafetensorsHeader(ShardTensorInfos(checkpoint, plan.ranks[static_cast<size_t>(rank)]),
                                 ShardMetadata(checkpoint.config(), plan, rank));
}

// Appends `slice` of the checkpoint's tensor, coalescing adjacent rows.
Status StreamSlice(const MappedCheckpoint& checkpoint, const TensorSlice& slice, ChunkedSink& sink) {
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
        checkpoint.Row(index, row)
            .subspan(static_cast<size_t>(column_offset), static_cast<size_t>(column_bytes));
    if (!pending.empty() && pending.data() + pending.size() == part.data()) {
      pending = std::span(pending.data(), pending.size() + part.size());
      continue;
    }
    if (Status s = sink.Append(pending); !s) return s;
    pending = part;
  }
  Status s = sink.Append(pending);
  // The sink may still hold a copy of the last rows in its buffer, never a
  // reference into the mapping: releasing the pages is safe.
  checkpoint.Release(index);
  return s;
}

}  // namespace

ChunkedSink::ChunkedSink(size_t buffer_bytes, size_t max_chunk_bytes, Emit emit)
    : buffer_bytes_(buffer_bytes), max_chunk_bytes_(max_chunk_bytes), emit_(std::move(emit)) {
  CHECK_GT(buffer_bytes_, 0u);
  CHECK_LE(buffer_bytes_, max_chunk_bytes_);
  buffer_.reserve(buffer_bytes_);
}

Status ChunkedSink::Append(std::span<const std::byte> bytes) {
  if (buffer_.size() + bytes.size() > buffer_bytes_) {
    if (Status s = Flush(); !s) return s;
  }
  if (bytes.size() < buffer_bytes_) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return {};
  }
  while (!bytes.empty()) {
    const size_t size = std::min(bytes.size(), max_chunk_bytes_);
    if (Status s = emit_(bytes.first(size)); !s) return s;
    bytes = bytes.subspan(size);
  }
  return {};
}

Status ChunkedSink::Flush() {
  if (buffer_.empty()) return {};
  Status s = emit_(buffer_);
  buffer_.clear();
  return s;
}

std::vector<TensorInfo> ShardTensorInfos(const Checkpoint& checkpoint, const RankShard& shard) {
  std::vector<TensorInfo> infos;
  for (const TensorSlice& slice : shard.tensors) {
    const TensorInfo source = *checkpoint.Find(slice.name);
    infos.push_back({slice.name, source.dtype, SliceShape(source.shape, slice)});
  }
  return infos;
}

uint64_t RankShardBytes(const Checkpoint& checkpoint, const ShardPlan& plan, int rank) {
  uint64_t bytes = RankHeader(checkpoint, plan, rank).size();
  for (const TensorInfo& info : ShardTensorInfos(checkpoint, plan.ranks[static_cast<size_t>(rank)])) {
    bytes += TensorByteSize(info);
  }
  return bytes;
}

Status StreamRankShard(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                       ChunkedSink& sink) {
  const std::string header = RankHeader(checkpoint, plan, rank);
  if (Status s = sink.Append(std::as_bytes(std::span(header.data(), header.size()))); !s) return s;
  for (const TensorSlice& slice : plan.ranks[static_cast<size_t>(rank)].tensors) {
    if (Status s = StreamSlice(checkpoint, slice, sink); !s) return s;
  }
  return sink.Flush();
}

}  // namespace inferno
