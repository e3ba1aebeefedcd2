// RoutedTransport: a Transport that sends each peer's messages over one of
// two transports of the same world: `local` for the peers marked local (a
// data path of their own: shared memory on this host, or the direct TCP
// data path to other hosts), `control` for the others (ZeroMQ, which also
// carries the whole job's control traffic: heartbeats, pings and abort
// notices between every pair of ranks, local or not; or a RoutedTransport
// over it, as the rendezvous nests them when a job uses both data paths).
//
// `control` must be connected to every rank; `local` to exactly the ranks
// marked local (and every such rank must mark this one local too: the
// rendezvous decides it from one table, so both sides agree). A peer's
// messages always take the same transport, so ordering per tag holds; this
// rank's messages to itself take `control`.
//
// Abort tells every peer over both transports (local peers read the notice
// from shared memory at once; remote ones, and waits on `control`, over
// ZeroMQ). Waits on `local` learn of a notice that only arrived over
// `control` through the local transport's own check (the rendezvous wires
// ZmqTransport::CheckAbortNotices into ShmTransportOptions::also_check).
//
// Thread-safety: as Transport; the routing is fixed at construction.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/transport.h"

namespace inferno {

class RoutedTransport : public Transport {
 public:
  // `local_peers[i]`: rank i is reached through `local` (entry of this rank
  // ignored). CHECK-fails on transports of different ranks or worlds, or a
  // table of the wrong size: the caller's programming error.
  RoutedTransport(std::shared_ptr<Transport> control, std::shared_ptr<Transport> local,
                  std::vector<bool> local_peers);
  ~RoutedTransport() override;

  // Whether messages to and from `peer` travel over the local transport.
  bool IsLocal(int peer) const;

  int rank() const override;
  int world_size() const override;
  std::chrono::milliseconds timeout() const override;
  using Transport::Send;
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
              Deadline deadline) override;
  Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) override;
  // True for this rank and for local peers that `local` shares memory with.
  bool SharesMemoryWith(int peer) const override;
  // Either transport's notice.
  Status CheckAbortNotices() override;
  // Both transports' (the control transport's liveness watch finds them).
  std::vector<int> LostRanks() const override;
  void Close() override;
  void Abort(const std::string& reason) override;

 private:
  Transport& Route(int peer) const;

  const std::shared_ptr<Transport> control_;
  const std::shared_ptr<Transport> local_;
  const std::vector<bool> local_peers_;
};

}  // namespace inferno
