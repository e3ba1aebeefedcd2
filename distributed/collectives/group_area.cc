#include "distributed/collectives/group_area.h"

#include <memory>
#include <string>
#include <utility>

#include "distributed/shm/segment.h"

namespace inferno {
namespace {

constexpr CollectiveSpec kSetUpAreaSpec{CollectiveOp::kSetUpArea, /*runs_in_area=*/false};

// Rank 0's part of the setup: creates the area, hands out its address,
// waits for every member to open it.
Result<std::unique_ptr<CollectiveArea>> CreateAndShare(CollectiveCall& call) {
  Result<std::unique_ptr<CollectiveArea>> created = CollectiveArea::Create(0, call.size());
  if (!created) return WithContext(std::move(created).error(), call.Describe());
  std::unique_ptr<CollectiveArea> area = std::move(*created);
  const std::string address = area->address().ToString();
  for (int peer = 1; peer < call.size(); ++peer) {
    if (Status sent = call.Send(peer, std::as_bytes(std::span(address))); !sent)
      return std::move(sent).error();
  }
  for (int peer = 1; peer < call.size(); ++peer) {
    if (Result<Message> opened = call.Recv(peer, /*check_length=*/true); !opened) {
      return std::move(opened).error();
    }
  }
  area->StopSharing();
  for (int peer = 1; peer < call.size(); ++peer) {
    if (Status sent = call.Send(peer, {}); !sent) return std::move(sent).error();
  }
  return area;
}

// Another member's part: opens the area rank 0 made and acknowledges.
Result<std::unique_ptr<CollectiveArea>> OpenShared(CollectiveCall& call) {
  Result<Message> received = call.Recv(0, /*check_length=*/true);
  if (!received) {
    const ErrorKind kind = received.error().kind;
    if (kind == ErrorKind::kCollectiveMismatch || kind == ErrorKind::kLengthMismatch) {
      // Answer anyway: the answer carries this rank's op, sequence number
      // and length, so rank 0, waiting for it, fails with the mismatch too
      // instead of timing out.
      (void)call.Send(0, {});
    }
    return std::move(received).error();
  }
  const std::span<const std::byte> bytes = received->payload.bytes();
  Result<SegmentAddress> address =
      SegmentAddress::Parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!address) return WithContext(std::move(address).error(), call.From(0));
  Result<std::unique_ptr<CollectiveArea>> opened = CollectiveArea::Open(*address, call.rank(), call.size());
  if (!opened) {
    // Rank 0 made the area for this call and keeps it open until every
    // member has acknowledged: when it is gone, rank 0 gave up on the call
    // (e.g. it lost another member), so this rank has lost it too.
    return Error{ErrorKind::kPeerLost,
                 call.From(0) + ": its collective area is gone (" + opened.error().ToString() + ")"};
  }
  if (Status sent = call.Send(0, {}); !sent) return std::move(sent).error();
  if (Result<Message> go = call.Recv(0, /*check_length=*/true); !go) return std::move(go).error();
  return opened;
}

// Gives the group its CollectiveArea in `call`, a kSetUpArea step with the
// sequence number of the collective that needs the area (so that a mismatch
// in that collective fails it in the area, not the setup, which would leave
// some members with an area and some without).
Status SetUpArea(CollectiveCall& call, GroupState& state) {
  Result<std::unique_ptr<CollectiveArea>> area = call.rank() == 0 ? CreateAndShare(call) : OpenShared(call);
  if (!area) return std::move(area).error();
  Transport* transport = state.transport.get();  // outlives the area: both are the group's
  if (Status watched =
          (*area)->WatchMembers(state.members, [transport] { return transport->CheckAbortNotices(); });
      !watched) {
    return WithContext(std::move(watched).error(), call.Describe());
  }
  state.area = std::move(*area);
  return {};
}

}  // namespace

Result<CollectiveArea*> AreaFor(CollectiveCall& call, GroupState& state) {
  if (!state.area) {
    if (!state.SharesMemory()) return nullptr;
    CollectiveCall setup(state, kSetUpAreaSpec, 0, call);
    if (Status ready = setup.Run([&] { return SetUpArea(setup, state); }); !ready) {
      return WithContext(std::move(ready).error(), call.Describe());
    }
    call.Announce();
  }
  call.EnterArea();
  return state.area.get();
}

}  // namespace inferno
