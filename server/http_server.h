// HttpServer: cpp-httplib's Server (Debian's 0.11.4) with the four things a
// server of long requests needs and that version lacks:
// - a deadline for receiving a whole request: its line, headers and body
//   must arrive within `request_deadline` of its first byte. httplib's read
//   timeout is per read, so a client sending a byte a second would hold a
//   handler thread for ever; here it is cut off at the deadline (the error
//   handler sees RequestLate(), and answers 408; a request line that never
//   ends gets no answer) and its connection closed.
// - a way for a handler to ask whether its client is still connected
//   (ClientGone), so a request whose client left can be cancelled while it
//   waits for its answer, streamed or not.
// - a limit on connections: each connection is served by a thread of its
//   own, from a pool of `max_connections` threads; a connection accepted
//   while that many are open is answered at once, without its request being
//   read, with the response set_refusal gives (by default 503 with a short
//   text), `Connection: close`, and closed. httplib would queue it until a
//   thread came free, which for a server of long streams can be for ever.
//   What the refused client has sent by then is read and dropped first, so
//   the close is orderly; what it sends later meets a reset, after the
//   answer.
// - a listen backlog of SOMAXCONN (the kernel caps it at
//   net.core.somaxconn): Debian's build listens with a backlog of 5, so a
//   burst of clients connecting at once (16 streams opened together) had
//   all but the first few wait for the kernel's handshake retries, seconds
//   each, before the accepting thread saw them.
// Everything else (routes, handlers, timeouts, keep-alive limits) is
// httplib's, set through its Server interface; set no new_task_queue, the
// limit is that task queue. A connection keeps one buffered stream for all
// its keep-alive requests.
//
// Thread-safety: as httplib::Server. ClientGone and RequestLate are about the
// connection of the calling thread: call them from a handler (a route, the
// error handler, or a response's content provider), which httplib runs on
// the thread that serves the connection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include <httplib.h>

namespace inferno {

class HttpServer : public httplib::Server {
 public:
  // Precondition: max_connections >= 1.
  HttpServer(std::chrono::milliseconds request_deadline, int max_connections);

  // httplib's binds (`port` 0 or bind_to_any_port: a free port), listening
  // with the backlog above: the port bound, or -1 / false if it cannot be.
  bool bind_to_port(const std::string& host, int port, int socket_flags = 0);
  int bind_to_any_port(const std::string& host, int socket_flags = 0);

  // The answer to a connection over the limit: a 503 with this body and
  // content type. Call before listening.
  void set_refusal(const std::string& body, const std::string& content_type);

  // Whether the client of the request being handled on this thread has
  // closed or reset its connection. False off a connection's thread.
  static bool ClientGone();
  // Whether reading the request being handled on this thread failed
  // because it did not arrive within the deadline (the client was too slow).
  static bool RequestLate();

  std::chrono::milliseconds request_deadline() const { return request_deadline_; }
  // Connections refused so far for being over the limit.
  int64_t refused_connections() const { return refused_connections_; }

 private:
  // Serves the keep-alive requests of one accepted connection, then closes it
  // (httplib's own loop, with the deadline and ClientGone's thread-local);
  // or, for a connection over the limit, sends the refusal and closes it.
  bool process_and_close_socket(socket_t sock) override;
  // Listens again on the bound socket with the wider backlog.
  void WidenBacklog();

  const std::chrono::milliseconds request_deadline_;
  const int max_connections_;
  std::atomic<int> open_connections_{0};  // being served: given a thread and not yet closed
  std::atomic<int64_t> refused_connections_{0};
  std::string refusal_;  // the whole response to a connection over the limit
};

}  // namespace inferno
