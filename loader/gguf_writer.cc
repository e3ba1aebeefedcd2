#include "loader/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include <glog/logging.h>

#include "loader/atomic_file.h"
#include "loader/gguf_file_type.h"
#include "loader/gguf_format.h"
#include "loader/gguf_llama.h"
#include "model/llama_layout.h"
#include "tensor/tensor_info.h"

namespace inferno {
namespace {

constexpr char kGeneralNameKey[] = "general.name";
constexpr char kGeneralFileTypeKey[] = "general.file_type";
constexpr char kGeneralQuantizationVersionKey[] = "general.quantization_version";
constexpr uint64_t kGgmlQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

GgufValue Uint32(uint64_t value) { return {GgufValueType::kUint32, GgufValueType::kUint32, {value}}; }

}  // namespace

Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<TensorInfo>& tensors, const ReadTensorF32& read,
                      const GgufFileType& file_type, const GgufVocabulary& vocabulary,
                      const std::string& name) {
  const Architecture& family = config.family();
  if (family.gguf_name.empty() || config.qkv_bias != family.fixed_qkv_bias || config.o_proj_bias ||
      config.rope_scaling.type != RopeScaling::Type::kNone || config.sliding_window != 0) {
    return Error::InvalidArgument(
        path +
        ": GGUF holds Llama, Qwen2, Qwen3, Mixtral and Qwen3-MoE models without RoPE scaling, "
        "a sliding window or biases beyond Qwen2's (" +
        config.architecture + " here)");
  }
  if (Status s = CheckTensorsMatchConfig(tensors, config, path); !s) return s;
  if (config.num_experts > 0 &&
      (!config.norm_topk_prob || config.decoder_sparse_step != 1 || !config.mlp_only_layers.empty())) {
    return Error::InvalidArgument(path +
                                  ": llama.cpp's mixtures of experts renormalise the top-k weights and "
                                  "have experts in every layer (norm_topk_prob true, no dense layers)");
  }

  std::vector<GgufKeyValue> metadata = GgufLlamaMetadata(config);
  metadata.insert(metadata.begin() + 1,
                  {{kGeneralNameKey, {GgufValueType::kString, GgufValueType::kString, {name}}},
                   {kGeneralFileTypeKey, Uint32(LlamaFtype(file_type))}});
  if (DTypeBlockElements(file_type.matrix_type) > 1) {
    metadata.push_back({kGeneralQuantizationVersionKey, Uint32(kGgmlQuantizationVersion)});
  }
  for (GgufKeyValue& kv : GgufVocabularyMetadata(vocabulary)) metadata.push_back(std::move(kv));
  const bool has_output =
      std::any_of(tensors.begin(), tensors.end(), [](const TensorInfo& t) { return t.name == kLmHeadName; });
  // GGUF tensor i holds sources[i]: one tensor, or every expert's (stacked).
  std::vector<GgufTensorInfo> gguf_tensors;
  std::vector<std::vector<size_t>> sources;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    const std::optional<std::pair<std::string, int64_t>> expert = GgufExpertTensorName(config, t.name);
    if (expert && expert->second > 0) {  // the next expert of a stack started by expert 0
      const auto stack = std::find_if(gguf_tensors.begin(), gguf_tensors.end(),
                                      [&](const GgufTensorInfo& g) { return g.name == expert->first; });
      sources[static_cast<size_t>(stack - gguf_tensors.begin())].push_back(i);
      continue;
    }
    const std::string gguf_name = expert ? expert->first : GgufTensorName(t.name);
    const bool router = expert && expert->second < 0;  // llama.cpp keeps it f32
    const DType dtype =
        router ? DType::kF32
               : GgufTensorType(file_type, gguf_name, t.shape, config.num_hidden_layers, has_output);
    gguf_tensors.push_back({gguf_name, DTypeGgmlType(dtype), {t.shape.rbegin(), t.shape.rend()}});
    if (expert && expert->second == 0) gguf_tensors.back().ne.push_back(config.num_experts);
    sources.push_back({i});
  }

  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  if (Status s = file->Write(EncodeGgufHeader(metadata, gguf_tensors, kGgufDefaultAlignment)); !s) return s;
  // One tensor at a time: its f32 values, their RoPE permutation, its bytes.
  std::vector<float> values, permuted;
  std::vector<std::byte> stored;
  for (size_t g = 0; g < gguf_tensors.size(); ++g) {
    const uint64_t bytes = GgufTensorBytes(gguf_tensors[g]);
    stored.assign(GgufPadded(bytes, kGgufDefaultAlignment), std::byte{0});
    const uint64_t slab = bytes / sources[g].size();
    for (size_t k = 0; k < sources[g].size(); ++k) {
      const size_t i = sources[g][k];
      const TensorInfo& t = tensors[i];
      values.resize(static_cast<size_t>(t.num_elements()));
      if (Status s = read(i, values); !s) return s;
      const std::string_view suffix = LayerTensorSuffix(t.name);
      const int64_t heads = !family.gguf_interleaved_rope ? 0
                            : suffix == kQProjSuffix      ? config.num_attention_heads
                            : suffix == kKProjSuffix      ? config.num_key_value_heads
                                                          : 0;
      std::span<const float> source = values;
      if (heads > 0) {
        const int64_t rows = t.shape[0], columns = t.shape[1], head_dim = rows / heads;
        permuted.resize(values.size());
        for (int64_t row = 0; row < rows; ++row) {
          std::memcpy(permuted.data() + InterleavedRopeRow(row, head_dim) * columns,
                      values.data() + row * columns, static_cast<size_t>(columns) * sizeof(float));
        }
        source = permuted;
      }
      if (Status s = ConvertFromF32(GgmlTypeDType(gguf_tensors[g].type), source, stored.data() + k * slab);
          !s) {
        return s.error().Prefixed(path + ": tensor '" + t.name + "': ");
      }
    }
    if (Status s = file->Write(stored); !s) return s;
  }
  return file->Commit();
}

Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<NamedTensorF32>& tensors, const GgufFileType& file_type,
                      const GgufVocabulary& vocabulary, const std::string& name) {
  std::vector<TensorInfo> infos;
  for (const NamedTensorF32& t : tensors) {
    infos.push_back({t.name, DType::kF32, t.shape});
    if (static_cast<int64_t>(t.data.size()) != infos.back().num_elements()) {
      return Error::InvalidArgument(path + ": tensor '" + t.name + "': shape " + ShapeToString(t.shape) +
                                    " needs " + std::to_string(infos.back().num_elements()) +
                                    " floats, data has " + std::to_string(t.data.size()));
    }
  }
  const auto copy = [&tensors](size_t index, std::span<float> values) -> Status {
    std::copy(tensors[index].data.begin(), tensors[index].data.end(), values.begin());
    return {};
  };
  return WriteGgufLlama(path, config, infos, copy, file_type, vocabulary, name);
}

}  // namespace inferno
