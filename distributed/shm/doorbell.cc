#include "distributed/shm/doorbell.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace inferno {

void YieldCpu() { sched_yield(); }

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void Doorbell::Ring() {
  sequence_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sequence_), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void Doorbell::Sleep(uint32_t seen, Deadline until) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now());
  if (left.count() <= 0) return;
  timespec relative{};
  relative.tv_sec = static_cast<time_t>(left.count() / 1000000000);
  relative.tv_nsec = static_cast<long>(left.count() % 1000000000);
  // EAGAIN (the sequence moved), EINTR and ETIMEDOUT all mean: look again.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sequence_), FUTEX_WAIT, seen, &relative, nullptr, 0);
}

}  // namespace inferno
