// HttpServer: cpp-httplib's Server (Debian's 0.11.4) with the two things a
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
// Everything else (routes, handlers, timeouts, keep-alive limits, the thread
// pool) is httplib's, set through its Server interface. A connection keeps
// one buffered stream for all its keep-alive requests.
//
// Thread-safety: as httplib::Server. ClientGone and RequestLate are about the
// connection of the calling thread: call them from a handler (a route, the
// error handler, or a response's content provider), which httplib runs on
// the thread that serves the connection.
#pragma once

#include <chrono>

#include <httplib.h>

namespace inferno {

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(std::chrono::milliseconds request_deadline);

  // Whether the client of the request being handled on this thread has
  // closed or reset its connection. False off a connection's thread.
  static bool ClientGone();
  // Whether reading the request being handled on this thread failed
  // because it did not arrive within the deadline (the client was too slow).
  static bool RequestLate();

  std::chrono::milliseconds request_deadline() const { return request_deadline_; }

 private:
  // Serves the keep-alive requests of one accepted connection, then closes it
  // (httplib's own loop, with the deadline and ClientGone's thread-local).
  bool process_and_close_socket(socket_t sock) override;

  const std::chrono::milliseconds request_deadline_;
};

}  // namespace inferno
