// stranger: a hostile process for the process-level stranger test. For
// DURATION_MS it repeatedly attacks every ENDPOINT (tcp://host:port or
// ipc:///path of a running rank) the ways a port scanner, a buggy client or a
// rank of another job would:
//   silent     connections held open for the whole run, sending nothing
//   garbage    raw bytes that are not ZeroMQ (random bytes, an HTTP request)
//   oversized  a ZMTP 3.0 handshake followed by a frame whose 8-byte length
//              field claims 2^62 bytes; and, over ZeroMQ, one message part
//              larger than kMaxChunkBytes + header (above ZMQ_MAXMSGSIZE)
//   foreign    over ZeroMQ: a one-part message, an undecodable header, a
//              well-formed frame of another job, and a frame claiming to be
//              rank 1 with a payload shorter than its header says
// With --flood, it instead sends every ENDPOINT, from one DEALER each, as many
// 64-byte two-part messages as it can for DURATION_MS, then closes at once
// (linger 0) with messages still queued: the attack that made libzmq 4.3.4
// abort a rank with "Assertion failed: !_io_error".
// It is deliberately a ZeroMQ peer of its own (it includes zmq.hpp): it plays
// a foreign process, not part of the project's transport.
//
// With --curve-server-key KEY (a secured job's public key, which is no
// secret), its ZeroMQ connections are CURVE clients of that server with a key
// pair of their own: the strongest stranger short of one holding the secret.
//
// Usage: stranger [--curve-server-key KEY] [--flood] DURATION_MS ENDPOINT...
// Prints one summary line of attacks made; exits 0 (2 on bad arguments).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "base/command_line.h"
#include "distributed/frame_header.h"

namespace {

using Clock = std::chrono::steady_clock;

// Opens a stream socket to `endpoint` (tcp://a.b.c.d:port or ipc:///path);
// -1 on failure.
int ConnectRaw(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) == 0) {
    const std::string rest = endpoint.substr(6);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(std::atoi(rest.c_str() + colon + 1)));
    if (inet_pton(AF_INET, rest.substr(0, colon).c_str(), &address.sin_addr) != 1) return -1;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  if (endpoint.rfind("ipc://", 0) == 0) {
    const std::string path = endpoint.substr(6);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() + 1 > sizeof(address.sun_path)) return -1;
    std::memcpy(address.sun_path, path.data(), path.size());
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  return -1;
}

// Writes `bytes` to a fresh raw connection and closes it; false if the
// connection failed.
bool SendRaw(const std::string& endpoint, const std::string& bytes) {
  const int fd = ConnectRaw(endpoint);
  if (fd < 0) return false;
  (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  close(fd);
  return true;
}

// A ZMTP 3.0 greeting (NULL mechanism), a READY command for a DEALER, then
// the start of a message frame whose 64-bit length claims 2^62 bytes.
std::string OversizedZmtpFrame() {
  std::string bytes;
  bytes += '\xFF';
  bytes += std::string(8, '\0');
  bytes += '\x7F';
  bytes += '\x03';
  bytes += '\x00';
  std::string mechanism = "NULL";
  mechanism.resize(20, '\0');
  bytes += mechanism;
  bytes += '\0';                   // as-server
  bytes += std::string(31, '\0');  // filler
  const std::string property_name = "Socket-Type", property_value = "DEALER";
  std::string ready;
  ready += static_cast<char>(5);
  ready += "READY";
  ready += static_cast<char>(property_name.size());
  ready += property_name;
  ready += std::string(3, '\0');
  ready += static_cast<char>(property_value.size());
  ready += property_value;
  bytes += '\x04';  // command, short size
  bytes += static_cast<char>(ready.size());
  bytes += ready;
  bytes += '\x02';  // message, long size
  bytes += '\x40';  // 0x4000000000000000 big-endian
  bytes += std::string(7, '\0');
  bytes += std::string(4096, 'A');
  return bytes;
}

zmq::const_buffer Bytes(const inferno::EncodedFrameHeader& header) {
  return zmq::const_buffer(header.data(), header.size());
}

// A DEALER that, given a server key, is a CURVE client with a fresh key pair.
zmq::socket_t StrangerDealer(zmq::context_t& context, const std::string& curve_server_key) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  if (!curve_server_key.empty()) {
    char public_key[41], secret_key[41];
    if (zmq_curve_keypair(public_key, secret_key) != 0) throw zmq::error_t();
    dealer.set(zmq::sockopt::curve_serverkey, curve_server_key);
    dealer.set(zmq::sockopt::curve_publickey, public_key);
    dealer.set(zmq::sockopt::curve_secretkey, secret_key);
  }
  return dealer;
}

// One round of ZeroMQ-level attacks on `endpoint` from a fresh DEALER.
void SendForeignFrames(zmq::context_t& context, const std::string& endpoint,
                       const std::string& curve_server_key, std::mt19937_64& random) {
  zmq::socket_t dealer = StrangerDealer(context, curve_server_key);
  dealer.set(zmq::sockopt::linger, 200);
  dealer.set(zmq::sockopt::sndtimeo, 200);
  dealer.connect(endpoint);
  const auto send = [&](zmq::const_buffer part, zmq::send_flags flags) {
    try {
      (void)dealer.send(part, flags);
    } catch (const zmq::error_t&) {
      // The rank closed this connection: exactly what it should do.
    }
  };
  send(zmq::str_buffer("one part only"), zmq::send_flags::none);
  send(zmq::str_buffer("not a header"), zmq::send_flags::sndmore);
  send(zmq::str_buffer("payload"), zmq::send_flags::none);

  inferno::FrameHeader foreign;
  foreign.job_id = random();
  foreign.source_rank = 0;
  foreign.tag = 0x66;
  foreign.message_length = 8;
  foreign.payload_length = 8;
  const inferno::EncodedFrameHeader foreign_bytes = inferno::EncodeFrameHeader(foreign);
  send(Bytes(foreign_bytes), zmq::send_flags::sndmore);
  send(zmq::str_buffer("12345678"), zmq::send_flags::none);

  inferno::FrameHeader short_payload = foreign;
  short_payload.source_rank = 1;
  short_payload.message_length = 1 << 20;
  short_payload.payload_length = 1 << 20;
  const inferno::EncodedFrameHeader short_bytes = inferno::EncodeFrameHeader(short_payload);
  send(Bytes(short_bytes), zmq::send_flags::sndmore);
  send(zmq::str_buffer("evil"), zmq::send_flags::none);

  const std::string too_big(inferno::kMaxChunkBytes + inferno::kFrameHeaderBytes + 1, 'Z');
  send(zmq::buffer(too_big), zmq::send_flags::none);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Floods every endpoint, each from its own thread and DEALER, with 64-byte
// two-part messages until `until`, then closes every connection at once;
// returns how many messages were queued.
long Flood(zmq::context_t& context, const std::vector<std::string>& endpoints,
           const std::string& curve_server_key, Clock::time_point until) {
  std::vector<long> sent(endpoints.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    threads.emplace_back([&, i] {
      zmq::socket_t dealer = StrangerDealer(context, curve_server_key);
      dealer.set(zmq::sockopt::sndhwm, 100000);
      dealer.set(zmq::sockopt::sndtimeo, 100);
      dealer.set(zmq::sockopt::linger, 0);  // close abruptly
      dealer.connect(endpoints[i]);
      const std::string part(32, 'F');
      while (Clock::now() < until) {
        (void)dealer.send(zmq::buffer(part), zmq::send_flags::sndmore);
        sent[i] += dealer.send(zmq::buffer(part), zmq::send_flags::none).has_value();
      }
      dealer.close();
    });
  }
  long total = 0;
  for (size_t i = 0; i < threads.size(); ++i) {
    threads[i].join();
    total += sent[i];
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const inferno::CommandSpec spec{
      "stranger",
      "[--curve-server-key KEY] [--flood] DURATION_MS ENDPOINT...",
      "Attacks every ENDPOINT of a running job for DURATION_MS, as a hostile process would.",
      {{"curve-server-key", "KEY", "connect over ZeroMQ as a CURVE client of this server key (Z85)"},
       {"flood", "", "flood every endpoint with small messages, then close at once"}},
      /*takes_command=*/true};
  const inferno::CommandLine flags = inferno::ParseCommandLineOrExit(argc, argv, spec);
  const std::vector<std::string>& arguments = flags.command();
  const int duration_ms = arguments.empty() ? 0 : std::atoi(arguments.front().c_str());
  if (arguments.size() < 2 || duration_ms <= 0) {
    std::fprintf(stderr,
                 "stranger: expected DURATION_MS (> 0) and at least one ENDPOINT (see stranger --help)\n");
    return 2;
  }
  const std::string curve_server_key = flags.Last("curve-server-key").value_or("");
  const bool flood = flags.Has("flood");
  const auto until = Clock::now() + std::chrono::milliseconds(duration_ms);
  const std::vector<std::string> endpoints(arguments.begin() + 1, arguments.end());
  std::mt19937_64 random(std::random_device{}());
  zmq::context_t context(1);
  if (flood) {
    const long sent = Flood(context, endpoints, curve_server_key, until);
    std::printf("stranger: flooded %zu endpoints with %ld messages, then closed\n", endpoints.size(), sent);
    return 0;
  }

  std::vector<int> silent;
  std::vector<zmq::socket_t> silent_dealers;
  for (const std::string& endpoint : endpoints) {
    if (const int fd = ConnectRaw(endpoint); fd >= 0) silent.push_back(fd);
    silent_dealers.push_back(StrangerDealer(context, curve_server_key));
    silent_dealers.back().set(zmq::sockopt::linger, 0);
    silent_dealers.back().connect(endpoint);
  }

  long rounds = 0, refused = 0;
  while (Clock::now() < until) {
    for (const std::string& endpoint : endpoints) {
      std::string garbage(1 + random() % 2048, '\0');
      for (char& c : garbage) c = static_cast<char>(random());
      refused += !SendRaw(endpoint, garbage);
      refused += !SendRaw(endpoint, "GET / HTTP/1.0\r\n\r\n");
      refused += !SendRaw(endpoint, OversizedZmtpFrame());
      SendForeignFrames(context, endpoint, curve_server_key, random);
    }
    ++rounds;
  }
  for (const int fd : silent) close(fd);
  std::printf("stranger: %ld rounds on %zu endpoints, %zu silent connections, %ld raw connections refused\n",
              rounds, endpoints.size(), silent.size() + silent_dealers.size(), refused);
  return 0;
}
