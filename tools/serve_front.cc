// serve_front: the front end of a `serve --failover` job whose leader may be
// lost (server/failover_front.h). Clients talk to it; it passes their
// requests to the leader's HTTP address and, when the leader is lost (killed,
// stopped or hung), continues every streamed answer at the new leader (a
// standby rank, or the next rank, each listening at its own --listen, or
// all at one fixed address), without a token lost or repeated:
//
//   L="--listen 127.0.0.1:8081 --listen 127.0.0.1:8082 --listen 127.0.0.1:8083 --listen 127.0.0.1:8084"
//   launch -n 3 --failover --standby 1 -- serve --failover --model M $L &
//   serve_front --listen 127.0.0.1:8080 ${L//--listen/--backend}
//
// (Across hosts each rank's address is its own host's: --listen
// 0.0.0.0:8081 once, and one --backend HOST:8081 per process.)
//
// It prints "serve_front: listening on http://HOST:PORT" once it listens;
// SIGTERM or SIGINT stops it: it stops accepting clients and exits once its
// open requests have ended (each bounded: by its answer, by --silence-ms of
// a silent leader, and by --failover-timeout-ms without one). Errors are one
// line.
#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstdio>

#include "base/command_line.h"
#include "server/failover_front.h"
#include "server/host_port.h"

namespace inferno {
namespace {

const CommandSpec kSpec{
    "serve_front",
    "--backend HOST:PORT [--backend HOST:PORT ...] [--listen HOST:PORT] [flags]",
    "The front end of a serve --failover job: passes the OpenAI API to the leader, one of the --backend "
    "addresses\n(the job's processes' --listen), and continues every streamed answer at the new leader, "
    "none of its tokens\nlost or repeated; a request that cannot be continued gets an error (event). SIGTERM "
    "stops it once its\nopen requests have ended.",
    {{"backend", "HOST:PORT",
      "a leader candidate's --listen address, once per process of the job in its order (ranks, then "
      "standby ranks), or the one fixed address (required; not port 0)"},
     {"listen", "HOST:PORT",
      "the address to serve clients on (default 127.0.0.1:8080; port 0: any free port)"},
     {"failover-timeout-ms", "N",
      "how long after a lost leader a request waits for a new one before it gets an error (default 30000)"},
     {"silence-ms", "N",
      "a leader silent this long (it sends a keep-alive each second) is taken for lost (default 3000)"},
     {"read-deadline-ms", "N",
      "a client's request must arrive within N ms of its first byte (default 10000)"},
     {"max-connections", "N", "client connections served at once; more get 503 (default 256)"},
     {"max-body-bytes", "N", "the largest request body accepted; larger get 413 (default 1 MiB)"}}};

int Fail(const Error& error) {
  std::fprintf(stderr, "serve_front: %s\n", error.ToString().c_str());
  return 2;
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, kSpec);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  FrontSettings settings;
  if (!flags.Has("backend"))
    return Fail(Error::InvalidArgument("--backend HOST:PORT is required: the leader's --listen"));
  for (const std::string& backend_flag : flags.All("backend")) {
    Result<HostPort> backend = ParseHostPort("backend", backend_flag);
    if (!backend) return Fail(backend.error());
    if (backend->port == 0) {
      return Fail(
          Error::InvalidArgument("--backend: port 0 is no address; give serve's --listen a fixed port"));
    }
    settings.backends.push_back(*backend);
  }
  Result<HostPort> listen = ParseHostPort("listen", flags.Last("listen").value_or("127.0.0.1:8080"));
  if (!listen) return Fail(listen.error());
  Result<int64_t> failover_timeout = flags.Int("failover-timeout-ms", 30000, 1, 3600 * 1000);
  Result<int64_t> silence = flags.Int("silence-ms", 3000, 1000, 3600 * 1000);
  Result<int64_t> read_deadline = flags.Int("read-deadline-ms", 10000, 1, 3600 * 1000);
  Result<int64_t> connections = flags.Int("max-connections", 256, 1, 1 << 16);
  Result<int64_t> body = flags.Int("max-body-bytes", 1 << 20, 1, int64_t{1} << 30);
  for (const Error* error :
       {failover_timeout ? nullptr : &failover_timeout.error(), silence ? nullptr : &silence.error(),
        read_deadline ? nullptr : &read_deadline.error(), connections ? nullptr : &connections.error(),
        body ? nullptr : &body.error()}) {
    if (error != nullptr) return Fail(*error);
  }
  settings.failover_timeout = std::chrono::milliseconds(*failover_timeout);
  settings.silence = std::chrono::milliseconds(*silence);
  settings.request_deadline = std::chrono::milliseconds(*read_deadline);
  settings.max_connections = static_cast<int>(*connections);
  settings.max_body_bytes = *body;
  FailoverFront front(settings);
  Result<int> port = front.Bind(listen->host, listen->port);
  if (!port) {
    std::fprintf(stderr, "serve_front: %s\n", port.error().ToString().c_str());
    return 1;
  }
  front.Start();
  std::printf("serve_front: listening on http://%s:%d\n", listen->host.c_str(), *port);
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::fprintf(stderr, "serve_front: got SIG%s; stopping\n", sigabbrev_np(signal));
  front.Stop();
  return 0;
}
