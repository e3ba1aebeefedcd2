#include "engine/weight_arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace inferno {
namespace {

constexpr size_t kAlignment = 64;

size_t RoundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

// `size` bytes at `base`, 2 MiB-aligned, unmapped when the last tensor
// placed in it is gone.
struct WeightArena::Chunk {
  std::byte* base = nullptr;
  size_t size = 0;

  Chunk(std::byte* base, size_t size) : base(base), size(size) {}
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  ~Chunk() { ::munmap(base, size); }
};

Result<WeightArena::Block> WeightArena::Allocate(size_t bytes) {
  if (bytes == 0) return Block{};
  if (!chunk_ || chunk_->size - used_ < bytes) {
    const size_t size = RoundUp(bytes > kChunkBytes ? bytes : kChunkBytes, kHugePageBytes);
    // Map a huge page more than asked, then give back what lies before the
    // first 2 MiB boundary and after the chunk.
    const size_t mapped_size = size + kHugePageBytes;
    void* mapped = ::mmap(nullptr, mapped_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
      return Error::Io("cannot map " + std::to_string(size) + " bytes for weights: " + std::strerror(errno));
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = RoundUp(start, kHugePageBytes);
    if (aligned > start) ::munmap(mapped, aligned - start);
    const uintptr_t end = start + mapped_size;
    if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
    std::byte* base = reinterpret_cast<std::byte*>(aligned);
    ::madvise(base, size, MADV_HUGEPAGE);  // a hint: without THP the pages are 4 KiB ones
    chunk_ = std::make_shared<Chunk>(base, size);
    used_ = 0;
  }
  Block block{std::span<std::byte>(chunk_->base + used_, bytes), chunk_};
  used_ = RoundUp(used_ + bytes, kAlignment);
  if (used_ > chunk_->size) used_ = chunk_->size;
  return block;
}

}  // namespace inferno
