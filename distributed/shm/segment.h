// SharedSegment: memory shared by the processes of one job on one host,
// created by one process and opened by its peers.
//
// The memory is a memfd (memfd_create): it has no name in /dev/shm or any
// other file system, so however a job ends (SIGKILL included) nothing of it
// is left behind; the kernel frees it when the last process that maps it or
// holds a descriptor of it is gone. Its mode is 0600. Every mapping is
// populated when made (MAP_POPULATE), so the first pass of a ring through
// its memory takes no page faults: they made the first 4 KiB all_reduces of
// a job four times slower (docs/collectives.md).
//
// How a peer gets it: the creator publishes its SegmentAddress (pid,
// descriptor number, size; e.g. over the rendezvous, which is authenticated
// unless the job is run with INFERNO_INSECURE=1) and the peer opens /proc/<pid>/fd/<fd>. The kernel allows
// that only to processes that may ptrace-read the creator: the same user (or
// root), in the same pid namespace, while the creator is dumpable. So a
// process of another user cannot open a segment. Once every peer has opened
// it, the creator calls StopSharing: the descriptor is closed and no process
// can open the segment any more; the mappings stay.
//
// Thread-safety: a SharedSegment is used from one thread at a time; the
// memory it maps may be used by any thread and process (its users
// synchronise, e.g. through a ShmRing).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>

#include "base/error.h"

namespace inferno {

// Where peers find a segment.
struct SegmentAddress {
  pid_t pid = 0;  // the creator
  int fd = -1;    // its descriptor of the memfd
  size_t bytes = 0;

  // "<pid>:<fd>:<bytes>".
  std::string ToString() const;
  // Parses ToString's form. Errors: InvalidArgument quoting `text`.
  static Result<SegmentAddress> Parse(const std::string& text);
};

class SharedSegment {
 public:
  // Creates and maps a zero-filled segment of `bytes` (> 0) bytes.
  // Errors: Io naming the call that failed (memfd_create, ftruncate, mmap).
  static Result<SharedSegment> Create(size_t bytes);

  // Opens and maps the segment at `address`, created by another process of
  // this host. Errors: PeerLost (the creator has ended), Io (no such
  // descriptor, permission denied, or a file that is not a segment of that
  // size: the message names the path and says why).
  static Result<SharedSegment> Open(const SegmentAddress& address);

  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  // Unmaps the memory (and closes the descriptor if still open).
  ~SharedSegment();

  // The mapped memory, page-aligned.
  std::span<std::byte> bytes() const { return {data_, size_}; }

  // The address peers open (created segments only; fd is -1 after
  // StopSharing).
  const SegmentAddress& address() const { return address_; }

  // Closes this process's descriptor of the segment: no process can open it
  // any more (call once every peer has). Mappings are unaffected. Idempotent.
  void StopSharing();

 private:
  SharedSegment(std::byte* data, size_t size, int fd, SegmentAddress address)
      : data_(data), size_(size), fd_(fd), address_(address) {}
  void Release();

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  SegmentAddress address_;
};

}  // namespace inferno
