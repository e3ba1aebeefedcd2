#include "distributed/collectives/gather.h"

#include <utility>

namespace inferno {
namespace {

constexpr CollectiveSpec kGatherSpec{CollectiveOp::kGather, /*runs_in_area=*/false};

}  // namespace

Result<std::vector<std::vector<std::byte>>> Gather(GroupState& group, int root,
                                                   std::span<const std::byte> data) {
  if (root < 0 || root >= group.size()) {
    return Error::UnknownRank("gather root", root, group.size());
  }
  CollectiveCall call(group, kGatherSpec, 0);
  return call.Run([&]() -> Result<std::vector<std::vector<std::byte>>> {
    std::vector<std::vector<std::byte>> blobs;
    if (call.rank() != root) {
      Status sent = call.Send(root, data);
      if (!sent) return std::move(sent).error();
      return blobs;
    }
    blobs.resize(call.size());
    for (int peer = 0; peer < call.size(); ++peer) {
      if (peer == root) {
        blobs[peer].assign(data.begin(), data.end());
        continue;
      }
      Result<Message> received = call.Recv(peer, /*check_length=*/false);
      if (!received) return std::move(received).error();
      const std::span<const std::byte> bytes = received->payload.bytes();
      blobs[peer].assign(bytes.begin(), bytes.end());
    }
    return blobs;
  });
}

}  // namespace inferno
