#include "engine/stage_weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <glog/logging.h>

#include "loader/llama_layout.h"

namespace inferno {
namespace {

// Sizes `out` to `count` floats at once, asking for transparent huge pages
// first: a weight matrix is then faulted in 2 MiB pages rather than 4 KiB
// ones, which was most of the loading time (the zeroing and the copy touch
// every page; on this machine's VM a 4 KiB fault costs more than its copy).
void AllocateWeights(WeightBuffer& out, size_t count) {
  out.reserve(count);
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(out.data()) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(out.data() + count)) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: may fail
  out.resize(count);
}

// Reads `slice` of its tensor (count elements) into out[offset, offset +
// count), growing `out` as needed (callers size it first when they read
// several tensors into it). The checkpoint holds the whole tensor, or — a
// rank's shard — just the slice.
Status ReadSliceInto(const Checkpoint& checkpoint, const TensorSlice& slice, WeightBuffer& out,
                     int64_t offset, int64_t count) {
  if (offset + count > static_cast<int64_t>(out.size())) AllocateWeights(out, offset + count);
  const std::span<float> into = std::span<float>(out).subspan(offset, count);
  Result<TensorInfo> info = checkpoint.Find(slice.name);
  if (!info) return info.error().Prefixed("loading stage weights: ");
  Status status;
  if (info->num_elements() == count) {
    status = checkpoint.ReadF32(slice.name, into);
  } else if (slice.split_dim == 0) {
    status = checkpoint.ReadRowsF32(slice.name, slice.begin, slice.end, into);
  } else if (slice.split_dim == 1 && info->shape.size() == 2 &&
             info->shape[0] * (slice.end - slice.begin) == count) {
    // Columns [begin, end) of a (rows, cols) matrix: read whole, keep those.
    const int64_t rows = info->shape[0];
    const int64_t cols = info->shape[1];
    const int64_t width = slice.end - slice.begin;
    std::vector<float> whole(static_cast<size_t>(rows * cols));
    status = checkpoint.ReadF32(slice.name, whole);
    for (int64_t r = 0; status && r < rows; ++r) {
      std::copy_n(whole.data() + r * cols + slice.begin, width, into.data() + r * width);
    }
  } else {
    return Error::Corruption("loading stage weights: tensor '" + slice.name + "' has shape " +
                             ShapeToString(info->shape) + ", which holds neither the plan's slice of " +
                             std::to_string(count) + " elements nor the whole tensor");
  }
  if (!status) return status.error().Prefixed("loading stage weights: ");
  return {};
}

// The plan's slice of `name` for `part`. Precondition: the plan lists it.
const TensorSlice& SliceNamed(const RankShard& part, const std::string& name) {
  for (const TensorSlice& slice : part.tensors) {
    if (slice.name == name) return slice;
  }
  LOG(FATAL) << "rank " << part.rank << "'s plan has no tensor " << name;
}

std::string LayerTensor(int64_t layer, const char* suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

Result<LayerWeights> LoadLayer(const Checkpoint& checkpoint, const RankShard& part, int64_t layer) {
  const ModelConfig& config = checkpoint.config();
  const int64_t dim = config.hidden_size;
  const int64_t head_dim = config.head_dim();
  const int64_t q_dim = part.heads.size() * head_dim;
  const int64_t kv_dim = part.kv_heads.size() * head_dim;
  const int64_t hidden = part.hidden_units.size();
  LayerWeights weights;
  using Parts = std::vector<std::pair<const char*, int64_t>>;
  std::vector<std::pair<WeightBuffer*, Parts>> plan = {
      {&weights.attention_norm, {{"input_layernorm.weight", dim}}},
      {&weights.wqkv,
       {{"self_attn.q_proj.weight", q_dim * dim},
        {"self_attn.k_proj.weight", kv_dim * dim},
        {"self_attn.v_proj.weight", kv_dim * dim}}},
      {&weights.wo, {{"self_attn.o_proj.weight", dim * q_dim}}},
      {&weights.ffn_norm, {{"post_attention_layernorm.weight", dim}}},
      {&weights.w_gate_up, {{"mlp.gate_proj.weight", hidden * dim}, {"mlp.up_proj.weight", hidden * dim}}},
      {&weights.w_down, {{"mlp.down_proj.weight", dim * hidden}}},
  };
  if (config.qkv_bias) {
    plan.push_back({&weights.bqkv,
                    {{"self_attn.q_proj.bias", q_dim},
                     {"self_attn.k_proj.bias", kv_dim},
                     {"self_attn.v_proj.bias", kv_dim}}});
  }
  if (config.o_proj_bias) plan.push_back({&weights.bo, {{"self_attn.o_proj.bias", dim}}});
  for (const auto& [out, parts] : plan) {
    int64_t total = 0;
    for (const auto& [suffix, count] : parts) total += count;
    AllocateWeights(*out, total);
    int64_t offset = 0;
    for (const auto& [suffix, count] : parts) {
      const TensorSlice& slice = SliceNamed(part, LayerTensor(layer, suffix));
      if (Status s = ReadSliceInto(checkpoint, slice, *out, offset, count); !s) return s.error();
      offset += count;
    }
  }
  std::span<float> wqkv(weights.wqkv);
  HuggingFaceRopeRowsToAdjacent(wqkv.first(q_dim * dim), head_dim, dim);
  HuggingFaceRopeRowsToAdjacent(wqkv.subspan(q_dim * dim, kv_dim * dim), head_dim, dim);
  if (config.qkv_bias) {
    std::span<float> bqkv(weights.bqkv);
    HuggingFaceRopeRowsToAdjacent(bqkv.first(q_dim), head_dim, 1);
    HuggingFaceRopeRowsToAdjacent(bqkv.subspan(q_dim, kv_dim), head_dim, 1);
  }
  return weights;
}

}  // namespace

int64_t StageWeights::ByteSize() const {
  size_t floats = token_embedding.size() + final_norm.size() + classifier.size();
  for (const LayerWeights& layer : layers) {
    for (const WeightBuffer* buffer : {&layer.attention_norm, &layer.wqkv, &layer.bqkv, &layer.wo, &layer.bo,
                                       &layer.ffn_norm, &layer.w_gate_up, &layer.w_down}) {
      floats += buffer->size();
    }
  }
  return static_cast<int64_t>(floats * sizeof(float));
}

void HuggingFaceRopeRowsToAdjacent(std::span<float> rows, int64_t head_dim, int64_t cols) {
  const int64_t head_size = head_dim * cols;
  CHECK_EQ(static_cast<int64_t>(rows.size()) % head_size, 0) << "rows do not hold whole heads";
  std::vector<float> head(head_size);
  for (size_t start = 0; start < rows.size(); start += head_size) {
    float* source = rows.data() + start;
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      std::copy_n(source + i * cols, cols, head.data() + (2 * i) * cols);
      std::copy_n(source + (i + head_dim / 2) * cols, cols, head.data() + (2 * i + 1) * cols);
    }
    std::copy(head.begin(), head.end(), source);
  }
}

Result<StageWeights> LoadStageWeights(const Checkpoint& checkpoint, const RankShard& part,
                                      const LoadProgress& progress) {
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
  if (part.has_embedding) {
    if (Status s = ReadSliceInto(checkpoint, SliceNamed(part, kEmbedTokensName), weights.token_embedding, 0,
                                 vocab * dim);
        !s) {
      return s.error();
    }
  }
  for (int64_t layer = part.layers.begin; layer < part.layers.end; ++layer) {
    Result<LayerWeights> loaded = LoadLayer(checkpoint, part, layer);
    if (!loaded) return loaded.error();
    weights.layers.push_back(std::move(*loaded));
    if (progress) progress(layer + 1 - part.layers.begin, part.layers.size());
  }
  if (part.has_final_norm) {
    if (Status s = ReadSliceInto(checkpoint, SliceNamed(part, kFinalNormName), weights.final_norm, 0, dim);
        !s)
      return s.error();
  }
  const bool rows_in_embedding = config.tie_word_embeddings && part.has_embedding;
  if (rows.size() > 0 && !rows_in_embedding) {
    const char* name = config.tie_word_embeddings ? kEmbedTokensName : kLmHeadName;
    if (Status s =
            ReadSliceInto(checkpoint, SliceNamed(part, name), weights.classifier, 0, rows.size() * dim);
        !s) {
      return s.error().Prefixed("loading classifier rows: ");
    }
  }
  return weights;
}

}  // namespace inferno
