// tcp_probe: what plain TCP gives between two hosts, the floor a collective is
// measured against (docs/network.md).
//
//   tcp_probe --listen 0                  serves until killed; prints "port P" first
//   tcp_probe --connect ADDR:P --size 4096 --iters 500
//                                         ping-pong: a message of SIZE bytes there
//                                         and back; prints the round trip in µs
//                                         (median, 10th and 90th percentile)
//   tcp_probe --connect ADDR:P --bulk-seconds 2
//                                         streams for that long; prints Mbit/s
//
// One connection at a time, TCP_NODELAY, IPv4, blocking sockets with a 10 s
// send/receive deadline. The connection opens with an 8-byte header: mode
// (1 echo, 2 sink) and message size, u32 little-endian each.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/byte_codec.h"
#include "base/command_line.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kEcho = 1;
constexpr uint32_t kSink = 2;
constexpr uint32_t kMaxMessage = 64u << 20;

void SetSocketOptions(int fd) {
  const int on = 1;
  const timeval deadline{10, 0};
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, sizeof deadline);
}

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = recv(fd, p, size, 0);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Serves one connection: echoes messages, or sinks bytes and reports the count.
void Serve(int fd) {
  std::array<std::byte, 8> header;
  if (!ReadAll(fd, header.data(), header.size())) return;
  const auto mode = inferno::LoadLittleEndian<uint32_t>(std::span<const std::byte>(header).first(4));
  const auto size = inferno::LoadLittleEndian<uint32_t>(std::span<const std::byte>(header).subspan(4));
  std::vector<char> buffer(std::clamp<uint32_t>(size, 1, kMaxMessage));
  if (mode == kEcho) {
    while (ReadAll(fd, buffer.data(), buffer.size()) && WriteAll(fd, buffer.data(), buffer.size())) {
    }
    return;
  }
  uint64_t total = 0;
  for (ssize_t n; (n = recv(fd, buffer.data(), buffer.size(), 0)) > 0;) total += static_cast<uint64_t>(n);
  std::array<std::byte, 8> count;
  inferno::StoreLittleEndian<uint64_t>(count, total);
  WriteAll(fd, count.data(), count.size());
}

int Listen(int64_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::fprintf(stderr, "tcp_probe: --listen %lld: %s\n", static_cast<long long>(port),
                 std::strerror(errno));
    return 1;
  }
  std::printf("port %d\n", ntohs(address.sin_port));
  std::fflush(stdout);
  for (;;) {
    const int connection = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    SetSocketOptions(connection);
    Serve(connection);
    close(connection);
  }
}

// A connected socket to "ADDR:PORT" with the mode header sent, or -1 after
// printing why.
int Connect(const std::string& target, uint32_t mode, uint32_t size) {
  const size_t colon = target.rfind(':');
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (colon == std::string::npos ||
      inet_pton(AF_INET, target.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "tcp_probe: --connect '%s': give IPV4:PORT\n", target.c_str());
    return -1;
  }
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(target.c_str() + colon + 1)));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  SetSocketOptions(fd);  // SO_SNDTIMEO bounds connect() too
  std::array<std::byte, 8> header;
  inferno::StoreLittleEndian<uint32_t>(std::span<std::byte>(header).first(4), mode);
  inferno::StoreLittleEndian<uint32_t>(std::span<std::byte>(header).subspan(4), size);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      !WriteAll(fd, header.data(), header.size())) {
    std::fprintf(stderr, "tcp_probe: --connect %s: %s\n", target.c_str(), std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

int PingPong(const std::string& target, uint32_t size, int iterations) {
  const int fd = Connect(target, kEcho, size);
  if (fd < 0) return 1;
  std::vector<char> message(size, 'x');
  std::vector<double> round_trips_us;
  constexpr int kWarmup = 20;
  for (int i = 0; i < kWarmup + iterations; ++i) {
    const Clock::time_point start = Clock::now();
    if (!WriteAll(fd, message.data(), size) || !ReadAll(fd, message.data(), size)) {
      std::fprintf(stderr, "tcp_probe: round trip %d to %s: %s\n", i, target.c_str(),
                   errno != 0 ? std::strerror(errno) : "connection closed");
      return 1;
    }
    if (i >= kWarmup)
      round_trips_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  close(fd);
  std::sort(round_trips_us.begin(), round_trips_us.end());
  const auto at = [&](double q) {
    return round_trips_us[static_cast<size_t>(q * (round_trips_us.size() - 1))];
  };
  std::printf("pingpong bytes=%u iters=%d rtt_us median=%.1f p10=%.1f p90=%.1f\n", size, iterations, at(0.5),
              at(0.1), at(0.9));
  return 0;
}

int Bulk(const std::string& target, double seconds) {
  constexpr uint32_t kChunk = 256 * 1024;
  const int fd = Connect(target, kSink, kChunk);
  if (fd < 0) return 1;
  std::vector<char> chunk(kChunk, 'x');
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    if (!WriteAll(fd, chunk.data(), chunk.size())) {
      std::fprintf(stderr, "tcp_probe: bulk send to %s: %s\n", target.c_str(), std::strerror(errno));
      return 1;
    }
  }
  shutdown(fd, SHUT_WR);
  std::array<std::byte, 8> count;
  if (!ReadAll(fd, count.data(), count.size())) {
    std::fprintf(stderr, "tcp_probe: bulk: no byte count from %s\n", target.c_str());
    return 1;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t received = inferno::LoadLittleEndian<uint64_t>(count);
  std::printf("bulk bytes=%llu seconds=%.3f mbit_s=%.1f\n", static_cast<unsigned long long>(received),
              elapsed, received * 8.0 / elapsed / 1e6);
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{
      "tcp_probe",
      "--listen PORT | --connect ADDR:PORT (--size BYTES [--iters N] | --bulk-seconds S)",
      "Plain TCP between two hosts: a ping-pong round trip, or a bulk stream's rate.",
      {{"listen", "PORT", "serve on this port (0: any; the port is printed)"},
       {"connect", "ADDR:PORT", "the server to measure against"},
       {"size", "BYTES", "ping-pong message size, 1-67108864"},
       {"iters", "N", "timed round trips (default 1000)"},
       {"bulk-seconds", "S", "stream for S seconds and print the rate"}}};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const auto fail = [](const inferno::Error& error) {
    std::fprintf(stderr, "tcp_probe: %s\n", error.ToString().c_str());
    return 2;
  };
  if (flags.Has("listen")) {
    const inferno::Result<int64_t> port = flags.Int("listen", 0, 0, 65535);
    return port ? Listen(*port) : fail(port.error());
  }
  if (!flags.Has("connect")) {
    std::fprintf(stderr, "tcp_probe: give --listen PORT or --connect ADDR:PORT (see tcp_probe --help)\n");
    return 2;
  }
  const std::string target = *flags.Last("connect");
  if (flags.Has("bulk-seconds")) {
    const inferno::Result<double> seconds = flags.Double("bulk-seconds", 1, 0.1, 600);
    return seconds ? Bulk(target, *seconds) : fail(seconds.error());
  }
  const inferno::Result<int64_t> size = flags.Int("size", 4096, 1, kMaxMessage);
  const inferno::Result<int64_t> iterations = flags.Int("iters", 1000, 1, 10000000);
  if (!size) return fail(size.error());
  if (!iterations) return fail(iterations.error());
  return PingPong(target, static_cast<uint32_t>(*size), static_cast<int>(*iterations));
}
