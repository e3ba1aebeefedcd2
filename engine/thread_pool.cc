#include "engine/thread_pool.h"

#include <glog/logging.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace inferno {
namespace {

// Polling before a thread sleeps on a futex: about 10-100 microseconds
// (pause takes 10-140 cycles), longer than the gap between two loops of a
// decode step, short enough not to steal a core from another process long.
constexpr int kSpinIterations = 2000;

inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  CHECK_GE(num_threads, 1) << "ThreadPool needs at least the calling thread";
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunChunk(int thread) {
  if (thread >= active_threads_) return;
  const int64_t begin = n_ * thread / active_threads_;
  const int64_t end = n_ * (thread + 1) / active_threads_;
  chunk_fn_(context_, begin, end, thread);
}

void ThreadPool::Run(int64_t n, ChunkFn chunk_fn, void* context) {
  chunk_fn_ = chunk_fn;
  context_ = context;
  n_ = n;
  active_threads_ = static_cast<int>(std::min<int64_t>(n, num_threads_));
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();

  RunChunk(0);

  for (int spin = 0; spin < kSpinIterations; ++spin) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    CpuRelax();
  }
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(int thread) {
  uint32_t seen = 0;
  while (true) {
    uint32_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      CpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_acquire)) return;
    RunChunk(thread);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace inferno
