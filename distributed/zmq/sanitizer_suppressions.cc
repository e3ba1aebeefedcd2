// Sanitizer settings for every binary that links the ZeroMQ transport.
//
// ThreadSanitizer: Debian's libzmq is not instrumented, so TSan cannot see
// the synchronization of its lock-free pipes and reports each hand-over of a
// message between its I/O thread and ours as a race. So: ignore memory accesses that
// uninstrumented libraries make through TSan's interceptors (memcpy, recv,
// ...) and suppress reports with a libzmq frame in either stack. Races among
// our own threads are still reported.
//
// LeakSanitizer (with ASan): now and then a 104-byte block that libzmq
// allocated itself was reported leaked at exit after every transport had
// closed (transport_shutdown_test, once in about four ASan runs); leaks of
// blocks libzmq allocates are suppressed. Leaks whose allocation stack has
// no libzmq frame are still reported.

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define INFERNO_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define INFERNO_TSAN 1
#endif

#ifdef INFERNO_TSAN
extern "C" const char* __tsan_default_options() { return "ignore_noninstrumented_modules=1"; }

extern "C" const char* __tsan_default_suppressions() {
  return "race:libzmq.so\n"
         "called_from_lib:libzmq.so\n";
}
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFERNO_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define INFERNO_ASAN 1
#endif

#ifdef INFERNO_ASAN
extern "C" const char* __lsan_default_suppressions() { return "leak:libzmq.so\n"; }
#endif
