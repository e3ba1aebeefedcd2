// GgufFileType: which type each tensor of a Llama GGUF file is stored in,
// chosen the way llama.cpp's llama_model_quantize chooses it
// (src/llama-quant.cpp, llama_tensor_get_type; no importance matrix, no
// overrides):
//
//   f32, f16, bf16   every matrix in that type.
//   q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k,
//   iq4_xs           every matrix in that type (as `llama-quantize --pure`;
//                    for q8_0 and q6_k this is also what llama-quantize's
//                    Q8_0 and Q6_K give).
//   q4_k_m, q5_k_m   llama.cpp's mixes: matrices in Q4_K (Q5_K), but
//                    output.weight (token_embd.weight when the embeddings
//                    are tied) in Q6_K — Q8_0 if its rows are not whole
//                    super-blocks — and attn_v and ffn_down in Q6_K in the
//                    layers llama.cpp gives more bits: the first and last
//                    eighth and every third between (use_more_bits).
//
// Then, in every quantized file type, a matrix whose rows are not whole
// blocks of its type falls back as llama.cpp's tensor_type_fallback does:
// Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and Q3_K to Q4_0, IQ4_XS
// to IQ4_NL, and to F16 when even that does not fit (rows not a multiple of
// 32). 1-D tensors (norms) stay F32.
//
// Thread-safety: a plain value type and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tensor/dtype.h"

namespace inferno {

struct GgufFileType {
  enum class Mix { kNone, kQ4_K_M, kQ5_K_M };
  DType matrix_type = DType::kF32;  // the type of matrices the mix does not single out
  Mix mix = Mix::kNone;

  bool operator==(const GgufFileType&) const = default;
};

// Parses a name above ("q4_k_m", "Q8_0", ...; case-insensitive); nullopt
// for any other.
std::optional<GgufFileType> ParseGgufFileType(std::string_view name);
// The lower-case name ("q4_k_m", "f32").
std::string GgufFileTypeName(const GgufFileType& file_type);
// "f32, f16, bf16, q8_0, ..., q4_k_m, q5_k_m": every name, for --help and
// errors.
std::string GgufFileTypeNames();
// llama.cpp's llama_ftype for general.file_type (15 for Q4_K_M, 7 for Q8_0,
// ...).
uint32_t LlamaFtype(const GgufFileType& file_type);

// The type of the tensor named `gguf_name` ("blk.3.attn_v.weight",
// "output.weight") of shape `shape` (rows, columns; 1-D: {n}) in a model of
// `layers` layers and `experts` experts per sparse layer (0: dense; an expert
// stack "blk.3.ffn_down_exps.weight" is typed by one expert's shape);
// `has_output` says whether the file has an output.weight (without one,
// token_embd.weight is the output too).
DType GgufTensorType(const GgufFileType& file_type, std::string_view gguf_name,
                     std::span<const int64_t> shape, int64_t layers, int64_t experts, bool has_output);

}  // namespace inferno
