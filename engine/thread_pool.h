// ThreadPool: a fixed set of worker threads that run one loop over [0, n) at a
// time, split into contiguous chunks, one chunk per thread, the calling thread
// taking the first chunk. Used by the kernels to split matrix rows and
// attention heads; the split never changes what is computed for an index, so
// results do not depend on the thread count.
//
// Workers spin briefly for the next loop (a decode step issues a few dozen
// loops per token), then sleep on a futex, so an idle pool costs nothing.
//
// Thread-safety: ParallelFor must be called from one thread at a time (the
// owner); the chunks it runs may run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

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
  // [0, n) exactly once, thread_index in [0, num_threads()), and returns when
  // every chunk is done. Chunk t is [n*t/T, n*(t+1)/T) for T = min(n,
  // num_threads()). Loops with n < 2 or on a 1-thread pool run inline.
  template <typename Fn>
  void ParallelFor(int64_t n, Fn&& fn) {
    if (n <= 0) return;
    if (num_threads_ == 1 || n == 1) {
      fn(int64_t{0}, n, 0);
      return;
    }
    Run(n, [](void* context, int64_t begin, int64_t end, int thread) {
      (*static_cast<Fn*>(context))(begin, end, thread);
    }, &fn);
  }

 private:
  using ChunkFn = void (*)(void* context, int64_t begin, int64_t end, int thread);

  void Run(int64_t n, ChunkFn chunk_fn, void* context);
  void WorkerLoop(int thread);
  void RunChunk(int thread);

  const int num_threads_;
  std::vector<std::thread> workers_;

  // The current loop, published by bumping generation_.
  ChunkFn chunk_fn_ = nullptr;
  void* context_ = nullptr;
  int64_t n_ = 0;
  int active_threads_ = 0;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};  // chunks of the current loop not yet done
  std::atomic<bool> stop_{false};
};

}  // namespace inferno
