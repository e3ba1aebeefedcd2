#include "loader/gguf_file_type.h"

#include <algorithm>
#include <cctype>

#include <glog/logging.h>

namespace inferno {
namespace {

constexpr std::string_view kMixNames[] = {"", "q4_k_m", "q5_k_m"};

std::string Lower(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower;
}

// The layer of "blk.<n>.<...>", or nullopt.
std::optional<int64_t> LayerOf(std::string_view gguf_name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!gguf_name.starts_with(kPrefix)) return std::nullopt;
  int64_t layer = 0;
  size_t i = kPrefix.size();
  if (i >= gguf_name.size() || !std::isdigit(static_cast<unsigned char>(gguf_name[i]))) return std::nullopt;
  for (; i < gguf_name.size() && std::isdigit(static_cast<unsigned char>(gguf_name[i])); ++i) {
    layer = layer * 10 + (gguf_name[i] - '0');
  }
  return layer;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third layer between get more bits.
bool UseMoreBits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// llama.cpp's tensor_type_fallback for rows of `columns` elements.
DType FallBack(DType dtype, int64_t columns) {
  if (columns % DTypeBlockElements(dtype) == 0) return dtype;
  DType fallback = dtype;
  switch (dtype) {
    case DType::kQ4_K:
      fallback = DType::kQ5_0;
      break;
    case DType::kQ5_K:
      fallback = DType::kQ5_1;
      break;
    case DType::kQ6_K:
      fallback = DType::kQ8_0;
      break;
    case DType::kQ2_K:
    case DType::kQ3_K:
      fallback = DType::kQ4_0;
      break;
    case DType::kIQ4_XS:
      fallback = DType::kIQ4_NL;
      break;
    default:
      break;
  }
  return columns % DTypeBlockElements(fallback) == 0 ? fallback : DType::kF16;
}

}  // namespace

std::optional<GgufFileType> ParseGgufFileType(std::string_view name) {
  const std::string lower = Lower(name);
  for (int mix = 1; mix < static_cast<int>(std::size(kMixNames)); ++mix) {
    if (lower == kMixNames[mix]) {
      return GgufFileType{mix == 1 ? DType::kQ4_K : DType::kQ5_K, static_cast<GgufFileType::Mix>(mix)};
    }
  }
  for (DType dtype : kAllDTypes) {
    if (lower == Lower(DTypeName(dtype))) return GgufFileType{dtype, GgufFileType::Mix::kNone};
  }
  return std::nullopt;
}

std::string GgufFileTypeName(const GgufFileType& file_type) {
  if (file_type.mix != GgufFileType::Mix::kNone)
    return std::string(kMixNames[static_cast<int>(file_type.mix)]);
  return Lower(DTypeName(file_type.matrix_type));
}

std::string GgufFileTypeNames() {
  std::string names;
  for (DType dtype : kAllDTypes) names += (names.empty() ? "" : ", ") + Lower(DTypeName(dtype));
  for (size_t mix = 1; mix < std::size(kMixNames); ++mix) names += ", " + std::string(kMixNames[mix]);
  return names;
}

uint32_t LlamaFtype(const GgufFileType& file_type) {
  switch (file_type.mix) {
    case GgufFileType::Mix::kQ4_K_M:
      return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    case GgufFileType::Mix::kQ5_K_M:
      return 17;  // LLAMA_FTYPE_MOSTLY_Q5_K_M
    case GgufFileType::Mix::kNone:
      break;
  }
  switch (file_type.matrix_type) {
    case DType::kF32:
      return 0;  // LLAMA_FTYPE_ALL_F32
    case DType::kF16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case DType::kQ4_0:
      return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case DType::kQ4_1:
      return 3;  // LLAMA_FTYPE_MOSTLY_Q4_1
    case DType::kQ8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
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
    case DType::kBF16:
      return 32;  // LLAMA_FTYPE_MOSTLY_BF16
  }
  LOG(FATAL) << "unknown DType " << static_cast<int>(file_type.matrix_type);
}

DType GgufTensorType(const GgufFileType& file_type, std::string_view gguf_name,
                     std::span<const int64_t> shape, int64_t layers, int64_t experts, bool has_output) {
  if (shape.size() < 2) return DType::kF32;
  const DType base = file_type.matrix_type;
  if (DTypeBlockElements(base) == 1) return base;
  const int64_t columns = shape.back();
  DType dtype = base;
  if (file_type.mix != GgufFileType::Mix::kNone) {
    const bool is_output = gguf_name == "output.weight" || (!has_output && gguf_name == "token_embd.weight");
    const std::optional<int64_t> layer = LayerOf(gguf_name);
    const bool more_bits = layer && UseMoreBits(*layer, layers);
    const bool attn_v = gguf_name.ends_with(".attn_v.weight");
    // llama.cpp's 8-expert rule (Mixtral-shaped mixtures): attention's k and
    // v in Q8_0, its output in Q5_K.
    const bool eight_experts = experts == 8;
    if (is_output) {
      dtype = columns % DTypeBlockElements(base) != 0 ? DType::kQ8_0 : DType::kQ6_K;
    } else if (eight_experts && (attn_v || gguf_name.ends_with(".attn_k.weight"))) {
      dtype = DType::kQ8_0;
    } else if (eight_experts && gguf_name.ends_with(".attn_output.weight")) {
      dtype = DType::kQ5_K;
    } else if (more_bits && (attn_v || gguf_name.ends_with(".ffn_down.weight") ||
                             gguf_name.ends_with(".ffn_down_exps.weight"))) {
      dtype = DType::kQ6_K;
    }
  }
  return FallBack(dtype, columns);
}

}  // namespace inferno
