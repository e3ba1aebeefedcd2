#include "engine/stage_weights.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <glog/logging.h>

#include "loader/column_slice.h"
#include "model/llama_layout.h"

namespace inferno {
namespace {

Error SliceMismatch(const TensorSlice& slice, const TensorInfo& info, int64_t count) {
  return Error::Corruption("loading stage weights: tensor '" + slice.name + "' has shape " +
                           ShapeToString(info.shape) + ", which holds neither the plan's slice of " +
                           std::to_string(count) + " elements nor the whole tensor");
}

// The plan's `slice` (count elements) of a 1-D tensor, or of a matrix whose
// columns it slices across Q8_0/Q4_0 blocks, converted to f32.
Result<WeightTensor> LoadSliceAsF32(const Checkpoint& checkpoint, const TensorSlice& slice,
                                    const TensorInfo& info, int64_t count, WeightArena& arena) {
  const bool whole = info.num_elements() == count;
  Result<WeightArena::Block> buffer = arena.Allocate(static_cast<size_t>(count) * sizeof(float));
  if (!buffer) return buffer.error().Prefixed("loading stage weights: ");
  const std::span<float> into(reinterpret_cast<float*>(buffer->bytes.data()), static_cast<size_t>(count));
  Status status;
  int64_t cols = count;
  if (whole) {
    status = checkpoint.ReadF32(slice.name, into);
    if (info.shape.size() == 2) cols = info.shape[1];
  } else if (slice.split_dim == 0) {
    status = checkpoint.ReadRowsF32(slice.name, slice.begin, slice.end, into);
    if (info.shape.size() == 2) cols = info.shape[1];
  } else if (slice.split_dim == 1 && info.shape.size() == 2 &&
             info.shape[0] * (slice.end - slice.begin) == count) {
    cols = slice.end - slice.begin;
    status = ReadColumnSlice(
        info.shape[0], info.shape[1] * sizeof(float), slice.begin * sizeof(float), cols * sizeof(float),
        buffer->bytes, [&](int64_t row_begin, int64_t row_end, std::span<std::byte> into_rows) {
          return checkpoint.ReadRowsF32(
              slice.name, row_begin, row_end,
              {reinterpret_cast<float*>(into_rows.data()), into_rows.size() / sizeof(float)});
        });
  } else {
    return SliceMismatch(slice, info, count);
  }
  if (!status) return status.error().Prefixed("loading stage weights: ");
  return WeightTensor(DType::kF32, cols, std::move(*buffer));
}

// The plan's `slice` of its tensor (count elements): a matrix in its stored
// type (with kInPlace, the checkpoint's own pages when its rows are stored
// in order: see Checkpoint::MapRows), a 1-D tensor as f32.
Result<WeightTensor> LoadSlice(const Checkpoint& checkpoint, const TensorSlice& slice, int64_t count,
                               WeightPlacement placement, WeightArena& arena) {
  Result<TensorInfo> info = checkpoint.Find(slice.name);
  if (!info) return info.error().Prefixed("loading stage weights: ");
  const bool whole = info->num_elements() == count;
  const bool matrix = info->shape.size() == 2;
  if (placement == WeightPlacement::kInPlace && (whole || slice.split_dim == 0)) {
    const int64_t row_begin = whole ? 0 : slice.begin;
    const int64_t row_end = whole ? (info->shape.empty() ? 1 : info->shape[0]) : slice.end;
    std::optional<Checkpoint::MappedRows> mapped = checkpoint.MapRows(slice.name, row_begin, row_end);
    // 1-D tensors are held as f32 (see WeightTensor).
    if (mapped && (matrix || mapped->dtype == DType::kF32)) {
      const Result<int64_t> expected_bytes = DTypeBytes(mapped->dtype, count);
      if (expected_bytes && static_cast<int64_t>(mapped->bytes.size()) == *expected_bytes)
        return WeightTensor(matrix ? info->shape[1] : count, std::move(*mapped));
    }
  }
  if (!matrix) return LoadSliceAsF32(checkpoint, slice, *info, count, arena);
  const int64_t rows = info->shape[0];
  const int64_t all_cols = info->shape[1];
  const DType dtype = info->dtype;
  const int64_t block = DTypeBlockElements(dtype);
  if (slice.split_dim == 1 && !whole && (slice.begin % block != 0 || slice.end % block != 0)) {
    return LoadSliceAsF32(checkpoint, slice, *info, count, arena);
  }
  const auto row_bytes = [dtype](int64_t elements) { return DTypeBytes(dtype, elements).value(); };
  // Rows [row_begin, row_end) whole, or columns [slice.begin, slice.end) of
  // every row (whole blocks).
  const bool columns = !whole && slice.split_dim == 1;
  const int64_t row_begin = columns || whole ? 0 : slice.begin;
  const int64_t row_end = columns || whole ? rows : slice.end;
  const int64_t cols = columns ? slice.end - slice.begin : all_cols;
  if ((!whole && slice.split_dim != 0 && slice.split_dim != 1) || (row_end - row_begin) * cols != count) {
    return SliceMismatch(slice, *info, count);
  }
  Result<WeightArena::Block> buffer =
      arena.Allocate(static_cast<size_t>((row_end - row_begin) * row_bytes(cols)));
  if (!buffer) return buffer.error().Prefixed("loading stage weights: ");
  const Status status =
      columns
          ? ReadColumnSlice(rows, row_bytes(all_cols), row_bytes(slice.begin), row_bytes(cols), buffer->bytes,
                            [&](int64_t begin, int64_t end, std::span<std::byte> into_rows) {
                              return checkpoint.ReadRowsStored(slice.name, begin, end, into_rows);
                            })
          : checkpoint.ReadRowsStored(slice.name, row_begin, row_end, buffer->bytes);
  if (!status) return status.error().Prefixed("loading stage weights: ");
  return WeightTensor(dtype, cols, std::move(*buffer));
}

// The plan's slice of `name` for `part`. Precondition: the plan lists it.
const TensorSlice& SliceNamed(const RankShard& part, const std::string& name) {
  for (const TensorSlice& slice : part.tensors) {
    if (slice.name == name) return slice;
  }
  LOG(FATAL) << "rank " << part.rank << "'s plan has no tensor " << name;
}

// The router and the rank's experts (part.ExpertsOf(layer)) of sparse layer `layer`
// into `weights`, each expert's matrices holding the units of the plan's
// slice of them.
Status LoadExperts(const Checkpoint& checkpoint, const RankShard& part, int64_t layer,
                   WeightPlacement placement, WeightArena& arena, LayerWeights& weights) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const auto load = [&](const std::string& suffix, int64_t count, WeightTensor& out) -> Status {
    Result<WeightTensor> loaded =
        LoadSlice(checkpoint, SliceNamed(part, LayerTensorName(layer, suffix)), count, placement, arena);
    if (!loaded) return loaded.error();
    out = std::move(*loaded);
    return {};
  };
  if (Status s = load(RouterSuffix(config), config.num_experts * dim, weights.router); !s) return s;
  const std::vector<int32_t>& held = part.ExpertsOf(layer);
  CHECK(!held.empty()) << "rank " << part.rank << " holds no expert of layer " << layer;
  const TensorSlice& first =
      SliceNamed(part, LayerTensorName(layer, ExpertSuffix(config, held[0], ExpertMatrix::kGate)));
  const int64_t units = first.split_dim < 0 ? config.expert_intermediate_size : first.end - first.begin;
  weights.experts.resize(held.size());
  for (size_t i = 0; i < held.size(); ++i) {
    const int32_t e = held[i];
    ExpertWeights& expert = weights.experts[i];
    const std::tuple<ExpertMatrix, int64_t, WeightTensor*> matrices[] = {
        {ExpertMatrix::kGate, units * dim, &expert.w_gate},
        {ExpertMatrix::kUp, units * dim, &expert.w_up},
        {ExpertMatrix::kDown, dim * units, &expert.w_down}};
    for (const auto& [matrix, count, out] : matrices) {
      if (Status s = load(ExpertSuffix(config, e, matrix), count, *out); !s) return s;
    }
  }
  return {};
}

Result<LayerWeights> LoadLayer(const Checkpoint& checkpoint, const RankShard& part, int64_t layer,
                               WeightPlacement placement, WeightArena& arena) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const int64_t head_dim = config.head_dim();
  const int64_t q_dim = part.heads.size() * head_dim;
  const int64_t kv_dim = part.kv_heads.size() * head_dim;
  const int64_t hidden = part.hidden_units.size();
  LayerWeights weights;
  std::vector<std::tuple<WeightTensor*, std::string_view, int64_t>> tensors = {
      {&weights.attention_norm, kAttentionNormSuffix, dim},
      {&weights.wq, kQProjSuffix, q_dim * dim},
      {&weights.wk, kKProjSuffix, kv_dim * dim},
      {&weights.wv, kVProjSuffix, kv_dim * dim},
      {&weights.wo, kOProjSuffix, dim * q_dim},
      {&weights.ffn_norm, FeedForwardNormSuffix(config), dim},
      {&weights.w_gate, kGateProjSuffix, hidden * dim},
      {&weights.w_up, kUpProjSuffix, hidden * dim},
      {&weights.w_down, kDownProjSuffix, dim * hidden},
  };
  const bool sparse = config.IsSparseLayer(layer);
  if (sparse) tensors.resize(tensors.size() - 3);  // its experts replace the MLP
  if (config.qkv_bias) {
    tensors.insert(tensors.end(), {{&weights.bq, kQBiasSuffix, q_dim},
                                   {&weights.bk, kKBiasSuffix, kv_dim},
                                   {&weights.bv, kVBiasSuffix, kv_dim}});
  }
  if (config.o_proj_bias) tensors.push_back({&weights.bo, kOBiasSuffix, dim});
  if (config.qk_norm()) {
    tensors.insert(tensors.end(),
                   {{&weights.q_norm, kQNormSuffix, head_dim}, {&weights.k_norm, kKNormSuffix, head_dim}});
  }
  if (config.post_norms()) {
    tensors.insert(tensors.end(), {{&weights.post_attention_norm, kPostAttentionNormSuffix, dim},
                                   {&weights.post_ffn_norm, kPostFeedForwardNormSuffix, dim}});
  }
  for (const auto& [out, suffix, count] : tensors) {
    Result<WeightTensor> loaded =
        LoadSlice(checkpoint, SliceNamed(part, LayerTensorName(layer, suffix)), count, placement, arena);
    if (!loaded) return loaded.error();
    *out = std::move(*loaded);
  }
  if (sparse) {
    if (Status s = LoadExperts(checkpoint, part, layer, placement, arena, weights); !s) return s.error();
  }
  return weights;
}

}  // namespace

WeightTensor::WeightTensor(DType dtype, int64_t cols, WeightArena::Block owned)
    : dtype_(dtype), cols_(cols), bytes_(owned.bytes), owner_(std::move(owned.owner)) {
  CHECK(cols_ > 0 || bytes_.empty());
  CHECK(bytes_.empty() || static_cast<int64_t>(bytes_.size()) % DTypeBytes(dtype_, cols_).value() == 0)
      << bytes_.size() << " bytes are not whole rows of " << cols_ << " " << DTypeName(dtype_);
}

WeightTensor::WeightTensor(int64_t cols, Checkpoint::MappedRows mapped)
    : dtype_(mapped.dtype),
      cols_(cols),
      bytes_(mapped.bytes),
      owner_(std::move(mapped.mapping)),
      in_place_(true) {
  CHECK(cols_ > 0 && static_cast<int64_t>(bytes_.size()) % DTypeBytes(dtype_, cols_).value() == 0)
      << bytes_.size() << " mapped bytes are not whole rows of " << cols_ << " " << DTypeName(dtype_);
}

int64_t WeightTensor::rows() const {
  return cols_ == 0 ? 0 : static_cast<int64_t>(bytes().size()) / DTypeBytes(dtype_, cols_).value();
}

std::span<const float> WeightTensor::values() const {
  CHECK(dtype_ == DType::kF32) << "values() of a " << DTypeName(dtype_) << " tensor";
  const std::span<const std::byte> b = bytes();
  return {reinterpret_cast<const float*>(b.data()), b.size() / sizeof(float)};
}

WeightMatrix WeightTensor::Rows(int64_t begin, int64_t end) const {
  DCHECK(begin >= 0 && begin <= end && end <= rows());
  if (begin == end) return {dtype_, nullptr, 0};
  return {dtype_, bytes().data() + begin * DTypeBytes(dtype_, cols_).value(), end - begin};
}

void WeightTensor::RowToF32(int64_t row, std::span<float> out) const {
  DCHECK(row >= 0 && row < rows());
  DCHECK_EQ(static_cast<int64_t>(out.size()), cols_);
  ConvertToF32(dtype_, bytes().data() + row * DTypeBytes(dtype_, cols_).value(), out);
}

StageWeights::Bytes StageWeights::ByteSize() const {
  Bytes bytes;
  const auto add = [&bytes](const WeightTensor& tensor) {
    const int64_t size = static_cast<int64_t>(tensor.bytes().size());
    bytes.total += size;
    if (tensor.in_place()) bytes.in_place += size;
  };
  for (const WeightTensor* tensor : {&token_embedding, &final_norm, &classifier}) add(*tensor);
  for (const LayerWeights& layer : layers) {
    for (const WeightTensor* tensor :
         {&layer.attention_norm, &layer.wq, &layer.wk, &layer.wv, &layer.bq, &layer.bk, &layer.bv,
          &layer.q_norm, &layer.k_norm, &layer.wo, &layer.bo, &layer.post_attention_norm, &layer.ffn_norm,
          &layer.w_gate, &layer.w_up, &layer.w_down, &layer.post_ffn_norm, &layer.router}) {
      add(*tensor);
    }
    for (const ExpertWeights& expert : layer.experts) {
      for (const WeightTensor* tensor : {&expert.w_gate, &expert.w_up, &expert.w_down}) add(*tensor);
    }
  }
  return bytes;
}

Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& part,
                                      WeightPlacement placement, const LoadProgress& progress) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const int64_t vocab = config.vocab_size;
  const RowRange rows = part.classifier_rows;
  CHECK(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= vocab)
      << "classifier rows [" << rows.begin << ", " << rows.end << ")";
  if (part.layers.begin < 0 || part.layers.end > config.num_hidden_layers ||
      part.layers.begin >= part.layers.end) {
    return Error::InvalidArgument("rank " + std::to_string(part.rank) + ": layer range [" +
                                  std::to_string(part.layers.begin) + ", " + std::to_string(part.layers.end) +
                                  ") does not fit the model's " + std::to_string(config.num_hidden_layers) +
                                  " layers");
  }
  StageWeights weights;
  weights.part = part;
  WeightArena arena;  // its chunks live on in the tensors
  const RowRange embedding_rows = part.embedding_rows;
  CHECK(embedding_rows.begin >= 0 && embedding_rows.begin <= embedding_rows.end &&
        embedding_rows.end <= vocab)
      << "embedding rows [" << embedding_rows.begin << ", " << embedding_rows.end << ")";
  if (embedding_rows.size() > 0) {
    Result<WeightTensor> loaded = LoadSlice(checkpoint, SliceNamed(part, kEmbedTokensName),
                                            embedding_rows.size() * dim, placement, arena);
    if (!loaded) return loaded.error();
    weights.token_embedding = std::move(*loaded);
  }
  for (int64_t layer = part.layers.begin; layer < part.layers.end; ++layer) {
    Result<LayerWeights> loaded = LoadLayer(checkpoint, part, layer, placement, arena);
    if (!loaded) return loaded.error();
    weights.layers.push_back(std::move(*loaded));
    if (progress) progress(layer + 1 - part.layers.begin, part.layers.size());
  }
  if (part.has_final_norm) {
    Result<WeightTensor> loaded =
        LoadSlice(checkpoint, SliceNamed(part, kFinalNormName), dim, placement, arena);
    if (!loaded) return loaded.error();
    weights.final_norm = std::move(*loaded);
  }
  const bool rows_in_embedding = part.ClassifierRowsInEmbedding(config.tie_word_embeddings);
  CHECK(!rows_in_embedding || rows.size() == 0 ||
        (rows.begin >= embedding_rows.begin && rows.end <= embedding_rows.end))
      << "classifier rows [" << rows.begin << ", " << rows.end << ") outside the embedding rows";
  if (rows.size() > 0 && !rows_in_embedding) {
    const char* name = config.tie_word_embeddings ? kEmbedTokensName : kLmHeadName;
    Result<WeightTensor> loaded =
        LoadSlice(checkpoint, SliceNamed(part, name), rows.size() * dim, placement, arena);
    if (!loaded) return loaded.error().Prefixed("loading classifier rows: ");
    weights.classifier = std::move(*loaded);
  }
  return weights;
}

}  // namespace inferno
