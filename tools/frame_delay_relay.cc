// frame_delay_relay: a learning Ethernet switch that holds every frame for a
// set one-way delay, for the "hosts" of tools/netns_hosts.sh (this kernel has
// no netem). Run in the middle namespace over each host's veth peer:
//
//   frame_delay_relay --ifaces m0,m1 --delay-us 100
//
// Frames are read from each interface with an AF_PACKET socket (with
// PACKET_VNET_HDR, so GSO super-frames and partial checksums pass through
// unchanged and one frame may carry up to 64 KiB), stamped, and written out
// after --delay-us to the interface their destination MAC was last seen on
// (broadcast, multicast and unknown destinations go to every other
// interface). One queue for all frames: the delay is constant, so frames leave
// in the order they arrived. A round trip between two hosts crosses the relay
// twice: RTT = 2 * delay. The relay runs until SIGTERM or SIGINT; the sleep
// between frames is ppoll with a 1 µs timer slack, not a busy spin.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/command_line.h"

namespace {

constexpr size_t kMaxFrame = 256 * 1024;        // a vnet header plus a 64 KiB GSO frame, with room
constexpr size_t kMaxQueuedBytes = 256u << 20;  // beyond this the relay drops, as a full queue would
volatile sig_atomic_t g_stop = 0;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Port {
  std::string name;
  int fd = -1;
};

struct HeldFrame {
  int64_t due_ns;
  int from_port;
  std::vector<uint8_t> bytes;  // vnet header, then the Ethernet frame
};

using Mac = std::array<uint8_t, 6>;

// Opens an AF_PACKET socket on `name` that reads every frame the interface
// receives (not the ones it sends) with a vnet header. Prints and returns -1
// on failure.
int OpenPort(const std::string& name) {
  const unsigned index = if_nametoindex(name.c_str());
  if (index == 0) {
    std::fprintf(stderr, "frame_delay_relay: --ifaces: no interface '%s' in this namespace\n", name.c_str());
    return -1;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd < 0) {
    std::fprintf(stderr, "frame_delay_relay: AF_PACKET socket: %s (needs CAP_NET_RAW)\n",
                 std::strerror(errno));
    return -1;
  }
  const int on = 1;
  const int buffer = 8 << 20;
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(index);
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer) != 0 ||
      bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "frame_delay_relay: interface '%s': %s\n", name.c_str(), std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

class Relay {
 public:
  Relay(std::vector<Port> ports, int64_t delay_ns) : ports_(std::move(ports)), delay_ns_(delay_ns) {}

  // Moves frames until a signal stops it; returns the exit status.
  int Run() {
    std::vector<pollfd> fds;
    for (const Port& port : ports_) fds.push_back({port.fd, POLLIN, 0});
    while (!g_stop) {
      SendDue();
      timespec wait{0, 200 * 1000 * 1000};  // a bound, so a signal between checks is seen
      if (!held_.empty()) {
        const int64_t left = std::max<int64_t>(0, held_.front().due_ns - NowNs());
        wait = {static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
      }
      const int ready = ppoll(fds.data(), fds.size(), &wait, nullptr);
      if (ready < 0 && errno != EINTR) {
        std::fprintf(stderr, "frame_delay_relay: ppoll: %s\n", std::strerror(errno));
        return 1;
      }
      for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
        if (fds[i].revents & POLLIN) Receive(static_cast<int>(i));
      }
    }
    std::fprintf(stderr, "frame_delay_relay: stopped; %llu frames relayed, %llu dropped\n",
                 static_cast<unsigned long long>(relayed_), static_cast<unsigned long long>(dropped_));
    return 0;
  }

 private:
  // Reads every frame waiting on port `from` into the queue.
  void Receive(int from) {
    for (;;) {
      sockaddr_ll source{};
      socklen_t source_size = sizeof source;
      const ssize_t n = recvfrom(ports_[from].fd, receive_buffer_.data(), receive_buffer_.size(), MSG_TRUNC,
                                 reinterpret_cast<sockaddr*>(&source), &source_size);
      if (n < 0) return;  // EAGAIN: drained
      if (source.sll_pkttype == PACKET_OUTGOING) continue;
      if (static_cast<size_t>(n) > receive_buffer_.size() || queued_bytes_ + n > kMaxQueuedBytes) {
        ++dropped_;
        continue;
      }
      queued_bytes_ += n;
      held_.push_back({NowNs() + delay_ns_, from, {receive_buffer_.begin(), receive_buffer_.begin() + n}});
    }
  }

  // Sends every held frame whose time has come, oldest first.
  void SendDue() {
    const int64_t now = NowNs();
    while (!held_.empty() && held_.front().due_ns <= now) {
      HeldFrame& frame = held_.front();
      Forward(frame);
      queued_bytes_ -= frame.bytes.size();
      held_.pop_front();
    }
  }

  void Forward(const HeldFrame& frame) {
    constexpr size_t kVnetHeader = 10;  // struct virtio_net_hdr
    if (frame.bytes.size() < kVnetHeader + 14) return;
    const uint8_t* ethernet = frame.bytes.data() + kVnetHeader;
    Mac destination, source;
    std::memcpy(destination.data(), ethernet, 6);
    std::memcpy(source.data(), ethernet + 6, 6);
    if ((source[0] & 1) == 0) port_of_[source] = frame.from_port;
    const auto known = port_of_.find(destination);
    for (int to = 0; to < static_cast<int>(ports_.size()); ++to) {
      if (to == frame.from_port) continue;
      if ((destination[0] & 1) == 0 && known != port_of_.end() && known->second != to) continue;
      if (send(ports_[to].fd, frame.bytes.data(), frame.bytes.size(), 0) < 0) {
        ++dropped_;  // a full device queue (the tbf shaper) drops, as a switch would
      } else {
        ++relayed_;
      }
    }
  }

  std::vector<Port> ports_;
  int64_t delay_ns_;
  std::vector<uint8_t> receive_buffer_ = std::vector<uint8_t>(kMaxFrame);
  std::deque<HeldFrame> held_;
  size_t queued_bytes_ = 0;
  std::map<Mac, int> port_of_;
  uint64_t relayed_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{
      "frame_delay_relay",
      "--ifaces A,B[,...] --delay-us US",
      "Switches Ethernet frames between the interfaces, holding each for the one-way delay\n"
      "(a round trip through it costs 2 x US). Runs until SIGTERM. Needs CAP_NET_RAW.",
      {{"ifaces", "A,B", "two or more interfaces of this namespace, comma-separated"},
       {"delay-us", "US", "one-way delay in microseconds, 0-1000000"}},
      false,
      {"ifaces", "delay-us"}};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const inferno::Result<int64_t> delay_us = flags.Int("delay-us", 0, 0, 1000000);
  if (!delay_us) {
    std::fprintf(stderr, "frame_delay_relay: %s\n", delay_us.error().ToString().c_str());
    return 2;
  }
  std::vector<Port> ports;
  const std::string list = *flags.Last("ifaces");
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    ports.push_back({list.substr(start, comma - start), -1});
    start = comma + 1;
  }
  if (ports.size() < 2) {
    std::fprintf(stderr, "frame_delay_relay: --ifaces: give two or more interfaces, comma-separated\n");
    return 2;
  }
  for (Port& port : ports) {
    port.fd = OpenPort(port.name);
    if (port.fd < 0) return 1;
  }
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake within a microsecond of a frame's due time
  struct sigaction stop {};
  stop.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  return Relay(std::move(ports), *delay_us * 1000).Run();
}
