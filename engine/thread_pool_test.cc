#include "engine/thread_pool.h"

#include <atomic>
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
  const int64_t n = 10;
  std::vector<int> owner(n, -1);
  pool.ParallelFor(n, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t i = begin; i < end; ++i) owner[i] = thread;
  });
  const int threads = std::min<int>(n, pool.num_threads());
  for (int t = 0; t < threads; ++t) {
    for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) EXPECT_EQ(owner[i], t) << "index " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadPoolTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace inferno
