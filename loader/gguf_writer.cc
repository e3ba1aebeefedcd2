#include "loader/gguf_writer.h"

#include <cstring>

#include "loader/atomic_file.h"
#include "loader/gguf_format.h"
#include "loader/gguf_llama.h"
#include "loader/llama_layout.h"
#include "loader/tensor_info.h"

namespace inferno {
namespace {

constexpr char kGeneralNameKey[] = "general.name";
constexpr char kGeneralFileTypeKey[] = "general.file_type";
constexpr int64_t kLlamaFileTypeAllF32 = 0;  // llama.cpp's LLAMA_FTYPE_ALL_F32

}  // namespace

Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<NamedTensorF32>& tensors, const GgufVocabulary& vocabulary,
                      const std::string& name) {
  if (config.architecture != "LlamaForCausalLM" || config.qkv_bias || config.o_proj_bias ||
      config.rope_scaling.type != RopeScaling::Type::kNone || config.sliding_window != 0) {
    return Error::InvalidArgument(path + ": GGUF llama holds Llama models without biases, RoPE scaling or a "
                                         "sliding window");
  }
  std::vector<TensorInfo> infos;
  for (const NamedTensorF32& t : tensors) {
    infos.push_back({t.name, DType::kF32, t.shape});
    if (static_cast<int64_t>(t.data.size()) != infos.back().num_elements()) {
      return Error::InvalidArgument(path + ": tensor '" + t.name + "': shape " + ShapeToString(t.shape) +
                                    " needs " + std::to_string(infos.back().num_elements()) + " floats, data has " +
                                    std::to_string(t.data.size()));
    }
  }
  if (Status s = CheckTensorsMatchConfig(infos, config, path); !s) return s;

  std::vector<GgufKeyValue> metadata = GgufLlamaMetadata(config);
  metadata.insert(metadata.begin() + 1,
                  {{kGeneralNameKey, {GgufValueType::kString, GgufValueType::kString, {name}}},
                   {kGeneralFileTypeKey,
                    {GgufValueType::kUint32, GgufValueType::kUint32, {static_cast<uint64_t>(kLlamaFileTypeAllF32)}}}});
  for (GgufKeyValue& kv : GgufVocabularyMetadata(vocabulary)) metadata.push_back(std::move(kv));
  std::vector<GgufTensorInfo> gguf_tensors;
  for (const NamedTensorF32& t : tensors) {
    gguf_tensors.push_back({GgufTensorName(t.name), GgmlType::kF32, {t.shape.rbegin(), t.shape.rend()}});
  }

  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  if (Status s = file->Write(EncodeGgufHeader(metadata, gguf_tensors, kGgufDefaultAlignment)); !s) return s;
  std::vector<float> stored;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensorF32& t = tensors[i];
    const std::string_view suffix = LayerTensorSuffix(t.name);
    const int64_t heads = suffix == "self_attn.q_proj.weight"   ? config.num_attention_heads
                          : suffix == "self_attn.k_proj.weight" ? config.num_key_value_heads
                                                                : 0;
    std::span<const float> values = t.data;
    if (heads > 0) {
      const int64_t rows = t.shape[0], columns = t.shape[1], head_dim = rows / heads;
      stored.resize(t.data.size());
      for (int64_t row = 0; row < rows; ++row) {
        std::memcpy(stored.data() + InterleavedRopeRow(row, head_dim) * columns, t.data.data() + row * columns,
                    static_cast<size_t>(columns) * sizeof(float));
      }
      values = stored;
    }
    if (Status s = file->Write(std::as_bytes(values)); !s) return s;
    const uint64_t bytes = GgufTensorBytes(gguf_tensors[i]);
    if (Status s = file->Write(std::string(GgufPadded(bytes, kGgufDefaultAlignment) - bytes, '\0')); !s) return s;
  }
  return file->Commit();
}

}  // namespace inferno
