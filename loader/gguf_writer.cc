#include "loader/gguf_writer.h"

#include <cstring>

#include <glog/logging.h>

#include "loader/atomic_file.h"
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

// llama.cpp's llama_ftype of a file whose matrices are `dtype`.
uint64_t LlamaFileType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 0;  // LLAMA_FTYPE_ALL_F32
    case DType::kF16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case DType::kQ4_0:
      return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case DType::kQ8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case DType::kBF16:
      return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    case DType::kQ4_1:
      return 3;  // LLAMA_FTYPE_MOSTLY_Q4_1
    case DType::kQ5_0:
      return 8;  // LLAMA_FTYPE_MOSTLY_Q5_0
    case DType::kQ5_1:
      return 9;  // LLAMA_FTYPE_MOSTLY_Q5_1
    case DType::kQ2_K:
      return 10;  // LLAMA_FTYPE_MOSTLY_Q2_K
    case DType::kQ3_K:
      return 11;  // LLAMA_FTYPE_MOSTLY_Q3_K_S
    case DType::kQ4_K:
      return 14;  // LLAMA_FTYPE_MOSTLY_Q4_K_S
    case DType::kQ5_K:
      return 16;  // LLAMA_FTYPE_MOSTLY_Q5_K_S
    case DType::kQ6_K:
      return 18;  // LLAMA_FTYPE_MOSTLY_Q6_K
    case DType::kIQ4_NL:
      return 25;  // LLAMA_FTYPE_MOSTLY_IQ4_NL
    case DType::kIQ4_XS:
      return 30;  // LLAMA_FTYPE_MOSTLY_IQ4_XS
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(dtype);
}

GgufValue Uint32(uint64_t value) { return {GgufValueType::kUint32, GgufValueType::kUint32, {value}}; }

}  // namespace

Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<NamedTensorF32>& tensors, DType matrix_type,
                      const GgufVocabulary& vocabulary, const std::string& name) {
  if (config.architecture != "LlamaForCausalLM" || config.qkv_bias || config.o_proj_bias ||
      config.rope_scaling.type != RopeScaling::Type::kNone || config.sliding_window != 0) {
    return Error::InvalidArgument(path +
                                  ": GGUF llama holds Llama models without biases, RoPE scaling or a "
                                  "sliding window");
  }
  std::vector<TensorInfo> infos;
  for (const NamedTensorF32& t : tensors) {
    infos.push_back({t.name, DType::kF32, t.shape});
    if (static_cast<int64_t>(t.data.size()) != infos.back().num_elements()) {
      return Error::InvalidArgument(path + ": tensor '" + t.name + "': shape " + ShapeToString(t.shape) +
                                    " needs " + std::to_string(infos.back().num_elements()) +
                                    " floats, data has " + std::to_string(t.data.size()));
    }
  }
  if (Status s = CheckTensorsMatchConfig(infos, config, path); !s) return s;

  std::vector<GgufKeyValue> metadata = GgufLlamaMetadata(config);
  metadata.insert(metadata.begin() + 1,
                  {{kGeneralNameKey, {GgufValueType::kString, GgufValueType::kString, {name}}},
                   {kGeneralFileTypeKey, Uint32(LlamaFileType(matrix_type))}});
  if (DTypeBlockElements(matrix_type) > 1) {
    metadata.push_back({kGeneralQuantizationVersionKey, Uint32(kGgmlQuantizationVersion)});
  }
  for (GgufKeyValue& kv : GgufVocabularyMetadata(vocabulary)) metadata.push_back(std::move(kv));
  std::vector<GgufTensorInfo> gguf_tensors;
  for (const NamedTensorF32& t : tensors) {
    const DType dtype = t.shape.size() == 2 ? matrix_type : DType::kF32;
    if (t.shape.size() == 2 && t.shape[1] % DTypeBlockElements(dtype) != 0) {
      return Error::InvalidArgument(
          path + ": tensor '" + t.name + "': rows of " + std::to_string(t.shape[1]) + " are not whole " +
          std::string(DTypeName(dtype)) + " blocks of " + std::to_string(DTypeBlockElements(dtype)));
    }
    gguf_tensors.push_back(
        {GgufTensorName(t.name), DTypeGgmlType(dtype), {t.shape.rbegin(), t.shape.rend()}});
  }

  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  if (Status s = file->Write(EncodeGgufHeader(metadata, gguf_tensors, kGgufDefaultAlignment)); !s) return s;
  std::vector<float> permuted;
  std::vector<std::byte> stored;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensorF32& t = tensors[i];
    const std::string_view suffix = LayerTensorSuffix(t.name);
    const int64_t heads = suffix == kQProjSuffix   ? config.num_attention_heads
                          : suffix == kKProjSuffix ? config.num_key_value_heads
                                                   : 0;
    std::span<const float> values = t.data;
    if (heads > 0) {
      const int64_t rows = t.shape[0], columns = t.shape[1], head_dim = rows / heads;
      permuted.resize(t.data.size());
      for (int64_t row = 0; row < rows; ++row) {
        std::memcpy(permuted.data() + InterleavedRopeRow(row, head_dim) * columns,
                    t.data.data() + row * columns, static_cast<size_t>(columns) * sizeof(float));
      }
      values = permuted;
    }
    const uint64_t bytes = GgufTensorBytes(gguf_tensors[i]);
    stored.assign(GgufPadded(bytes, kGgufDefaultAlignment), std::byte{0});
    if (Status s = ConvertFromF32(GgmlTypeDType(gguf_tensors[i].type), values, stored.data()); !s) {
      return s.error().Prefixed(path + ": tensor '" + t.name + "': ");
    }
    if (Status s = file->Write(stored); !s) return s;
  }
  return file->Commit();
}

}  // namespace inferno
