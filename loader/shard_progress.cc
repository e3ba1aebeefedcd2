#include "loader/shard_progress.h"

namespace inferno {
namespace {

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.2f %s", bytes, units[unit]);
  return text;
}

}  // namespace

std::string FormatShardProgress(uint64_t bytes_done, uint64_t bytes_total, double elapsed_seconds) {
  const double percent = bytes_total == 0 ? 100.0 : 100.0 * static_cast<double>(bytes_done) / bytes_total;
  std::string text = FormatBytes(static_cast<double>(bytes_done)) + " / " +
                     FormatBytes(static_cast<double>(bytes_total)) + " (" +
                     std::to_string(static_cast<int>(percent)) + "%)";
  if (elapsed_seconds <= 0.0 || bytes_done == 0) return text + ", rate -, ETA -";
  const double rate = static_cast<double>(bytes_done) / elapsed_seconds;
  const double eta = static_cast<double>(bytes_total - bytes_done) / rate;
  return text + ", " + FormatBytes(rate) + "/s, ETA " + std::to_string(static_cast<int64_t>(eta + 0.5)) + "s";
}

ShardProgressDisplay::ShardProgressDisplay(std::FILE* out, bool terminal)
    : out_(out), terminal_(terminal), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void ShardProgressDisplay::Update(uint64_t bytes_done, uint64_t bytes_total) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < (terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000)))
    return;
  last_draw_ = now;
  Draw(bytes_done, bytes_total);
}

void ShardProgressDisplay::Finish(uint64_t bytes_done, uint64_t bytes_total) {
  Draw(bytes_done, bytes_total);
  if (terminal_) std::fputc('\n', out_);
}

void ShardProgressDisplay::Draw(uint64_t bytes_done, uint64_t bytes_total) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = FormatShardProgress(bytes_done, bytes_total, elapsed);
  if (terminal_) {
    std::fprintf(out_, "\r\033[Kshard: %s", line.c_str());
  } else {
    std::fprintf(out_, "shard: %s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace inferno
