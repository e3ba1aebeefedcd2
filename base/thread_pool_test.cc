#include "base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

class ThreadPoolTest : public ::testing::TestWithParam<int> {};

TEST_P(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(GetParam());
  for (int64_t n : {1, 2, 3, 7, 100, 1001}) {
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, [&](int64_t begin, int64_t end, int thread) {
      EXPECT_GE(thread, 0);
      EXPECT_LT(thread, pool.num_threads());
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " index " << i;
  }
}

TEST_P(ThreadPoolTest, ManyConsecutiveLoopsAllComplete) {
  ThreadPool pool(GetParam());
  std::atomic<int64_t> total{0};
  for (int loop = 0; loop < 2000; ++loop) {
    pool.ParallelFor(8, [&](int64_t begin, int64_t end, int) { total.fetch_add(end - begin); });
  }
  EXPECT_EQ(total.load(), 2000 * 8);
}

TEST_P(ThreadPoolTest, ChunksAreContiguousAndDependOnlyOnCount) {
  ThreadPool pool(GetParam());
  for (int64_t n : {3, 10, 1000}) {
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> chunks;
    pool.ParallelFor(n, [&](int64_t begin, int64_t end, int) {
      std::lock_guard<std::mutex> lock(mutex);
      chunks.emplace(begin, end);
    });
    const int64_t count = pool.num_threads() == 1 ? 1 : std::min<int64_t>(n, 4 * pool.num_threads());
    std::set<std::pair<int64_t, int64_t>> expected;
    for (int64_t c = 0; c < count; ++c) expected.emplace(n * c / count, n * (c + 1) / count);
    EXPECT_EQ(chunks, expected) << "n=" << n;
  }
}

TEST_P(ThreadPoolTest, AThreadRunsOneChunkAtATime) {
  ThreadPool pool(GetParam());
  std::vector<std::atomic<int>> running(pool.num_threads());
  std::atomic<bool> overlapped{false};
  for (int loop = 0; loop < 200; ++loop) {
    pool.ParallelFor(64, [&](int64_t, int64_t, int thread) {
      if (running[thread].fetch_add(1) != 0) overlapped = true;
      running[thread].fetch_sub(1);
    });
  }
  EXPECT_FALSE(overlapped.load());
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadPoolTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace inferno
