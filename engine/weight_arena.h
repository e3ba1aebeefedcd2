// WeightArena: memory for a stage's weight tensors, backed by transparent
// huge pages even where the tensors are smaller than one. Tensors are placed
// one after another (64-byte aligned) in chunks of anonymous memory that are
// 2 MiB-aligned and advised MADV_HUGEPAGE; a tensor larger than a chunk gets
// a chunk of its own.
//
// Why: decode reads every weight once per token, and a weight matrix held in
// 4 KiB pages costs a TLB miss per 4 KiB, which on this project's VMs
// (nested paging) is a large part of a matrix-vector product. Each tensor in
// an allocation of its own got huge pages only for the 2 MiB-aligned part
// inside it, so a tensor-parallel rank's slices of a 768-wide model (1.2 MB)
// got none: TP2 decode of the 110M shape ran at 46-69 tokens/s, and at
// 90-98 with the system set to give every allocation huge pages.
//
// What is not touched is not resident: a chunk's unused tail costs address
// space, and at most the one huge page the last tensor ends in.
//
// Thread-safety: Allocate from one thread at a time; the memory handed out
// may be written and read from any thread, and lives as long as the owner
// of its Block (not the arena).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "base/error.h"

namespace inferno {

class WeightArena {
 public:
  // Uninitialized, 64-byte aligned bytes, valid while `owner` (shared by the
  // tensors of one chunk) lives.
  struct Block {
    std::span<std::byte> bytes;
    std::shared_ptr<const void> owner;
  };

  // A chunk's size, and the alignment of every chunk.
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  // `bytes` bytes (an empty Block for 0). Error::Io when the memory cannot be
  // mapped, naming the size.
  Result<Block> Allocate(size_t bytes);

 private:
  struct Chunk;

  std::shared_ptr<Chunk> chunk_;  // the chunk tensors are placed in, if any
  size_t used_ = 0;               // its bytes handed out (rounded to 64)
};

}  // namespace inferno
