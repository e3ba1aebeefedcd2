#include "loader/shard_stream.h"

#include <optional>
#include <string>
#include <vector>

#include <glog/logging.h>

#include "loader/manifest.h"
#include "loader/safetensors_format.h"

namespace inferno {
namespace {

std::string RankHeader(const Checkpoint& checkpoint, const ShardPlan& plan, int rank,
                       std::optional<DType> convert) {
  return EncodeSafetensorsHeader(ShardTensorInfos(checkpoint, plan.ranks[static_cast<size_t>(rank)], convert),
                                 ShardMetadata(checkpoint.config(), plan, rank));
}

// Rows [row_begin, row_end) and columns [column_begin, column_end) of
// tensors()[index] (all columns for a 1-D tensor's single-element rows).
struct SliceBounds {
  int64_t row_begin, row_end, column_begin, column_end;
};

SliceBounds BoundsOf(const MappedCheckpoint& checkpoint, size_t index, const TensorSlice& slice) {
  SliceBounds b{0, checkpoint.NumRows(index), 0, checkpoint.RowElements(index)};
  if (slice.split_dim == 0) {
    b.row_begin = slice.begin;
    b.row_end = slice.end;
  } else if (slice.split_dim == 1) {
    b.column_begin = slice.begin;
    b.column_end = slice.end;
  }
  return b;
}

// Appends `slice` of the checkpoint's tensor in its stored bytes, coalescing
// adjacent rows.
Status CopySlice(const MappedCheckpoint& checkpoint, size_t index, const SliceBounds& b, ChunkedSink& sink) {
  const DType dtype = checkpoint.tensors()[index].dtype;
  const int64_t column_offset = DTypeBytes(dtype, b.column_begin).value();
  const int64_t column_bytes = DTypeBytes(dtype, b.column_end - b.column_begin).value();
  std::span<const std::byte> pending;
  for (int64_t row = b.row_begin; row < b.row_end; ++row) {
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
  return sink.Append(pending);
}

// Appends `slice` of the checkpoint's tensor converted to `to`, row by row:
// each whole row is widened to f32; for a block type `convert` it is
// quantized whole (so a slice's blocks are those of the whole row), then cut
// — or, when `to` is F32 because the cut splits blocks, dequantized and cut.
Status ConvertSlice(const MappedCheckpoint& checkpoint, size_t index, const SliceBounds& b,
                    std::optional<DType> convert, DType to, ChunkedSink& sink) {
  const TensorInfo& info = checkpoint.tensors()[index];
  const int64_t row_elements = checkpoint.RowElements(index);
  const int64_t width = b.column_end - b.column_begin;
  const bool quantize_whole_row = convert && DTypeBlockElements(*convert) > 1;
  std::vector<float> values(static_cast<size_t>(row_elements));
  std::vector<std::byte> quantized(quantize_whole_row ? DTypeBytes(*convert, row_elements).value() : 0);
  std::vector<std::byte> converted(static_cast<size_t>(DTypeBytes(to, width).value()));
  for (int64_t row = b.row_begin; row < b.row_end; ++row) {
    ConvertToF32(info.dtype, checkpoint.Row(index, row).data(), values);
    std::span<const std::byte> out = converted;
    if (quantize_whole_row) {
      if (Status s = ConvertFromF32(*convert, values, quantized.data()); !s) {
        return s.error().Prefixed("tensor '" + info.name + "' row " + std::to_string(row) + ": ");
      }
      if (to == *convert) {
        out = std::span<const std::byte>(quantized).subspan(DTypeBytes(to, b.column_begin).value(),
                                                            converted.size());
      } else {
        ConvertToF32(*convert, quantized.data(), values);
      }
    }
    if (!(quantize_whole_row && to == *convert)) {
      const std::span<const float> cut = std::span<const float>(values).subspan(b.column_begin, width);
      if (Status s = ConvertFromF32(to, cut, converted.data()); !s) {
        return s.error().Prefixed("tensor '" + info.name + "' row " + std::to_string(row) + ": ");
      }
    }
    if (Status s = sink.Append(out); !s) return s;
  }
  return {};
}

Status StreamSlice(const MappedCheckpoint& checkpoint, const TensorSlice& slice, std::optional<DType> convert,
                   ChunkedSink& sink) {
  const size_t index = *checkpoint.IndexOf(slice.name);
  const TensorInfo& info = checkpoint.tensors()[index];
  const SliceBounds bounds = BoundsOf(checkpoint, index, slice);
  // The type whole rows are converted to, when that changes them
  // (converting a Q8_0 matrix to Q8_0 copies it).
  const DType to = ShardDType(info, slice, convert);
  const bool rows_convert = convert && *convert != info.dtype && info.shape.size() == 2 &&
                            info.shape[1] % DTypeBlockElements(*convert) == 0;
  checkpoint.WillNeed(index);
  Status s = !rows_convert && to == info.dtype
                 ? CopySlice(checkpoint, index, bounds, sink)
                 : ConvertSlice(checkpoint, index, bounds, rows_convert ? convert : std::nullopt, to, sink);
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

DType ShardDType(const TensorInfo& source, const TensorSlice& slice, std::optional<DType> convert) {
  const bool matrix = source.shape.size() == 2;
  const DType dtype =
      convert && matrix && source.shape[1] % DTypeBlockElements(*convert) == 0 ? *convert : source.dtype;
  const int64_t block = DTypeBlockElements(dtype);
  if (slice.split_dim == 1 && (slice.begin % block != 0 || slice.end % block != 0)) return DType::kF32;
  return dtype;
}

std::vector<TensorInfo> ShardTensorInfos(const Checkpoint& checkpoint, const RankShard& shard,
                                         std::optional<DType> convert) {
  std::vector<TensorInfo> infos;
  for (const TensorSlice& slice : shard.tensors) {
    const TensorInfo source = *checkpoint.Find(slice.name);
    infos.push_back({slice.name, ShardDType(source, slice, convert), SliceShape(source.shape, slice)});
  }
  return infos;
}

uint64_t RankShardBytes(const Checkpoint& checkpoint, const ShardPlan& plan, int rank,
                        std::optional<DType> convert) {
  uint64_t bytes = RankHeader(checkpoint, plan, rank, convert).size();
  for (const TensorInfo& info :
       ShardTensorInfos(checkpoint, plan.ranks[static_cast<size_t>(rank)], convert)) {
    bytes += TensorByteSize(info);
  }
  return bytes;
}

Status StreamRankShard(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                       std::optional<DType> convert, ChunkedSink& sink) {
  const std::string header = RankHeader(checkpoint, plan, rank, convert);
  if (Status s = sink.Append(std::as_bytes(std::span(header.data(), header.size()))); !s) return s;
  for (const TensorSlice& slice : plan.ranks[static_cast<size_t>(rank)].tensors) {
    if (Status s = StreamSlice(checkpoint, slice, convert, sink); !s) return s;
  }
  return sink.Flush();
}

}  // namespace inferno
