// Element-wise reduction kernels used by the collectives: one tight loop per
// ReduceKind and element type (float32, int32), selected once per call (no
// per-element dispatch).
//
// Thread-safety: pure functions on caller-owned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace inferno {

// kMean reduces as kSum; the collective divides the final sum by the group
// size (so every rank computes the same bits).
enum class ReduceKind { kSum, kProd, kMin, kMax, kMean };

// dst[i] = op(dst[i], src[i]) for every i, where `src` holds dst.size()
// native values of dst's type, possibly unaligned (src.size() ==
// sizeof(element) * dst.size()). int32 sums and products wrap modulo 2^32.
void ReduceInto(std::span<float> dst, std::span<const std::byte> src, ReduceKind op);
void ReduceInto(std::span<int32_t> dst, std::span<const std::byte> src, ReduceKind op);

// data[i] /= divisor for every i (int32: rounded toward zero).
void DivideBy(std::span<float> data, float divisor);
void DivideBy(std::span<int32_t> data, int32_t divisor);

}  // namespace inferno
