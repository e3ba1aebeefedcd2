// FailoverFront: the front end `serve_front` runs before a `serve
// --failover` job, so that a client's answer outlives the job's leader. It
// listens for the clients and passes each request to the leader's HTTP
// address, one of `backends`: the candidates' addresses (each process of
// the job listens at its own --listen when it leads, see
// docs/reliability.md; or one fixed address the next leader listens at
// again). When the leader is lost mid-answer (its connection breaks, or it
// says nothing, not even its 1 s keep-alive, for `silence`: a stopped
// leader; an answer sent whole: for 10 minutes, or its /health goes
// unanswered twice, asked every second), the front end looks for the
// new leader (the first candidate, from the one after the lost, whose
// /health answers 200 within 500 ms; asked every 100 ms until one does, so
// no try waits on a stopped leader) and sends the request again until a
// new leader takes it, at most `failover_timeout` after the loss:
// - a streamed request (server/continuation.h) continues: the front end
//   remembers the ids of the tokens whose chunks it has passed on and asks
//   the new leader to continue from them, under the same id; the client
//   sees one stream, no token repeated or lost;
// - a request answered whole is sent again whole.
// A request the front end cannot continue gets a clear error (an error
// event in a stream, 503 otherwise) naming the backend, never a hang.
// Before the first loss of a request, the leader's answers pass unchanged
// (a streamed request's non-200 answer arrives as an error event: the
// stream's 200 has been sent). GET requests (/health, /metrics, /v1/models)
// go to the leader (once more to the next one found, when it cannot be
// reached).
//
// Thread-safety: Bind and Start once from one thread; Stop from any: it
// stops accepting and returns once the open requests have ended (each
// bounded as above). Requests are served on the server's own threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "server/host_port.h"

namespace inferno {

class HttpServer;

struct FrontSettings {
  // The leader candidates' HTTP addresses (at least one); the first leads
  // at the start.
  std::vector<HostPort> backends;
  // How long after a lost leader the front end waits for a new one.
  std::chrono::milliseconds failover_timeout{30000};
  // A leader that sends nothing for this long is taken for lost.
  std::chrono::milliseconds silence{3000};
  std::chrono::milliseconds request_deadline{10000};  // as serve's --read-deadline-ms
  int max_connections = 256;
  int64_t max_body_bytes = 1 << 20;
};

class FailoverFront {
 public:
  explicit FailoverFront(FrontSettings settings);
  ~FailoverFront();

  // Binds host:port (0: a free one) and returns the port. Errors: Io.
  Result<int> Bind(const std::string& host, int port);
  // Serves on its own thread until Stop.
  void Start();
  void Stop();

 private:
  struct Forwarder;

  FrontSettings settings_;
  std::atomic<size_t> leader_{0};  // the index in backends of the leader last found
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
};

}  // namespace inferno
