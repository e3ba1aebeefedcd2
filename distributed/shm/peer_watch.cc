#include "distributed/shm/peer_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace inferno {
namespace {

std::string Describe(int rank, pid_t pid) {
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + " on this host)";
}

}  // namespace

Result<PeerWatch> PeerWatch::Open(int rank, pid_t pid) {
  // glibc 2.36's <sys/pidfd.h> lacks extern "C", so the system call directly.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    if (errno == ESRCH) return Error{ErrorKind::kPeerLost, Describe(rank, pid) + " has already ended"};
    return Error::Io("pidfd_open of " + Describe(rank, pid) + ": " + std::strerror(errno));
  }
  return PeerWatch(rank, pid, pidfd);
}

PeerWatch::PeerWatch(PeerWatch&& other) noexcept
    : rank_(other.rank_), pid_(other.pid_), pidfd_(std::exchange(other.pidfd_, -1)) {}

PeerWatch& PeerWatch::operator=(PeerWatch&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    rank_ = other.rank_;
    pid_ = other.pid_;
    pidfd_ = std::exchange(other.pidfd_, -1);
  }
  return *this;
}

PeerWatch::~PeerWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

Status PeerWatch::Check() const {
  pollfd watched{pidfd_, POLLIN, 0};
  // A pidfd polls readable once its process has ended.
  if (poll(&watched, 1, 0) > 0 && (watched.revents & POLLIN) != 0) {
    return Error{ErrorKind::kPeerLost, Describe(rank_, pid_) + " has ended"};
  }
  return {};
}

bool PeerWatch::Stopped() const {
  if (!Check()) return false;  // a later process may hold the pid now
  std::ifstream file("/proc/" + std::to_string(pid_) + "/stat");
  std::stringstream stat;
  stat << file.rdbuf();
  // "<pid> (<command, which may hold spaces and parentheses>) <state> ..."
  const std::string text = stat.str();
  const size_t command_end = text.rfind(')');
  if (command_end == std::string::npos || command_end + 2 >= text.size()) return false;
  const char state = text[command_end + 2];
  return state == 'T' || state == 't';
}

}  // namespace inferno
