#include "loader/shard_progress.h"

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(FormatShardProgress, ShowsBytesPercentRateAndEta) {
  EXPECT_EQ(FormatShardProgress(3ull << 29, 3ull << 30, 2.0),
            "1.50 GiB / 3.00 GiB (50%), 768.00 MiB/s, ETA 2s");
}

TEST(FormatShardProgress, NoRateBeforeAnyByte) {
  EXPECT_EQ(FormatShardProgress(0, 2048, 0.5), "0 B / 2.00 KiB (0%), rate -, ETA -");
}

TEST(ShardProgressDisplay, LogModeWritesWholeLines) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  ShardProgressDisplay display(out, /*terminal=*/false);
  display.Update(1, 4);  // too soon after the start: not drawn
  display.Finish(4, 4);
  std::fclose(out);
  const std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(text.rfind("shard: 4 B / 4 B (100%)", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace inferno
