#include "server/http_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include <glog/logging.h>

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a connection waiting for its next request checks that the server
// still runs.
constexpr milliseconds kStopCheck{100};

// poll() for `events` on `fd` for at most `timeout`, retried on EINTR: the
// events that came (0 on timeout, -1 on error).
int Poll(int fd, short events, milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  for (;;) {
    pollfd entry{fd, events, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
    const int ready = poll(&entry, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (ready > 0) return entry.revents;
    if (ready == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

// The numeric address of `fd`'s peer (or its own), as httplib reports it.
void Address(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? getpeername(fd, raw, &length) : getsockname(fd, raw, &length)) != 0) return;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> service{};
  if (getnameinfo(raw, length, host.data(), host.size(), service.data(), service.size(),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  ip = host.data();
  port = std::atoi(service.data());
}

// One accepted connection as httplib's Stream: buffered reads (httplib reads
// request lines a byte at a time), each read waiting at most the read timeout
// and never past the current request's deadline.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, milliseconds read_timeout, milliseconds write_timeout)
      : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  // Waits (at most `idle`) for the next request's first byte; false when none
  // came, the client closed, or `server_socket` was closed (the server stops).
  bool WaitForRequest(milliseconds idle, const std::atomic<socket_t>& server_socket) const {
    if (begin_ < end_) return true;
    const Clock::time_point until = Clock::now() + idle;
    while (server_socket != INVALID_SOCKET) {
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
      if (left.count() <= 0) return false;
      const int events = Poll(fd_, POLLIN, std::min(left, kStopCheck));
      if (events < 0) return false;
      if (events != 0) return true;
    }
    return false;
  }

  // Reads of the request starting now fail after `deadline`.
  void StartRequest(Clock::time_point deadline) {
    deadline_ = deadline;
    late_ = false;
  }
  // A read of the current request failed for want of time.
  bool late() const { return late_; }
  // A write failed: the client is gone or does not read.
  bool broken() const { return broken_; }

  bool is_readable() const override {
    if (begin_ < end_) return true;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
    const int events = left.count() > 0 ? Poll(fd_, POLLIN, std::min(left, read_timeout_)) : 0;
    if (events == 0) late_ = true;
    return events > 0;
  }

  bool is_writable() const override {
    const int events = Poll(fd_, POLLOUT, write_timeout_);
    return events > 0 && (events & (POLLERR | POLLHUP)) == 0;
  }

  ssize_t read(char* out, size_t size) override {
    if (begin_ == end_) {
      if (!is_readable()) return -1;
      ssize_t got;
      do {
        got = recv(fd_, buffer_.data(), buffer_.size(), 0);
      } while (got < 0 && errno == EINTR);
      if (got <= 0) return got;
      begin_ = 0;
      end_ = static_cast<size_t>(got);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(out, buffer_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* data, size_t size) override {
    ssize_t sent = -1;
    if (is_writable()) {
      do {
        sent = send(fd_, data, size, MSG_NOSIGNAL);
      } while (sent < 0 && errno == EINTR);
    }
    if (sent < 0) broken_ = true;
    return sent;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  const int fd_;
  const milliseconds read_timeout_;
  const milliseconds write_timeout_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool late_ = false;
  bool broken_ = false;
  std::array<char, 4096> buffer_{};
  size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t end_ = 0;
};

// The connection this thread serves, if any.
thread_local const ConnectionStream* current_connection = nullptr;

// Whether the accepted connection httplib's task is about to process on this
// thread (the accepting one) is over the limit, to be refused.
thread_local bool refusing_connection = false;

// HttpServer's task queue: httplib gives it a task per accepted connection,
// on the accepting thread. While fewer than `max_connections` are open, it
// counts the connection in `open` and gives the task to its pool of
// `max_connections` threads, so a thread is free for it (HttpServer counts
// a connection out just before it closes it: the task may wait the moment
// the thread takes to return); otherwise it runs the task at once on the
// accepting thread, marked to be refused.
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(int max_connections, std::atomic<int>& open)
      : max_connections_(max_connections), open_(open), pool_(static_cast<size_t>(max_connections)) {}

  void enqueue(std::function<void()> task) override {
    // Only this thread counts connections in, so `open` stays within the limit.
    if (open_ >= max_connections_) {
      refusing_connection = true;
      task();
      refusing_connection = false;
      return;
    }
    ++open_;
    pool_.enqueue(std::move(task));
  }

  void shutdown() override { pool_.shutdown(); }

 private:
  const int max_connections_;
  std::atomic<int>& open_;
  httplib::ThreadPool pool_;
};

// Sends `response` to a connection over the limit without waiting (a new
// socket's send buffer holds it), reads and drops what the client has sent
// by now (a bounded amount), and closes it.
void Refuse(int fd, const std::string& response) {
  (void)send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  shutdown(fd, SHUT_WR);
  std::array<char, 4096> dropped;
  for (int reads = 0; reads < 16; ++reads) {
    if (recv(fd, dropped.data(), dropped.size(), MSG_DONTWAIT) <= 0) break;
  }
  close(fd);
}

}  // namespace

HttpServer::HttpServer(std::chrono::milliseconds request_deadline, int max_connections)
    : request_deadline_(request_deadline), max_connections_(max_connections) {
  CHECK_GE(max_connections, 1);
  new_task_queue = [this] { return new ConnectionQueue(max_connections_, open_connections_); };
  set_refusal("too many connections\n", "text/plain");
}

bool HttpServer::bind_to_port(const std::string& host, int port, int socket_flags) {
  if (!httplib::Server::bind_to_port(host, port, socket_flags)) return false;
  WidenBacklog();
  return true;
}

int HttpServer::bind_to_any_port(const std::string& host, int socket_flags) {
  const int port = httplib::Server::bind_to_any_port(host, socket_flags);
  if (port >= 0) WidenBacklog();
  return port;
}

void HttpServer::WidenBacklog() {
  // listen() on a listening socket only changes its backlog.
  PCHECK(::listen(svr_sock_, SOMAXCONN) == 0) << "listen on the bound HTTP socket";
}

void HttpServer::set_refusal(const std::string& body, const std::string& content_type) {
  refusal_ = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + content_type +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

bool HttpServer::ClientGone() {
  if (current_connection == nullptr) return false;
  if (current_connection->broken()) return true;
  char byte;
  const ssize_t got = recv(current_connection->socket(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0) return true;  // an orderly close
  return got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

bool HttpServer::RequestLate() { return current_connection != nullptr && current_connection->late(); }

bool HttpServer::process_and_close_socket(socket_t sock) {
  if (refusing_connection) {
    ++refused_connections_;
    Refuse(sock, refusal_);
    return false;
  }
  const auto seconds = [](time_t sec, time_t usec) { return milliseconds(sec * 1000 + usec / 1000); };
  ConnectionStream stream(sock, seconds(read_timeout_sec_, read_timeout_usec_),
                          seconds(write_timeout_sec_, write_timeout_usec_));
  current_connection = &stream;
  bool served = false;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!stream.WaitForRequest(seconds(keep_alive_timeout_sec_, 0), svr_sock_)) break;
    stream.StartRequest(Clock::now() + request_deadline_);
    bool connection_closed = false;
    served = process_request(stream, left == 1, connection_closed, nullptr);
    if (!served || connection_closed || stream.late() || stream.broken()) break;
  }
  current_connection = nullptr;
  // Counted out first, so a client that sees the close can connect again.
  --open_connections_;
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return served;
}

}  // namespace inferno
