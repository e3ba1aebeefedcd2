#include "distributed/collectives/scatter.h"

#include <string>
#include <utility>

namespace inferno {
namespace {

constexpr CollectiveSpec kScatterSpec{CollectiveOp::kScatter, /*runs_in_area=*/false};

}  // namespace

Result<std::vector<std::byte>> Scatter(GroupState& group, int root,
                                       const std::vector<std::vector<std::byte>>& blobs) {
  if (root < 0 || root >= group.size()) {
    return Error::UnknownRank("scatter root", root, group.size());
  }
  CollectiveCall call(group, kScatterSpec, 0);
  return call.Run([&]() -> Result<std::vector<std::byte>> {
    if (call.rank() != root) {
      Result<Message> received = call.Recv(root, /*check_length=*/false);
      if (!received) return std::move(received).error();
      const std::span<const std::byte> bytes = received->payload.bytes();
      return std::vector<std::byte>(bytes.begin(), bytes.end());
    }
    if (blobs.size() != static_cast<size_t>(call.size())) {
      return Error::InvalidArgument(call.Describe() + ": root passed " + std::to_string(blobs.size()) +
                                    " blobs, expected " + std::to_string(call.size()));
    }
    for (int peer = 0; peer < call.size(); ++peer) {
      if (peer == root) continue;
      Status sent = call.Send(peer, blobs[peer]);
      if (!sent) return std::move(sent).error();
    }
    return blobs[root];
  });
}

}  // namespace inferno
