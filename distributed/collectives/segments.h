// How collectives over messages cut buffers: into blocks (one per rank, for
// the ring) and segments (at most one transport chunk each, so that the
// transfer of one segment overlaps the reduction or forwarding of the
// previous one).
//
// Thread-safety: constants and pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <utility>

#include "distributed/frame_header.h"

namespace inferno {

// Elements of type T in one segment: one transport chunk (kMaxChunkBytes).
template <typename T>
inline constexpr size_t kSegmentElements = kMaxChunkBytes / sizeof(T);

// all_reduce and broadcast of at most this many bytes use the latency-optimal
// algorithm (recursive doubling, binomial tree); larger ones the ring/chain
// (except all_reduce on two ranks, where recursive doubling is never worse).
inline constexpr size_t kSmallCollectiveBytes = 64 << 10;

// Splits n elements into `parts` contiguous blocks whose sizes differ by at
// most one (the first n % parts blocks get the extra element).
struct BlockLayout {
  size_t n;
  size_t parts;
  size_t offset(size_t block) const { return block * (n / parts) + std::min(block, n % parts); }
  size_t size(size_t block) const { return n / parts + (block < n % parts ? 1 : 0); }
  size_t max_size() const { return n / parts + (n % parts ? 1 : 0); }
};

// Segment `index` of a block of `block_size` elements of T: [begin, end)
// within it.
template <typename T>
std::pair<size_t, size_t> SegmentRange(size_t block_size, size_t index) {
  const size_t begin = std::min(block_size, index * kSegmentElements<T>);
  return {begin, std::min(block_size, begin + kSegmentElements<T>)};
}

// Segments of a block of `max_block_size` elements of T (at least one).
template <typename T>
size_t SegmentCount(size_t max_block_size) {
  return std::max<size_t>(1, (max_block_size + kSegmentElements<T> - 1) / kSegmentElements<T>);
}

// Segment `index` of the whole of `data`.
template <typename T>
std::span<T> Segment(std::span<T> data, size_t index) {
  auto [begin, end] = SegmentRange<std::remove_const_t<T>>(data.size(), index);
  return data.subspan(begin, end - begin);
}

// Copies received bytes over `dst` (src.size() == dst.size_bytes()).
template <typename T>
void CopyInto(std::span<T> dst, std::span<const std::byte> src) {
  if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
}

}  // namespace inferno
