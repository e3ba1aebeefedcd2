#include "engine/weight_arena.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

uintptr_t Address(const WeightArena::Block& block) { return reinterpret_cast<uintptr_t>(block.bytes.data()); }

TEST(WeightArena, SmallTensorsShareAHugePageAlignedChunkAt64ByteBoundaries) {
  WeightArena arena;
  std::vector<WeightArena::Block> blocks;
  for (size_t bytes : {100, 1, 4096, 1200000, 77}) {
    Result<WeightArena::Block> block = arena.Allocate(bytes);
    ASSERT_TRUE(block.ok()) << block.error().ToString();
    ASSERT_EQ(block->bytes.size(), bytes);
    EXPECT_EQ(Address(*block) % 64, 0u);
    std::memset(block->bytes.data(), static_cast<int>(blocks.size() + 1), bytes);
    blocks.push_back(*block);
  }
  EXPECT_EQ(Address(blocks[0]) % WeightArena::kHugePageBytes, 0u);
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].owner, blocks[0].owner) << "block " << i << " is in another chunk";
    EXPECT_GE(Address(blocks[i]), Address(blocks[i - 1]) + blocks[i - 1].bytes.size());
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (std::byte b : blocks[i].bytes)
      ASSERT_EQ(static_cast<int>(b), static_cast<int>(i + 1)) << "block " << i;
  }
}

TEST(WeightArena, ATensorLargerThanAChunkGetsOneOfItsOwnAndTheNextStartsAnother) {
  WeightArena arena;
  Result<WeightArena::Block> small = arena.Allocate(1000);
  Result<WeightArena::Block> large = arena.Allocate(WeightArena::kChunkBytes + 12345);
  Result<WeightArena::Block> after = arena.Allocate(WeightArena::kChunkBytes - 100);
  ASSERT_TRUE(small.ok() && large.ok() && after.ok());
  EXPECT_NE(large->owner, small->owner);
  EXPECT_EQ(Address(*large) % WeightArena::kHugePageBytes, 0u);
  std::memset(large->bytes.data(), 7, large->bytes.size());  // all of it is mapped
  EXPECT_NE(after->owner, large->owner);
  EXPECT_TRUE(arena.Allocate(0)->bytes.empty());
}

TEST(WeightArena, BlocksOutliveTheArena) {
  WeightArena::Block block;
  {
    WeightArena arena;
    block = arena.Allocate(5000).value();
    std::memset(block.bytes.data(), 3, block.bytes.size());
  }
  for (std::byte b : block.bytes) ASSERT_EQ(static_cast<int>(b), 3);
}

// The kB of huge pages backing the mapping that contains `address`
// (/proc/self/smaps), or -1 when it is not found.
int64_t AnonHugePagesKb(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = address >= begin && address < end;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoll(line.substr(std::strlen("AnonHugePages:")));
    }
  }
  return -1;
}

TEST(WeightArena, TensorsSmallerThanAHugePageAreBackedByHugePages) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off here ('" << modes << "')";
  WeightArena arena;
  // Four tensors of 1.2 MB, as a tensor-parallel rank's slices of a 768-wide
  // layer: 4.8 MB, so at least the first two huge pages are whole.
  std::vector<WeightArena::Block> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(arena.Allocate(1200000).value());
    std::memset(blocks.back().bytes.data(), 1, blocks.back().bytes.size());
  }
  EXPECT_GE(AnonHugePagesKb(Address(blocks[0])), 4096);
}

}  // namespace
}  // namespace inferno
