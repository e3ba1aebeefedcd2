// Element-wise reduction kernels used by the collectives: one tight loop per
// ReduceKind, selected once per call (no per-element dispatch).
//
// Thread-safety: pure functions on caller-owned buffers.
#pragma once

#include <cstddef>
#include <span>

namespace inferno {

// kMean reduces as kSum; the collective divides the final sum by the group
// size (so every rank computes the same bits).
enum class ReduceKind { kSum, kProd, kMin, kMax, kMean };

// dst[i] = op(dst[i], src[i]) for every i, where `src` holds dst.size()
// native float32 values, possibly unaligned (src.size() == 4 * dst.size()).
void ReduceInto(std::span<float> dst, std::span<const std::byte> src, ReduceKind op);

// data[i] /= divisor for every i.
void DivideBy(std::span<float> data, float divisor);

}  // namespace inferno
