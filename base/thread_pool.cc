#include "base/thread_pool.h"

#include <algorithm>
#include <thread>

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

constexpr uint64_t LoopOf(uint64_t state) { return state >> 32; }
constexpr uint64_t ChunkOf(uint64_t state) { return state & 0xFFFFFFFFu; }

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  CHECK_GE(num_threads, 1) << "ThreadPool needs at least the calling thread";
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  loop_number_.fetch_add(1, std::memory_order_seq_cst);
  loop_number_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunChunks(int thread) {
  uint64_t state = state_.load(std::memory_order_acquire);
  while (true) {
    const Loop& loop = loops_[LoopOf(state) & 1];
    const uint64_t chunk = ChunkOf(state);
    if (static_cast<int64_t>(chunk) >= loop.chunks) return;
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // another thread claimed it, or a new loop began: `state` is reloaded
    }
    const int64_t begin = loop.n * static_cast<int64_t>(chunk) / loop.chunks;
    const int64_t end = loop.n * static_cast<int64_t>(chunk + 1) / loop.chunks;
    loop.chunk_fn(loop.context, begin, end, thread);
    ProgressAdvanced();
    if (done_chunks_.fetch_add(1, std::memory_order_acq_rel) + 1 == loop.chunks) done_chunks_.notify_one();
    state = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::Run(int64_t n, ChunkFn chunk_fn, void* context) {
  // A worker that saw the previous loop may still read its slot; the slot
  // written here is the other one, which no worker reads until published.
  // Wait for workers from two loops back to leave.
  for (int spin = 0; inside_.load(std::memory_order_seq_cst) != 0; ++spin) {
    if (spin < kSpinIterations) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  const uint64_t next = LoopOf(state_.load(std::memory_order_relaxed)) + 1;
  Loop& loop = loops_[next & 1];
  loop.chunk_fn = chunk_fn;
  loop.context = context;
  loop.n = n;
  loop.chunks = std::min<int64_t>(n, static_cast<int64_t>(kChunksPerThread) * num_threads_);
  done_chunks_.store(0, std::memory_order_relaxed);
  state_.store(next << 32, std::memory_order_seq_cst);
  loop_number_.store(static_cast<uint32_t>(next), std::memory_order_seq_cst);
  loop_number_.notify_all();

  RunChunks(0);

  int64_t done = done_chunks_.load(std::memory_order_acquire);
  for (int spin = 0; spin < kSpinIterations && done != loop.chunks; ++spin) {
    CpuRelax();
    done = done_chunks_.load(std::memory_order_acquire);
  }
  while (done != loop.chunks) {
    done_chunks_.wait(done, std::memory_order_acquire);
    done = done_chunks_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(int thread) {
  uint32_t seen = 0;
  while (true) {
    uint32_t current = loop_number_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      CpuRelax();
      current = loop_number_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      loop_number_.wait(seen, std::memory_order_acquire);
      current = loop_number_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_seq_cst)) return;
    inside_.fetch_add(1, std::memory_order_seq_cst);
    RunChunks(thread);
    inside_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace inferno
