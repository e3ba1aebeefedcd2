#include "runtime/test_only_hang.h"

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace inferno {

Result<std::optional<int64_t>> TestOnlyHangStep(const std::function<const char*(const char*)>& getenv,
                                                int rank) {
  const char* value = getenv(kTestOnlyHangVariable);
  if (value == nullptr) return std::optional<int64_t>();
  const std::string_view text = value;
  int hung_rank = -1;
  int64_t step = 0;
  const auto [rank_end, rank_error] = std::from_chars(text.data(), text.data() + text.size(), hung_rank);
  const bool colon = rank_error == std::errc() && rank_end < text.data() + text.size() && *rank_end == ':';
  const auto [step_end, step_error] =
      colon ? std::from_chars(rank_end + 1, text.data() + text.size(), step) : std::from_chars_result{};
  if (!colon || step_error != std::errc() || step_end != text.data() + text.size() || hung_rank < 0 ||
      step < 1) {
    return Error::InvalidArgument(std::string(kTestOnlyHangVariable) +
                                  ": expected RANK:STEP (STEP >= 1), got '" + std::string(text) + "'");
  }
  if (hung_rank != rank) return std::optional<int64_t>();
  return std::optional<int64_t>(step);
}

void TestOnlyHangForever(int rank, int64_t step) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  std::fprintf(stderr, "rank %d: %s: hanging at forward pass %lld at %lld\n", rank, kTestOnlyHangVariable,
               static_cast<long long>(step), static_cast<long long>(now.count()));
  std::fflush(stderr);
  std::mutex mutex;
  std::condition_variable never_notified;
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) never_notified.wait(lock);
}

}  // namespace inferno
