#include "server/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// An HttpServer on a free loopback port, serving on its own thread.
class RunningServer {
 public:
  explicit RunningServer(milliseconds deadline, int max_connections = 16)
      : server(deadline, max_connections) {
    server.set_read_timeout(std::chrono::seconds(10));
    server.set_keep_alive_timeout(2);
    server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (HttpServer::RequestLate()) res.status = 408;
      res.set_content("error " + std::to_string(res.status), "text/plain");
    });
  }
  void Bind() {
    port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
  }
  // Binds first unless Bind was called.
  void Start() {
    if (port == 0) Bind();
    ASSERT_GT(port, 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    const Clock::time_point until = Clock::now() + std::chrono::seconds(10);
    while (!server.is_running() && Clock::now() < until) std::this_thread::sleep_for(milliseconds(1));
    ASSERT_TRUE(server.is_running()) << "the server did not start listening within 10 s";
  }
  ~RunningServer() {
    server.stop();
    if (thread.joinable()) thread.join();
  }

  HttpServer server;
  int port = 0;
  std::thread thread;
};

// A raw TCP connection to 127.0.0.1:port (receives time out after 10 s).
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

void Send(int fd, const std::string& bytes) {
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// Everything the server sends until it closes the connection (or 10 s pass).
std::string ReadToEnd(int fd) {
  std::string all;
  char buffer[4096];
  ssize_t got;
  while ((got = recv(fd, buffer, sizeof buffer, 0)) > 0) all.append(buffer, static_cast<size_t>(got));
  return all;
}

TEST(HttpServer, ServesKeepAliveRequestsOnOneConnection) {
  RunningServer running(milliseconds(2000));
  running.server.Get(
      "/hi", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  running.Start();
  httplib::Client client("127.0.0.1", running.port);
  client.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    httplib::Result result = client.Get("/hi");
    ASSERT_TRUE(result) << httplib::to_string(result.error());
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, "hello");
  }
}

TEST(HttpServer, ClientTricklingHeadersGets408AtTheDeadlineWhileOthersAreServed) {
  RunningServer running(milliseconds(500));
  running.server.Get(
      "/hi", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  running.Start();
  const int slow = Connect(running.port);
  Send(slow, "GET /hi HTTP/1.1\r\n");
  std::future<std::string> answer = std::async(std::launch::async, [slow] {
    // A header byte every 50 ms (3 s for all): each read is quick, the whole
    // is not. Stops sending once the server answers.
    for (char byte :
         std::string("Host: x\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n")) {
      if (send(slow, &byte, 1, MSG_NOSIGNAL) != 1) break;
      pollfd answered{slow, POLLIN, 0};
      if (poll(&answered, 1, 50) != 0) break;
    }
    return ReadToEnd(slow);
  });
  httplib::Client client("127.0.0.1", running.port);
  httplib::Result result = client.Get("/hi");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  const std::string slow_answer = answer.get();
  // Without the deadline all of it would arrive, and get 200.
  EXPECT_EQ(slow_answer.rfind("HTTP/1.1 408 ", 0), 0u) << slow_answer;
  close(slow);
}

TEST(HttpServer, RequestLineThatNeverEndsIsClosedWithoutAnswer) {
  RunningServer running(milliseconds(300));
  running.Start();
  const int slow = Connect(running.port);
  Send(slow, "GET /");
  // The server closes: ReadToEnd returns before its 10 s receive timeout.
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(ReadToEnd(slow), "");
  EXPECT_LT(Clock::now() - start, milliseconds(9000));
  close(slow);
}

TEST(HttpServer, HandlerSeesItsClientLeaveAndNotOneThatStays) {
  // Declared before the server, so that they outlive its handlers.
  std::promise<void> reporting_handler_started;
  std::promise<bool> gone_seen;
  RunningServer running(milliseconds(2000));
  running.server.Get("/wait", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("report")) reporting_handler_started.set_value();
    // Waits up to `ms` for the client to leave.
    const Clock::time_point until = Clock::now() + milliseconds(std::stoi(req.get_param_value("ms")));
    bool gone = false;
    while (!gone && Clock::now() < until) {
      gone = HttpServer::ClientGone();
      std::this_thread::sleep_for(milliseconds(10));
    }
    if (req.has_param("report")) gone_seen.set_value(gone);
    res.set_content(gone ? "gone" : "here", "text/plain");
  });
  running.Start();
  EXPECT_FALSE(HttpServer::ClientGone());  // not a handler's thread

  httplib::Client client("127.0.0.1", running.port);
  httplib::Result stayed = client.Get("/wait?ms=300");
  ASSERT_TRUE(stayed) << httplib::to_string(stayed.error());
  EXPECT_EQ(stayed->body, "here");

  const int leaving = Connect(running.port);
  Send(leaving, "GET /wait?ms=10000&report=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  // The client leaves once its request is being handled.
  ASSERT_EQ(reporting_handler_started.get_future().wait_for(std::chrono::seconds(9)),
            std::future_status::ready);
  close(leaving);
  std::future<bool> seen = gone_seen.get_future();
  ASSERT_EQ(seen.wait_for(std::chrono::seconds(9)), std::future_status::ready);
  EXPECT_TRUE(seen.get());
}

// With the limit's connections held by handlers that wait, one more is
// answered 503 at once (httplib alone would queue it until a thread came
// free), and the held ones then complete; a connection after them is served.
TEST(HttpServer, ConnectionOverTheLimitGets503AtOnceWhileTheOthersComplete) {
  constexpr int kLimit = 3;
  RunningServer running(milliseconds(2000), kLimit);
  running.server.set_refusal("{\"error\": \"busy\"}", "application/json");
  std::mutex mutex;
  std::condition_variable changed;
  int holding = 0;
  bool release = false;
  running.server.Get("/hold", [&](const httplib::Request&, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mutex);
    ++holding;
    changed.notify_all();
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return release; });
    res.set_content("held", "text/plain");
  });
  running.server.Get(
      "/hi", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  running.Start();
  std::vector<int> held;
  for (int i = 0; i < kLimit; ++i) {
    held.push_back(Connect(running.port));
    Send(held.back(), "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return holding == kLimit; }));
  }

  EXPECT_EQ(running.server.refused_connections(), 0);
  const int extra = Connect(running.port);
  Send(extra, "GET /hi HTTP/1.1\r\nHost: x\r\n\r\n");
  const Clock::time_point start = Clock::now();
  const std::string refused = ReadToEnd(extra);
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  close(extra);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("Content-Type: application/json\r\n"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Connection: close\r\n"), std::string::npos) << refused;
  EXPECT_EQ(refused.substr(refused.size() - std::min<size_t>(refused.size(), 17)), "{\"error\": \"busy\"}");
  EXPECT_EQ(running.server.refused_connections(), 1);

  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  changed.notify_all();
  for (int fd : held) {
    shutdown(fd, SHUT_WR);  // the server closes once it has answered
    const std::string answer = ReadToEnd(fd);
    close(fd);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << answer;
    EXPECT_EQ(answer.substr(answer.size() - std::min<size_t>(answer.size(), 4)), "held");
  }
  httplib::Client client("127.0.0.1", running.port);
  httplib::Result after = client.Get("/hi");
  ASSERT_TRUE(after) << httplib::to_string(after.error());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(running.server.refused_connections(), 1);
}

// This process's listening TCP socket on `port`, or -1.
int ListeningSocket(int port) {
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return -1;
  int found = -1;
  while (const dirent* entry = readdir(fds)) {
    const int fd = atoi(entry->d_name);
    sockaddr_in address{};
    socklen_t length = sizeof address;
    int accepting = 0;
    socklen_t flag_length = sizeof accepting;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
        address.sin_family == AF_INET && ntohs(address.sin_port) == port &&
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &flag_length) == 0 && accepting == 1) {
      found = fd;
    }
  }
  closedir(fds);
  return found;
}

TEST(HttpServer, BurstOfConnectionsWaitsInTheAcceptQueueNotForHandshakeRetries) {
  // 64 clients connect before the server accepts any. Each whose handshake
  // the kernel completes waits in the listening socket's accept queue; with
  // httplib's backlog of 5 only 6 would, the others' handshakes being
  // dropped and retried seconds later.
  constexpr int kClients = 64;
  RunningServer running(milliseconds(5000), kClients);
  running.server.Get(
      "/hi", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  running.Bind();
  const int listening = ListeningSocket(running.port);
  ASSERT_GE(listening, 0) << "no listening socket on port " << running.port;
  // Connected without waiting: a handshake the kernel drops would block a
  // plain connect() for seconds.
  std::vector<int> clients;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(running.port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    const int connected = connect(clients.back(), reinterpret_cast<sockaddr*>(&address), sizeof address);
    ASSERT_TRUE(connected == 0 || errno == EINPROGRESS) << strerror(errno);
  }
  // For a listening socket, TCP_INFO's tcpi_unacked is the accept queue's
  // length and tcpi_sacked its limit.
  tcp_info info{};
  const Clock::time_point until = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    socklen_t length = sizeof info;
    ASSERT_EQ(getsockopt(listening, IPPROTO_TCP, TCP_INFO, &info, &length), 0);
    if (info.tcpi_unacked == kClients || Clock::now() > until) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  if (info.tcpi_unacked != kClients) {
    for (int fd : clients) close(fd);
    FAIL() << info.tcpi_unacked << " of " << kClients << " connections in the accept queue; backlog "
           << info.tcpi_sacked;
  }
  for (int fd : clients) {
    ASSERT_EQ(fcntl(fd, F_SETFL, 0), 0);
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }

  running.Start();
  for (int fd : clients) Send(fd, "GET /hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  for (int fd : clients) {
    const std::string answer = ReadToEnd(fd);
    close(fd);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << answer;
  }
}

}  // namespace
}  // namespace inferno
