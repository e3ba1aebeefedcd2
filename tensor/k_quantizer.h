// The quantizers that search for their scales: the super-block formats
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS (tensor/k_quant_blocks.h) and the
// non-linear IQ4_NL (tensor/quant_blocks.h), which shares IQ4_XS's search.
//
// Each writes exactly the bytes llama.cpp writes into a model file for the
// same f32 input without an importance matrix (llama_model_quantize, through
// ggml_quantize_chunk): for the K-quants that is ggml's
// quantize_row_<type>_ref; for IQ4_NL and IQ4_XS it is quantize_iq4_nl and
// quantize_iq4_xs with no weights, which try 15 scales per block of 32
// (ggml's quantize_row_iq4_nl_ref tries one and writes other bytes). They
// compute ggml's f32 expressions in ggml's order (the library is compiled
// without FMA contraction), so equal bytes are the contract, checked against
// libggml-base by tests/llama_cpp_quant_test.
//
// In outline, per sub-block (16 or 32 elements) a scale (and for Q2_K,
// Q4_K, Q5_K a min) is fitted by a small search (candidate scales on a
// grid; Q3_K: single codes moved) minimising a weighted squared (Q2_K:
// absolute) error; the sub-block scales and mins are then quantized against
// the super-block's largest ones (6 bits; 4 for Q2_K; 8 signed for Q6_K)
// and every code recomputed with the scales as stored.
// An all-zero super-block of Q2_K ... Q6_K becomes all-zero bytes; an
// all-zero IQ4_NL or IQ4_XS block stores d = ±0 and the index of the grid
// value nearest 0 (8), as ggml does.
//
// Thread-safety: pure functions.
#pragma once

#include <span>

#include "tensor/k_quant_blocks.h"
#include "tensor/quant_blocks.h"

namespace inferno {

// Quantizes `x` (x.size() == 256 * out.size(); 32 * out.size() for
// IQ4_NL) into `out`. Preconditions (CHECKed): the sizes match; x holds
// finite values.
void QuantizeRowQ2_K(std::span<const float> x, std::span<BlockQ2_K> out);
void QuantizeRowQ3_K(std::span<const float> x, std::span<BlockQ3_K> out);
void QuantizeRowQ4_K(std::span<const float> x, std::span<BlockQ4_K> out);
void QuantizeRowQ5_K(std::span<const float> x, std::span<BlockQ5_K> out);
void QuantizeRowQ6_K(std::span<const float> x, std::span<BlockQ6_K> out);
void QuantizeRowIQ4_XS(std::span<const float> x, std::span<BlockIQ4_XS> out);
void QuantizeRowIQ4_NL(std::span<const float> x, std::span<BlockIQ4_NL> out);

}  // namespace inferno
