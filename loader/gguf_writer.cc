#include "loader/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <map>
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

// A tensor of the file: one of the given tensors, or (Phi-3) a fused one
// whose rows are those of several, in order.
struct StoredTensor {
  TensorInfo info;
  std::vector<size_t> parts;  // indexes into the given tensors
};

// `tensors` as the file stores them: each FusedTensor where its first part
// was.
std::vector<StoredTensor> StoredTensors(const ModelConfig& config, const std::vector<TensorInfo>& tensors) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index[tensors[i].name] = i;
  std::map<std::string, const FusedTensor*> fused_by_part;
  std::vector<FusedTensor> fused;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (FusedTensor& f : FusedLayerTensors(config, layer)) fused.push_back(std::move(f));
  }
  for (const FusedTensor& f : fused) {
    for (const TensorSpec& part : f.parts) fused_by_part[part.name] = &f;
  }
  std::vector<StoredTensor> stored;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto whole = fused_by_part.find(tensors[i].name);
    if (whole == fused_by_part.end()) {
      stored.push_back({tensors[i], {i}});
    } else if (whole->second->parts.front().name == tensors[i].name) {
      StoredTensor t{{whole->second->stored.name, tensors[i].dtype, whole->second->stored.shape}, {}};
      for (const TensorSpec& part : whole->second->parts) t.parts.push_back(index.at(part.name));
      stored.push_back(std::move(t));
    }
  }
  return stored;
}

// Fails unless llama.cpp reads the config's sliding window and Gemma scale
// as inferno computes them: Phi-3 sliding on every layer, Gemma on all but
// each n-th (attention.sliding_window_pattern), Gemma's
// query_pre_attn_scalar the one llama.cpp derives, no window elsewhere.
Status CheckWindowExpressible(const ModelConfig& config, const std::string& path) {
  const Architecture& family = config.family();
  const auto fail = [&](const std::string& what) {
    return Error::InvalidArgument(path + ": GGUF cannot hold this " + config.architecture +
                                  " model: " + what);
  };
  if (family.gemma_layout &&
      config.query_pre_attn_scalar != static_cast<float>(GgufGemmaQueryScalar(config))) {
    return fail("llama.cpp derives query_pre_attn_scalar " + std::to_string(GgufGemmaQueryScalar(config)) +
                ", the config has " + std::to_string(config.query_pre_attn_scalar));
  }
  if (config.sliding_window == 0) return {};
  if (!family.gemma_layout && !family.fused_projections) {
    return fail("llama.cpp reads no sliding window for " + std::string(family.gguf_name));
  }
  const int64_t pattern = GgufSlidingPattern(config);
  if (pattern < 0 || (!family.gemma_layout && pattern != 0)) {
    return fail("its sliding layers are not every layer but each n-th (a pattern llama.cpp can express)");
  }
  return {};
}

}  // namespace

Status WriteGgufLlama(const std::string& path, const ModelConfig& config,
                      const std::vector<TensorInfo>& tensors, const ReadTensorF32& read,
                      const GgufFileType& file_type, const GgufVocabulary& vocabulary,
                      const std::string& name) {
  const Architecture& family = config.family();
  const bool longrope = config.rope_scaling.type == RopeScaling::Type::kLongRope;
  if (family.gguf_name.empty() || config.qkv_bias != family.fixed_qkv_bias || config.o_proj_bias ||
      (config.rope_scaling.type != RopeScaling::Type::kNone && !(longrope && family.fused_projections))) {
    return Error::InvalidArgument(path +
                                  ": GGUF holds Llama, Qwen2, Qwen3, Gemma 3, Phi-3, Mixtral and Qwen3-MoE "
                                  "models without RoPE scaling (but Phi-3's longrope) or biases beyond "
                                  "Qwen2's (" +
                                  config.architecture + " here)");
  }
  if (Status s = CheckWindowExpressible(config, path); !s) return s;
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
  // GGUF tensor g holds the converted bytes of parts[g], back to back: one
  // tensor, Phi-3's fused rows, or every expert's matrix of a layer
  // (stacked); or, with no parts, the f32 values literal[g] (Phi-3's
  // longrope factors, first, as llama.cpp's converter writes them).
  std::vector<GgufTensorInfo> gguf_tensors;
  std::vector<std::vector<size_t>> parts;
  std::vector<const std::vector<float>*> literal;
  if (longrope) {
    const std::vector<float>* factors[] = {&config.rope_scaling.long_factor,
                                           &config.rope_scaling.short_factor};
    for (size_t i = 0; i < std::size(factors); ++i) {
      gguf_tensors.push_back({std::string(kGgufRopeFactorNames[i]),
                              DTypeGgmlType(DType::kF32),
                              {static_cast<int64_t>(factors[i]->size())}});
      parts.emplace_back();
      literal.push_back(factors[i]);
    }
  }
  for (const StoredTensor& t : StoredTensors(config, tensors)) {
    const std::optional<std::pair<std::string, int64_t>> expert = GgufExpertTensorName(config, t.info.name);
    if (expert && expert->second > 0) {  // the next expert of a stack started by expert 0
      const auto stack = std::find_if(gguf_tensors.begin(), gguf_tensors.end(),
                                      [&](const GgufTensorInfo& g) { return g.name == expert->first; });
      CHECK(stack != gguf_tensors.end()) << t.info.name;
      std::vector<size_t>& stacked = parts[static_cast<size_t>(stack - gguf_tensors.begin())];
      stacked.insert(stacked.end(), t.parts.begin(), t.parts.end());
      continue;
    }
    const std::string gguf_name = expert ? expert->first : GgufTensorName(t.info.name, config);
    const bool router = expert && expert->second < 0;  // llama.cpp keeps it f32
    const DType dtype = router ? DType::kF32
                               : GgufTensorType(file_type, gguf_name, t.info.shape, config.num_hidden_layers,
                                                config.num_experts, has_output);
    gguf_tensors.push_back({gguf_name, DTypeGgmlType(dtype), {t.info.shape.rbegin(), t.info.shape.rend()}});
    if (expert && expert->second == 0) gguf_tensors.back().ne.push_back(config.num_experts);
    parts.push_back(t.parts);
    literal.push_back(nullptr);
  }

  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  if (Status s = file->Write(EncodeGgufHeader(metadata, gguf_tensors, kGgufDefaultAlignment)); !s) return s;
  // One GGUF tensor at a time; of each part, its f32 values, Gemma's norm
  // offset, the RoPE permutation, its bytes.
  std::vector<float> values, permuted;
  std::vector<std::byte> stored;
  for (size_t g = 0; g < gguf_tensors.size(); ++g) {
    const DType dtype = GgmlTypeDType(gguf_tensors[g].type);
    stored.assign(GgufPadded(GgufTensorBytes(gguf_tensors[g]), kGgufDefaultAlignment), std::byte{0});
    if (literal[g] != nullptr)
      std::memcpy(stored.data(), literal[g]->data(), literal[g]->size() * sizeof(float));
    size_t offset = 0;
    for (const size_t i : parts[g]) {
      const TensorInfo& t = tensors[i];
      values.resize(static_cast<size_t>(t.num_elements()));
      if (Status s = read(i, values); !s) return s;
      // llama.cpp's Gemma files store each norm as 1 + the Hugging Face weight.
      if (config.norm_weight_offset != 0.0f && t.name.ends_with("norm.weight")) {
        for (float& v : values) v += config.norm_weight_offset;
      }
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
      if (Status s = ConvertFromF32(dtype, source, stored.data() + offset); !s) {
        return s.error().Prefixed(path + ": tensor '" + t.name + "': ");
      }
      offset += static_cast<size_t>(DTypeBytes(dtype, t.num_elements()).value());
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
