#include "distributed/zmq/curve_auth.h"

#include <chrono>
#include <utility>
#include <vector>

#include <glog/logging.h>

namespace inferno {
namespace {

// ZeroMQ sends authentication requests of every socket in a context here.
constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

// The ZAP domain of the job's server sockets.
constexpr char kZapDomain[] = "inferno";

// How long the handler waits for a request before checking whether to stop;
// bounds how long destroying a ZapHandler takes.
constexpr std::chrono::milliseconds kPollInterval{50};

// A ZAP request's frames: version, request id, domain, address, routing id,
// mechanism, then one credential frame for CURVE (the client's public key).
constexpr size_t kCurveRequestFrames = 7;

}  // namespace

void MakeCurveServer(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, kZapDomain);
}

void MakeCurveClient(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context, const CurveKeys& keys,
                                                      std::string owner) {
  std::string allowed_key(32, '\0');
  CHECK(zmq_z85_decode(reinterpret_cast<uint8_t*>(allowed_key.data()), keys.public_key.c_str()) != nullptr)
      << "not a Z85 key";
  try {
    zmq::socket_t socket(context, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    return std::unique_ptr<ZapHandler>(
        new ZapHandler(std::move(socket), std::move(allowed_key), std::move(owner)));
  } catch (const zmq::error_t& error) {
    return Error::Transport(owner + ": cannot start the CURVE authentication handler at " + kZapEndpoint +
                            ": " + error.what());
  }
}

ZapHandler::ZapHandler(zmq::socket_t socket, std::string allowed_key, std::string owner)
    : socket_(std::move(socket)),
      allowed_key_(std::move(allowed_key)),
      owner_(std::move(owner)),
      refusals_(owner_, "refused", "connections", [](const std::string& line) { LOG(WARNING) << line; }),
      thread_([this] { Serve(); }) {}

ZapHandler::~ZapHandler() {
  stopping_.store(true);
  thread_.join();
}

int ZapHandler::denied() const { return denied_.load(); }

void ZapHandler::Serve() {
  try {
    while (!stopping_.load()) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, kPollInterval) > 0) Answer();
    }
  } catch (const zmq::error_t& error) {
    // ETERM: the context is shutting down, which ends the handler too.
    if (error.num() != ETERM) LOG(ERROR) << owner_ << ": CURVE authentication failed: " << error.what();
  }
  socket_.close();
}

// Reads one request and replies to it (a REP socket must answer each one).
void ZapHandler::Answer() {
  std::vector<zmq::message_t> request;
  do {
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return;
    request.push_back(std::move(frame));
  } while (request.back().more());
  const auto frame_text = [&](size_t index) {
    return index < request.size() ? request[index].to_string() : std::string();
  };
  const bool admitted = request.size() == kCurveRequestFrames && frame_text(0) == "1.0" &&
                        frame_text(5) == "CURVE" && frame_text(6) == allowed_key_;
  if (!admitted) {
    denied_.fetch_add(1);
    const std::string address = frame_text(3).empty() ? std::string("a local (ipc) peer") : frame_text(3);
    refusals_.Dropped(address, "a connection from " + address + ": it does not hold this job's key (" +
                                   kJobSecretVariable + ")");
  }
  const std::string reply[] = {
      "1.0", frame_text(1), admitted ? "200" : "400", admitted ? "OK" : "not this job's key", "", ""};
  for (size_t i = 0; i < std::size(reply); ++i) {
    socket_.send(zmq::buffer(reply[i]),
                 i + 1 < std::size(reply) ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

}  // namespace inferno
