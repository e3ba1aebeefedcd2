// CURVE encryption and ZAP authentication for the ZeroMQ sockets of a secured
// job: one whose ranks share a JobSecret (see distributed/job_secret.h).
//
// Every rank derives the same CURVE key pair from the secret (CurveKeys, see
// curve_keys.h). Every listening socket is a CURVE server with that pair;
// every connecting socket is a CURVE client that presents the same pair and
// expects the server to hold it. CURVE by itself admits any client that knows
// the server's public key (which is not a secret), so each ZeroMQ context of a
// secured job also runs a ZapHandler, which admits only clients presenting
// the job's public key. A process without the secret therefore never
// completes a handshake: it can neither send a frame nor join the rendezvous,
// nor read the job's traffic.
//
//   CurveKeys keys = DeriveCurveKeys(secret);
//   auto zap = ZapHandler::Start(context, keys, "rank 2");  // before any bind
//   MakeCurveServer(router, keys);  router.bind(...);
//   MakeCurveClient(dealer, keys);  dealer.connect(...);
//
// Thread-safety: the Make* functions are free functions (the socket passed
// must not be in use by another thread); a ZapHandler answers on its own
// thread, and denied() may be read from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "base/error.h"
#include "distributed/job_secret.h"
#include "distributed/zmq/curve_keys.h"
#include "distributed/zmq/drop_log.h"

namespace inferno {

// Makes `socket` (before it binds) a CURVE server with the job's key pair.
// Throws zmq::error_t, like the cppzmq calls around it.
void MakeCurveServer(zmq::socket_t& socket, const CurveKeys& keys);

// Makes `socket` (before it connects) a CURVE client holding the job's key
// pair that accepts only a server holding it too. Throws zmq::error_t.
void MakeCurveClient(zmq::socket_t& socket, const CurveKeys& keys);

// Answers ZeroMQ's authentication requests (ZAP, RFC 27) for every CURVE
// server socket of one context: a client presenting the job's public key is
// admitted, any other is refused with one LOG(WARNING) line naming its
// address (rate-limited per address: see drop_log.h). Not movable; destroy it (or let the context shut down)
// to stop it.
class ZapHandler {
 public:
  // Binds the context's ZAP endpoint and starts answering. Call before any
  // socket of `context` binds: until a handler is bound, ZeroMQ lets every
  // CURVE client in. `owner` names the sockets' owner in log lines ("rank
  // 2"). At most one handler per context. Errors: Transport (the endpoint is
  // taken, e.g. a second handler on the context).
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context, const CurveKeys& keys,
                                                   std::string owner);

  // Stops answering (within about 50 ms) and joins the thread. Must run
  // before the context is destroyed, which waits for the handler's socket;
  // shutting the context down first is fine (the handler then stops at once).
  ~ZapHandler();

  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // How many handshakes were refused so far.
  int denied() const;

 private:
  ZapHandler(zmq::socket_t socket, std::string allowed_key, std::string owner);
  void Serve();
  void Answer();

  zmq::socket_t socket_;     // used only by thread_ once started
  std::string allowed_key_;  // the job's public key, 32 binary bytes
  std::string owner_;
  DropLog refusals_;  // "<owner> refused a connection from ..." lines
  std::atomic<bool> stopping_{false};
  std::atomic<int> denied_{0};
  std::thread thread_;
};

}  // namespace inferno
