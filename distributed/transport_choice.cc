#include "distributed/transport_choice.h"

namespace inferno {

const char* TransportChoiceName(TransportChoice choice) {
  switch (choice) {
    case TransportChoice::kAuto:
      return "auto";
    case TransportChoice::kZmq:
      return "zmq";
    case TransportChoice::kShm:
      return "shm";
    case TransportChoice::kTcp:
      return "tcp";
  }
  return "unknown";
}

Result<TransportChoice> ParseTransportChoice(const std::string& what, const std::string& text) {
  for (TransportChoice choice :
       {TransportChoice::kAuto, TransportChoice::kZmq, TransportChoice::kShm, TransportChoice::kTcp}) {
    if (text == TransportChoiceName(choice)) return choice;
  }
  return Error::InvalidArgument(what + ": expected auto, zmq, shm or tcp, got '" + text + "'");
}

}  // namespace inferno
