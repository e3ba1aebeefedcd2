// ThreadPool: a fixed set of worker threads that run one loop over [0, n) at a
// time, split into contiguous chunks that the calling thread and the workers
// claim one by one. Used by the kernels to split matrix rows and attention
// heads; the split never changes what is computed for an index, so results
// do not depend on the thread count or on which thread ran a chunk.
//
// Workers spin briefly for the next loop (a decode step issues a few dozen
// loops per token), then sleep on a futex, so an idle pool costs nothing. A
// worker that is not running (another process holds the core) does not stall
// the loop: the caller claims the chunks it has not started.
//
// Thread-safety: ParallelFor must be called from one thread at a time (the
// owner); the chunks it runs may run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/progress.h"

namespace inferno {

class ThreadPool {
 public:
  // `num_threads` >= 1 counts the calling thread: ThreadPool(1) starts no
  // worker and runs every loop inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end, thread_index) over contiguous chunks that cover
  // [0, n) exactly once, and returns when every chunk is done. Chunk c is
  // [n*c/C, n*(c+1)/C) for C = min(n, kChunksPerThread * num_threads());
  // thread_index in [0, num_threads()) names the thread running the chunk
  // (0: the caller), so per-thread scratch may be indexed by it. Loops with
  // n < 2 or on a 1-thread pool run inline as one chunk. Every chunk done
  // counts as progress (base/progress.h).
  template <typename Fn>
  void ParallelFor(int64_t n, Fn&& fn) {
    if (n <= 0) return;
    if (num_threads_ == 1 || n == 1) {
      fn(int64_t{0}, n, 0);
      ProgressAdvanced();
      return;
    }
    Run(
        n,
        [](void* context, int64_t begin, int64_t end, int thread) {
          (*static_cast<Fn*>(context))(begin, end, thread);
        },
        &fn);
  }

 private:
  using ChunkFn = void (*)(void* context, int64_t begin, int64_t end, int thread);

  static constexpr int kChunksPerThread = 4;

  // One loop. Two slots alternate so that a worker still reading loop g's
  // slot never sees it rewritten for loop g + 1.
  struct Loop {
    ChunkFn chunk_fn = nullptr;
    void* context = nullptr;
    int64_t n = 0;
    int64_t chunks = 0;
  };

  void Run(int64_t n, ChunkFn chunk_fn, void* context);
  void WorkerLoop(int thread);
  // Claims and runs chunks of the current loop until none is left.
  void RunChunks(int thread);

  const int num_threads_;
  std::vector<std::thread> workers_;
  Loop loops_[2];
  // (loop number << 32) | next chunk to claim. Workers claim by CAS, so a
  // claim made against a finished loop fails.
  std::atomic<uint64_t> state_{0};
  std::atomic<uint32_t> loop_number_{0};  // the loop number, for futex waits
  std::atomic<int64_t> done_chunks_{0};   // chunks of the current loop finished
  std::atomic<int> inside_{0};            // workers that may be reading a Loop slot
  std::atomic<bool> stop_{false};
};

}  // namespace inferno
